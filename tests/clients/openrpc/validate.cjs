// @open-rpc/schema-utils-js on OpenRPC documents written by
// `airlock inspect --openrpc`: each is validated against the OpenRPC
// meta-schema and then parsed as a client reads it (references
// dereferenced, method content descriptors checked).
//
// usage: node validate.cjs DOCUMENT.json...
"use strict";
const fs = require("fs");
const { validateOpenRPCDocument, parseOpenRPCDocument } = require("@open-rpc/schema-utils-js");

async function main() {
  let failed = 0;
  for (const file of process.argv.slice(2)) {
    let problem = null;
    try {
      const document = JSON.parse(fs.readFileSync(file, "utf8"));
      const valid = validateOpenRPCDocument(document);
      if (valid !== true) {
        problem = valid.message;
      } else {
        await parseOpenRPCDocument(JSON.stringify(document));
        if (document.methods.length === 0) problem = "no methods";
      }
    } catch (e) {
      problem = e.message;
    }
    console.log(`openrpc document ${file}: ${problem === null ? "valid" : `INVALID: ${problem}`}`);
    if (problem !== null) failed += 1;
  }
  process.exit(failed === 0 ? 0 : 1);
}

main();
