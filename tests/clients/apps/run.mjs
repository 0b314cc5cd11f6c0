// The MCP Apps test: airlock serves the stock_chart component; a host page
// built with @modelcontextprotocol/ext-apps' AppBridge (host.js, bundled by
// rolldown) renders the tool's UI in Debian's chromium, driven headless by
// playwright-core. Checks what the view shows, clicks its button, and checks
// that the call went through airlock (the view's new numbers, the stock
// file, airlock's audit log). Saves a screenshot. Then the same page as
// `cargo xtask apps-host` serves it (apps-host.mjs, started as a user starts
// it) shows the tool against the same airlock. The page's servers are
// host-server.mjs's. Loopback only; the whole run is bounded by DEADLINE_MS.
//
//   node tests/clients/apps/run.mjs
//
// Environment: AIRLOCK_BIN (default target/debug/airlock), AIRLOCK_COMPONENT
// (target/components/stock_chart.wasm), CLIENTS_DIR (target/clients, where
// the pinned npm packages are), CHROMIUM (/usr/bin/chromium), OUT_DIR
// (target/mcp-apps: the screenshot, the bundle, airlock's log and audit).
// Prints one `ok`/`FAILED` line per check and `mcp apps: N passed, N failed`.

import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { bundleHost, startHost } from "./host-server.mjs";

const DEADLINE_MS = 180_000;
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../../..");
const env = (name, fallback) => process.env[name] || fallback;
const airlockBin = env("AIRLOCK_BIN", path.join(root, "target/debug/airlock"));
const component = env("AIRLOCK_COMPONENT", path.join(root, "target/components/stock_chart.wasm"));
const clientsDir = env("CLIENTS_DIR", path.join(root, "target/clients"));
const chromiumPath = env("CHROMIUM", "/usr/bin/chromium");
const outDir = env("OUT_DIR", path.join(root, "target/mcp-apps"));

// The stock the test starts from, and what one click adds (levels.html).
const SEEDED = { "SKU-1001": 42, "SKU-1002": 7, "SKU-1003": 3, "SKU-2001": 120 };
const PRICES = JSON.parse(fs.readFileSync(path.join(root, "components/catalog/data/prices.json"), "utf8"));
const CLICKED = "SKU-1003";
const UNITS = 10;

const results = [];
function check(name, ok, detail = "") {
  results.push({ name, ok });
  console.log(`${ok ? "ok" : "FAILED"}: ${name}${detail ? ` — ${detail}` : ""}`);
  return ok;
}

const cleanups = [];
async function finish(code) {
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup();
    } catch {
      // Tearing down what did start; the verdict is already printed.
    }
  }
  const failed = results.filter((r) => !r.ok).length + (code ? 1 : 0);
  console.log(`mcp apps: ${results.length - results.filter((r) => !r.ok).length} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}
const deadline = setTimeout(() => {
  console.log(`FAILED: the MCP Apps test did not finish within ${DEADLINE_MS / 1000} s`);
  finish(1);
}, DEADLINE_MS);
deadline.unref();

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

// airlock serve with a policy that grants the stock folder and the
// destructive add_stock, and writes an audit log.
async function startAirlock() {
  const data = path.join(outDir, "data");
  fs.rmSync(data, { recursive: true, force: true });
  fs.mkdirSync(data, { recursive: true });
  fs.writeFileSync(path.join(data, "stock.json"), JSON.stringify(SEEDED, null, 2));
  const audit = path.join(outDir, "audit.jsonl");
  fs.rmSync(audit, { force: true });
  const policy = path.join(outDir, "airlock.toml");
  fs.writeFileSync(
    policy,
    `audit = ${JSON.stringify(audit)}\n\n` +
      `[components.stock_chart]\n` +
      `folders = [{ host = ${JSON.stringify(data)}, guest = "/data", mode = "read-write" }]\n\n` +
      `[components.stock_chart.tools.add_stock]\n` +
      `destructive = "allow"\n`,
  );
  const port = await freePort();
  const log = fs.createWriteStream(path.join(outDir, "airlock.log"));
  const child = spawn(
    airlockBin,
    ["serve", "--load-wait", "600", "--listen", `127.0.0.1:${port}`, "--policy", policy, component],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  cleanups.push(() => child.kill());
  await new Promise((resolve, reject) => {
    let seen = "";
    child.stderr.on("data", (chunk) => {
      log.write(chunk);
      seen += chunk;
      if (seen.includes("listening on")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`airlock serve exited (${code}) before listening; see ${outDir}/airlock.log:\n${seen}`)));
  });
  return { port, data, audit };
}

async function main() {
  fs.mkdirSync(outDir, { recursive: true });
  const started = Date.now();
  const { file: bundle, require } = await bundleHost(clientsDir, outDir);
  const airlock = await startAirlock();
  const upstream = airlock.port;

  // The origin check stays as it is: a page of another site is refused.
  const foreign = await fetch(`http://127.0.0.1:${upstream}/mcp`, {
    method: "POST",
    headers: { origin: "http://attacker.example", "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });
  check("airlock refuses a page from another site (Origin http://attacker.example)", foreign.status === 403, `HTTP ${foreign.status}`);

  const host = await startHost({ bundle, upstream });
  cleanups.push(() => host.close());
  const hostPort = host.hostPort;

  const { chromium } = require("playwright-core");
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-proxy-server", "--disable-gpu"],
    timeout: 60_000,
  });
  cleanups.push(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 960, height: 720 } });
  const consoleLines = [];
  page.on("console", (m) => consoleLines.push(`[${m.type()}] ${m.text()}`));
  page.on("pageerror", (e) => consoleLines.push(`[pageerror] ${e.message}`));
  await page.goto(host.url("stock_levels"));
  await page.waitForSelector("body[data-state=ready], body[data-state=failed]", { timeout: 60_000 });
  const events = await page.evaluate(() => window.hostEvents);
  const state = await page.getAttribute("body", "data-state");
  if (!check("the host connected, listed tools, read the ui:// resource and called stock_levels", state === "ready", state === "ready" ? "" : JSON.stringify(events))) {
    console.log(consoleLines.join("\n"));
    return;
  }
  const read = events.find((e) => e.kind === "resources/read");
  check("the tool's _meta.ui.resourceUri is the component's ui://stock-chart/levels.html", read?.uri === "ui://stock-chart/levels.html", JSON.stringify(read));

  const view = page.frameLocator("#app").frameLocator("iframe");
  const rows = view.locator("#levels tbody tr");
  await rows.first().waitFor({ timeout: 30_000 });
  const shown = await rows.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].slice(0, 3).map((td) => td.textContent)));
  const expected = Object.keys(PRICES).map((sku) => [sku, PRICES[sku].toFixed(2), String(SEEDED[sku] ?? 0)]);
  check("the view shows the stock levels the tool returned", JSON.stringify(shown) === JSON.stringify(expected), JSON.stringify(shown));
  const bars = await view.locator("#chart rect.bar").count();
  check("the view draws one bar per article", bars === expected.length, `${bars} bars`);
  await page.screenshot({ path: path.join(outDir, "stock-chart-before.png"), fullPage: true });

  // The view is boxed in: the CSP its resource declared (none: no requests)
  // and an opaque origin that cannot reach the host page.
  const inner = page.frames().find((f) => f.url() === "about:srcdoc");
  const boxed = await inner.evaluate(async (target) => {
    const request = await fetch(target, { mode: "no-cors" }).then(() => "sent", () => "blocked");
    let parent;
    try {
      parent = window.parent.parent.document ? "reachable" : "blocked";
    } catch {
      parent = "blocked";
    }
    return { request, parent };
  }, `http://127.0.0.1:${hostPort}/host.html`);
  check("the view can neither make requests (CSP connect-src 'none') nor reach the host page", boxed.request === "blocked" && boxed.parent === "blocked", JSON.stringify(boxed));

  await view.locator(`button.restock[data-sku="${CLICKED}"]`).click();
  const after = SEEDED[CLICKED] + UNITS;
  const status = view.locator("#status");
  await status.filter({ hasText: `now ${after}` }).or(view.locator("#status.error")).waitFor({ timeout: 30_000 });
  const statusText = await status.textContent();
  check(`clicking "Restock +${UNITS}" for ${CLICKED} shows the tool's result`, statusText === `Restocked ${CLICKED}: +${UNITS}, now ${after}.`, statusText);
  const cell = await view.locator(`#levels tr[data-sku="${CLICKED}"] td.stock`).textContent();
  check("the table shows the new level", cell === String(after), cell);
  // For a person to look at: the view after the click, with the host's log.
  const shot = path.join(outDir, "stock-chart.png");
  await page.screenshot({ path: shot, fullPage: true });
  check("screenshot saved", fs.statSync(shot).size > 0, shot);

  await view.locator("#refresh").click();
  await status.filter({ hasText: /^Refreshed at / }).or(view.locator("#status.error")).waitFor({ timeout: 30_000 });
  const refreshed = await view.locator(`#levels tr[data-sku="${CLICKED}"] td.stock`).textContent();
  check('clicking "Refresh" reads the levels again through the host', refreshed === String(after), `${await status.textContent()} ${CLICKED}: ${refreshed}`);

  const hostSaw = (await page.evaluate(() => window.hostEvents)).filter((e) => e.kind === "app tools/call");
  check(
    "the view's tools/call went through the host's AppBridge",
    JSON.stringify(hostSaw.map((e) => [e.name, e.arguments])) === JSON.stringify([["add_stock", { sku: CLICKED, units: UNITS }], ["stock_levels", {}]]),
    JSON.stringify(hostSaw),
  );
  const stock = JSON.parse(fs.readFileSync(path.join(airlock.data, "stock.json"), "utf8"));
  check("airlock's add_stock wrote the stock file", stock[CLICKED] === after, JSON.stringify(stock));
  const audit = fs.existsSync(airlock.audit)
    ? fs.readFileSync(airlock.audit, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l))
    : [];
  const calls = audit.filter((e) => e.tool === "add_stock");
  check(
    "airlock's audit log has the call, ok, by the page's session",
    calls.length === 1 && calls[0].outcome === "ok" && calls[0].caller_kind === "session",
    JSON.stringify(calls.map(({ tool, outcome, caller, caller_kind }) => ({ tool, outcome, caller, caller_kind }))),
  );
  const uiRead = audit.find((e) => e.tool === "resource:ui://stock-chart/levels.html");
  check(
    "the audit log has the host's read of the view, run read-only",
    uiRead?.outcome === "ok" && uiRead.caller_kind === "session" && JSON.stringify(uiRead.grant?.folders) === JSON.stringify(["/data (read-only)"]),
    JSON.stringify(uiRead && { outcome: uiRead.outcome, caller: uiRead.caller, folders: uiRead.grant?.folders }),
  );
  const reads = audit.filter((e) => e.tool === "stock_levels" && e.outcome === "ok").length;
  check("the audit log has both stock_levels calls (the host's, then the view's Refresh)", reads === 2, `${reads} entries`);

  await appsHost(browser, upstream);

  console.log(`mcp apps: took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  if (results.some((r) => !r.ok)) console.log(consoleLines.join("\n"));
}

// `cargo xtask apps-host` as a user runs it against a running airlock: the
// URL it prints opens the page, which shows the tool's UI with the levels.
async function appsHost(browser, upstream) {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [path.join(here, "apps-host.mjs"), "--airlock", `http://127.0.0.1:${upstream}`, "--port", String(port)],
    { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, CLIENTS_DIR: clientsDir, OUT_DIR: path.join(outDir, "apps-host") } },
  );
  cleanups.push(() => child.kill());
  const printed = await new Promise((resolve) => {
    let seen = "";
    child.stdout.on("data", (chunk) => {
      seen += chunk;
      if (/^  open \S+$/m.test(seen)) resolve(seen);
    });
    child.once("exit", () => resolve(seen));
  });
  const url = printed.match(/^  open (\S+)$/m)?.[1];
  if (!check("cargo xtask apps-host prints the page's URL", url?.startsWith(`http://127.0.0.1:${port}/host.html?tool=stock_levels&`), printed.trim())) return;
  const page = await browser.newPage({ viewport: { width: 960, height: 720 } });
  await page.goto(url);
  await page.waitForSelector("body[data-state=ready], body[data-state=failed]", { timeout: 60_000 });
  const state = await page.getAttribute("body", "data-state");
  const levels = page.frameLocator("#app").frameLocator("iframe").locator("#levels tbody tr");
  if (state === "ready") await levels.first().waitFor({ timeout: 30_000 }).catch(() => {});
  const rows = await levels.count();
  check("the apps-host page shows stock_levels' UI from the running airlock", state === "ready" && rows === Object.keys(PRICES).length, `${state}, ${rows} rows`);
  await page.screenshot({ path: path.join(outDir, "apps-host.png"), fullPage: true });
  await page.close();
}

main().then(
  () => finish(0),
  (err) => {
    console.log(`FAILED: ${err.stack || err}`);
    finish(1);
  },
);
