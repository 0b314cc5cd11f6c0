// The small MCP Apps host of tests/clients/apps, served on loopback: the
// host page (host.html with host.js, ext-apps' AppBridge and the MCP
// client, bundled for the browser by rolldown) on one port, forwarding /mcp
// to airlock, and the sandbox proxy (sandbox.html) on another port, so the
// view runs on another origin than the page (the spec's double iframe).
// Used by run.mjs (the test, in headless chromium) and apps-host.mjs
// (`cargo xtask apps-host`: the same page for a person's browser).

import { createRequire } from "node:module";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

// One loopback server: `files` by name, with `headers(url)` added; with
// `upstream` (airlock's port), /mcp is forwarded there unchanged (the
// browser's Origin too), so the page speaks to airlock from its own origin
// without CORS. `port` 0 takes a free one. Resolves to { port, close }.
export async function serveFiles(files, headers, upstream, port = 0) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://localhost");
    if (upstream && url.pathname === "/mcp") {
      const forwarded = http.request(
        { host: "127.0.0.1", port: upstream, method: req.method, path: req.url, headers: { ...req.headers, host: `127.0.0.1:${upstream}` } },
        (answer) => {
          res.writeHead(answer.statusCode, answer.headers);
          answer.pipe(res);
        },
      );
      forwarded.on("error", (err) => {
        res.writeHead(502, { "content-type": "text/plain; charset=utf-8" });
        res.end(`airlock on 127.0.0.1:${upstream} did not answer (${err.message}): is it running?`);
      });
      req.pipe(forwarded);
      return;
    }
    const file = files[url.pathname.slice(1)];
    if (!file) {
      res.writeHead(404);
      res.end();
      return;
    }
    const type = file.endsWith(".html") ? "text/html; charset=utf-8" : "text/javascript; charset=utf-8";
    res.writeHead(200, { "content-type": type, "cache-control": "no-store", ...headers(url) });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  return {
    port: server.address().port,
    // A browser keeps its connections open: end them, or close waits.
    close: () =>
      new Promise((resolve) => {
        server.close(resolve);
        server.closeAllConnections();
      }),
  };
}

// The Content-Security-Policy of the view (spec: the restrictive default,
// widened only by the domains the resource declares in _meta.ui.csp).
export function viewCsp(declared) {
  const csp = declared ? JSON.parse(declared) : {};
  const list = (key) => (csp[key] ?? []).join(" ");
  const resources = list("resourceDomains");
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline' ${resources}`,
    `style-src 'self' 'unsafe-inline' ${resources}`,
    `img-src 'self' data: ${resources}`,
    `font-src 'self' ${resources}`,
    `media-src 'self' data: ${resources}`,
    `connect-src ${list("connectDomains") || "'none'"}`,
    `frame-src ${list("frameDomains") || "'none'"}`,
    `base-uri ${list("baseUriDomains") || "'self'"}`,
    "object-src 'none'",
  ].map((d) => d.trim()).join("; ");
}

// host.js bundled for the browser into outDir, from inside clientsDir (the
// pinned packages, target/clients). Resolves to { file, require }.
export async function bundleHost(clientsDir, outDir) {
  const require = createRequire(path.join(clientsDir, "package.json"));
  const { rolldown } = await import(pathToFileURL(require.resolve("rolldown")));
  const work = path.join(clientsDir, "apps");
  fs.mkdirSync(work, { recursive: true });
  fs.copyFileSync(path.join(here, "host.js"), path.join(work, "host.js"));
  const bundle = await rolldown({ input: path.join(work, "host.js"), platform: "browser", logLevel: "warn" });
  const file = path.join(outDir, "host.bundle.js");
  fs.mkdirSync(outDir, { recursive: true });
  await bundle.write({ file, format: "esm", sourcemap: false });
  await bundle.close();
  return { file, require };
}

// The host page and its sandbox proxy, for airlock on 127.0.0.1:`upstream`.
// `hostPort` 0 takes a free port (the sandbox's is always free: the next
// one up when the page's is given). Resolves to { url(tool), hostPort,
// sandboxPort, close }.
export async function startHost({ bundle, upstream, hostPort = 0 }) {
  const sandbox = await serveFiles(
    { "sandbox.html": path.join(here, "sandbox.html"), "sandbox.js": path.join(here, "sandbox.js") },
    (url) => (url.pathname === "/sandbox.html" ? { "content-security-policy": viewCsp(url.searchParams.get("csp")) } : {}),
    undefined,
    hostPort ? hostPort + 1 : 0,
  );
  const host = await serveFiles({ "host.html": path.join(here, "host.html"), "host.bundle.js": bundle }, () => ({}), upstream, hostPort);
  const sandboxUrl = `http://127.0.0.1:${sandbox.port}/sandbox.html`;
  return {
    hostPort: host.port,
    sandboxPort: sandbox.port,
    url: (tool) => `http://127.0.0.1:${host.port}/host.html?tool=${encodeURIComponent(tool)}&sandbox=${encodeURIComponent(sandboxUrl)}`,
    close: async () => {
      await host.close();
      await sandbox.close();
    },
  };
}
