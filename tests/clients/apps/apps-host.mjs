// `cargo xtask apps-host`: the MCP Apps host page of the test (host.html:
// ext-apps' own AppBridge and the MCP client over Streamable HTTP), served
// on loopback for a person's browser, against an airlock that is already
// running (`cargo xtask serve`). Prints the page's URL, then serves until
// Ctrl-C. The page lists the tools, reads the tool's ui:// resource, calls
// the tool and shows its UI; the UI's own calls (the stock chart's
// Restock buttons) go through the page to airlock like any call.
//
//   node tests/clients/apps/apps-host.mjs [--airlock http://127.0.0.1:8414]
//        [--port 8420] [--tool stock_levels]
//
// Environment: CLIENTS_DIR (target/clients, the pinned npm packages),
// OUT_DIR (target/apps-host, where the page's bundle is written).

import path from "node:path";
import { fileURLToPath } from "node:url";

import { bundleHost, startHost } from "./host-server.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../../..");
const option = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : process.argv[at + 1];
};
const airlock = new URL(option("--airlock", "http://127.0.0.1:8414"));
const port = Number(option("--port", "8420"));
const tool = option("--tool", "stock_levels");
const clientsDir = process.env.CLIENTS_DIR || path.join(root, "target/clients");
const outDir = process.env.OUT_DIR || path.join(root, "target/apps-host");

if (airlock.protocol !== "http:" || !["127.0.0.1", "localhost"].includes(airlock.hostname)) {
  console.error(`--airlock ${airlock.href}: the page forwards /mcp to an airlock on this machine over plain HTTP (http://127.0.0.1:PORT)`);
  process.exit(2);
}
const upstream = Number(airlock.port || 80);

const { file: bundle } = await bundleHost(clientsDir, outDir);
const host = await startHost({ bundle, upstream, hostPort: port }).catch((err) => {
  console.error(`cannot listen on 127.0.0.1:${port} and ${port + 1} (${err.message}): pass --port with a free one`);
  process.exit(1);
});

// Whether airlock is there now (it may be started later: the page connects
// when it is opened).
const ready = await fetch(new URL("/readyz", airlock)).then(
  (r) => r.status,
  () => null,
);
console.log(`MCP Apps host (ext-apps AppBridge) for airlock at ${airlock.origin}/mcp`);
if (ready !== 200) {
  console.log(`  airlock does not answer there yet${ready ? ` (/readyz: HTTP ${ready})` : ""}: start it with \`cargo xtask serve\``);
}
console.log(`  open ${host.url(tool)}`);
console.log(`  (another tool with a UI: ?tool=NAME in that URL; Ctrl-C stops the host)`);

const stop = async () => {
  await host.close();
  process.exit(0);
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
