// @open-rpc/test-coverage against a running `airlock serve`: every method
// of the document that has an example pairing is called with it (by
// position: the document says `paramStructure: either`), and what it
// answers is checked against the method's result schema.
//
// usage: node coverage.cjs http://127.0.0.1:PORT SKIP_FILE
//
// The document is fetched from GET /rpc/openrpc.json and must equal what
// rpc.discover answers. It names no server (airlock does not know the
// address it is reached at), so its servers[0] is set to the /rpc it came
// from: test-coverage calls servers[0].url. Methods without an example
// (a required parameter with no declared value) are skipped, and so are
// those listed in SKIP_FILE (`name: reason` a line); both are counted.
"use strict";
const fs = require("fs");
const coverage = require("@open-rpc/test-coverage").default;
const { parseOpenRPCDocument } = require("@open-rpc/schema-utils-js");

async function main() {
  const [base, skipFile] = process.argv.slice(2);
  const fetched = await (await fetch(`${base}/rpc/openrpc.json`)).json();
  const discovered = await (
    await fetch(`${base}/rpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "rpc.discover" }),
    })
  ).json();
  if (JSON.stringify(discovered.result) !== JSON.stringify(fetched)) {
    throw new Error("rpc.discover and GET /rpc/openrpc.json answer different documents");
  }
  const listed = new Map(
    (skipFile ? fs.readFileSync(skipFile, "utf8") : "")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"))
      .map((l) => [l.split(":")[0].trim(), l.slice(l.indexOf(":") + 1).trim()]),
  );
  const names = fetched.methods.map((m) => m.name);
  for (const name of listed.keys()) {
    if (!names.includes(name)) throw new Error(`${skipFile} lists ${name}, which is not served`);
  }
  const noExample = fetched.methods.filter((m) => !m.examples).map((m) => m.name);
  const document = await parseOpenRPCDocument(
    JSON.stringify({ ...fetched, servers: [{ name: "airlock", url: `${base}/rpc` }] }),
  );
  const calls = await coverage({
    openrpcDocument: document,
    transport: "http",
    // "console" ends the process itself; this one lets the summary follow.
    reporters: ["console-streaming"],
    skip: [...noExample, ...listed.keys()],
    only: [],
  });
  const failed = calls.filter((c) => !c.valid);
  for (const c of failed) {
    console.log(`FAILED ${c.methodName}: ${c.reason || JSON.stringify(c.error || c.requestError)}`);
  }
  console.log(
    `openrpc test-coverage: ${calls.length - failed.length} passed, ${failed.length} failed, ` +
      `${listed.size} listed as expected failures, ${noExample.length} without an example ` +
      `(of ${names.length} methods)`,
  );
  process.exit(failed.length === 0 && calls.length > 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
