// @open-rpc/test-coverage against a running `airlock serve`: every method
// of the document that has an example pairing is called with it (by
// position: the document says `paramStructure: either`), and what it
// answers is checked against the method's result schema.
//
// usage: node coverage.cjs http://127.0.0.1:PORT SKIP_FILE FAKE_FILE STAND_IN
//
// The document is fetched from GET /rpc/openrpc.json and must equal what
// rpc.discover answers. It names no server (airlock does not know the
// address it is reached at), so its servers[0] is set to the /rpc it came
// from: test-coverage calls servers[0].url. Methods without an example
// (a required parameter with no declared value) are skipped, unless
// FAKE_FILE lists them: those answer whatever arguments their schema
// allows, and are called with test-coverage's other rule, five times with
// arguments json-schema-faker makes from the params' schemas. Methods
// listed in SKIP_FILE are not called. Each kind is counted, and a method
// that is none of these (no example, not in FAKE_FILE, not in SKIP_FILE)
// fails: none is left out silently. The test has no network: the examples
// of open-world methods (x-openWorldHint) have their URLs pointed at
// STAND_IN (http://127.0.0.1:PORT, a loopback server the policy grants
// them), path and query kept.
"use strict";
const fs = require("fs");
const coverage = require("@open-rpc/test-coverage").default;
const JsonSchemaFakerRule =
  require("@open-rpc/test-coverage/build/rules/json-schema-faker-rule").default;
const { parseOpenRPCDocument } = require("@open-rpc/schema-utils-js");

async function main() {
  const [base, skipFile, fakeFile, standIn] = process.argv.slice(2);
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
  const names = fetched.methods.map((m) => m.name);
  const read = (file) => {
    const listed = fs
      .readFileSync(file, "utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"))
      .map((l) => l.split(":")[0].trim());
    for (const name of listed) {
      if (!names.includes(name)) throw new Error(`${file} lists ${name}, which is not served`);
    }
    return listed;
  };
  const listed = read(skipFile);
  const fake = read(fakeFile);
  const noExample = fetched.methods.filter((m) => !m.examples).map((m) => m.name);
  for (const name of fake) {
    if (!noExample.includes(name)) throw new Error(`${fakeFile}: ${name} has an example`);
  }
  // Neither called nor listed: a failure each.
  const uncalled = noExample.filter((n) => !fake.includes(n) && !listed.includes(n));
  // The open-world examples' URLs, to the stand-in.
  const toStandIn = (value) => {
    if (typeof value !== "string" || !/^https?:\/\//.test(value)) return value;
    const url = new URL(value);
    return `${standIn}${url.pathname}${url.search}`;
  };
  const methods = fetched.methods.map((m) =>
    m["x-openWorldHint"] && m.examples
      ? {
          ...m,
          examples: m.examples.map((ex) => ({
            ...ex,
            params: ex.params.map((p) => ({ ...p, value: toStandIn(p.value) })),
          })),
        }
      : m,
  );
  const document = await parseOpenRPCDocument(
    JSON.stringify({ ...fetched, methods, servers: [{ name: "airlock", url: `${base}/rpc` }] }),
  );
  const run = (options) =>
    coverage({
      openrpcDocument: document,
      transport: "http",
      // "console" ends the process itself; this one lets the summary follow.
      reporters: ["console-streaming"],
      skip: listed,
      only: [],
      ...options,
    });
  // The examples (test-coverage's ExamplesRule and, for no method here,
  // its JsonSchemaFakerRule: every method left has an example).
  const calls = await run({ skip: [...noExample, ...listed] });
  // Made-up arguments for the methods that take any.
  const faked = fake.filter((name) => !listed.includes(name));
  if (faked.length > 0) {
    calls.push(...(await run({ only: faked, rules: [new JsonSchemaFakerRule({ numCalls: 5 })] })));
  }
  const failed = calls.filter((c) => !c.valid);
  for (const c of failed) {
    console.log(`FAILED ${c.methodName}: ${c.reason || JSON.stringify(c.error || c.requestError)}`);
  }
  for (const name of uncalled) {
    console.log(
      `FAILED ${name}: not called: a required parameter has no declared value (give it an ` +
        `example), and neither ${fakeFile} nor ${skipFile} lists it`,
    );
  }
  const failures = failed.length + uncalled.length;
  console.log(
    `openrpc test-coverage: ${calls.length - failed.length} passed, ${failures} failed, ` +
      `${listed.length} listed as expected failures; ${names.length} methods: ` +
      `${names.length - noExample.length} with an example, ${faked.length} with made-up ` +
      `arguments, ${uncalled.length} neither called nor listed`,
  );
  process.exit(failures === 0 && calls.length > 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
