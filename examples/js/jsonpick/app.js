// `jsonpick`: an open-world example airlock tool written in JavaScript.
//
// Fetches a JSON document with the web's `fetch` and returns the value at a
// dotted path. airlock lets it reach only the hosts the operator lists in
// the policy's `network`. `fetch` needs the StarlingMonkey engine (jco's
// default backend) with its `http` feature: `cargo xtask build-examples`
// builds a tool that calls `fetch` that way (see docs/authoring.md) into
// `target/examples/jsonpick.wasm`.

import { tool, server, t, ToolError } from "../../../sdk/js/airlock-tool.js";

const jsonPick = tool({
  name: "json_pick",
  title: "Pick from JSON",
  description:
    "Fetches a JSON document and returns the value at a dotted path (e.g. release.version, " +
    "items.0.name; empty for the whole document). The operator must list the host in the " +
    "policy's network.",
  hints: { readOnly: true, idempotent: true, openWorld: true },
  params: {
    url: t.string({
      description: "The http or https URL of the JSON document",
      examples: ["https://api.github.com/repos/bytecodealliance/wasmtime/releases/latest"],
    }),
    path: t.string({ description: "Dotted path of the value to return", default: "" }),
  },
  output: t.object({ status: t.integer(), value: t.any() }),
  async handler({ url, path }) {
    const response = await fetch(url, { headers: { accept: "application/json" } });
    if (!response.ok) throw new ToolError(`${url} answered with status ${response.status}`);
    let value = await response.json();
    for (const key of path.split(".").filter((k) => k !== "")) {
      if (value === null || typeof value !== "object" || !(key in value)) {
        throw new ToolError(`${path}: no ${JSON.stringify(key)} in the document`);
      }
      value = value[key];
    }
    return { status: response.status, value };
  },
});

// The exports of the world `server` (no resources, prompts or completions here).
export const { tools, resources, prompts, completions, skills } = server(jsonPick);
