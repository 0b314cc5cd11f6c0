// airlock-tool.js — write airlock tools in JavaScript.
//
// Declare each tool with its parameters, hints and handler — and the
// component's resources, prompts and completions — and export them as the
// interfaces of the `airlock:tool@0.1.2` world `server`:
//
//     import { tool, toolbox, t } from "./airlock-tool.js";
//
//     const add = tool({
//       name: "add",
//       description: "Adds two integers.",
//       hints: { readOnly: true, idempotent: true },
//       params: { a: t.integer(), b: t.integer({ default: 1, description: "The second addend" }) },
//       output: t.integer(),
//       handler: ({ a, b }) => a + b,
//     });
//
//     const prices = resource({
//       uri: "file:///prices.csv", mimeType: "text/csv",
//       description: "Today's price list.", read: () => "sku,price\n",
//     });
//
//     export const { tools, resources, prompts, completions } = server(add, prices);
//
// (`export const tools = toolbox(add)` still builds in the world `toolbox`.)
// Build with jco (see docs/authoring.md):
//     jco componentize app.js --wit wit --world-name server \
//       --backend qjs --backend-qjs-disable-async -o app.wasm
// A tool that calls the web's `fetch` (handlers may then be `async`) is
// built with StarlingMonkey, jco's default backend, with its `http`
// feature on:
//     jco componentize app.js --wit wit --world-name server -d fetch-event --bundle -o app.wasm
//
// The runtime checks, coerces and completes the arguments against the
// schema before the handler runs, so the handler receives exactly the
// declared types. A handler's `ToolError` (or any thrown Error) reaches the
// client as the tool error; `InvalidArguments` as invalid arguments.

import * as hostModule from "airlock:tool/host@0.1.2";
import { offers } from "./airlock-server.js";
import { InvalidArguments, NAME, ToolError, errorText, icons } from "./airlock-types.js";

// QuickJS exposes an interface as the module's default export,
// StarlingMonkey as named exports.
const host = hostModule.default ?? hostModule;

// StarlingMonkey (componentize-js) runs its event loop until a promise an
// export returns settles, so there a handler may be `async` (and `await
// fetch(…)`); the synchronous QuickJS build cannot wait for one.
const AWAITS = hostModule.default === undefined;

function withMeta(schema, opts) {
  const out = { ...schema };
  if (opts) {
    for (const [key, value] of Object.entries(opts)) {
      if (key === "optional") continue;
      if (value !== undefined) out[key] = value;
    }
  }
  // `optional` is ours, not JSON Schema: kept out of the published schema
  if (opts && opts.optional) Object.defineProperty(out, "optional", { value: true, enumerable: false });
  return out;
}

/**
 * Schema builders. Each takes options merged into the JSON Schema
 * (`description`, `default`, `examples`, `minimum`, `maxLength`, …) plus
 * `optional: true` (not required, absent when omitted). A parameter with a
 * `default` is optional too; the runtime fills the default in before the
 * call. `examples: [value]` only shows a value (airlock's OpenRPC document
 * calls the tool with the first one when the parameter has no default).
 */
export const t = {
  string: (opts) => withMeta({ type: "string" }, opts),
  integer: (opts) => withMeta({ type: "integer" }, opts),
  number: (opts) => withMeta({ type: "number" }, opts),
  boolean: (opts) => withMeta({ type: "boolean" }, opts),
  dateTime: (opts) => withMeta({ type: "string", format: "date-time" }, opts),
  array: (items, opts) => withMeta({ type: "array", items }, opts),
  enum: (values, opts) => {
    const type = values.every((v) => typeof v === "string")
      ? "string"
      : values.every((v) => Number.isInteger(v))
        ? "integer"
        : undefined;
    return withMeta(type ? { type, enum: [...values] } : { enum: [...values] }, opts);
  },
  object: (properties, opts) => withMeta(objectSchema(properties), opts),
  any: (opts) => withMeta({}, opts),
};

function objectSchema(properties) {
  const required = [];
  for (const [name, schema] of Object.entries(properties)) {
    if (!schema.optional && !("default" in schema)) required.push(name);
  }
  return { type: "object", properties: { ...properties }, required };
}

function isObjectSchema(schema) {
  return schema && schema.type === "object";
}

/**
 * Declares one tool.
 *
 * - `name` (1–64 of `A-Z a-z 0-9 _ - .`), `description` (required: a model
 *   chooses tools by it), `title` (optional)
 * - `hints`: `{ readOnly, destructive, idempotent, openWorld }`, each false
 *   when absent; the runtime enforces them (see docs/authoring.md)
 * - `params`: name → schema (from `t`), in positional order
 * - `output`: the result's schema; an object schema is the output schema,
 *   anything else is wrapped as `{"result": …}` (its schema marked
 *   `"x-airlock-wrapped": true`). Without it the result is
 *   sent as structured JSON with no output schema.
 * - `icons`: `[{ src, mimeType, sizes }]`; `taskSupport`: "forbidden" |
 *   "optional" | "required"
 * - `handler(args)`: receives the checked arguments as one object and
 *   returns the result (a string result is also sent as a text block).
 */
export function tool(spec) {
  const { name, description, handler } = spec;
  if (typeof name !== "string" || !NAME.test(name)) {
    throw new Error(`tool name ${JSON.stringify(name)} must be 1 to 64 characters of A-Z a-z 0-9 _ - .`);
  }
  if (typeof description !== "string" || description.trim() === "") {
    throw new Error(`tool ${name} has no description`);
  }
  if (typeof handler !== "function") {
    throw new Error(`tool ${name} has no handler function`);
  }
  const taskSupport = spec.taskSupport ?? "forbidden";
  if (!["forbidden", "optional", "required"].includes(taskSupport)) {
    throw new Error(`tool ${name}: taskSupport must be forbidden, optional or required`);
  }
  const hints = spec.hints ?? {};
  for (const key of Object.keys(hints)) {
    if (!["readOnly", "destructive", "idempotent", "openWorld"].includes(key)) {
      throw new Error(`tool ${name}: unknown hint ${key} (readOnly, destructive, idempotent, openWorld)`);
    }
  }
  const inputSchema = objectSchema(spec.params ?? {});
  let outputSchema = null;
  let wrap = false;
  if (spec.output) {
    if (isObjectSchema(spec.output) && !spec.output.optional) {
      outputSchema = spec.output;
    } else {
      wrap = true;
      outputSchema = {
        type: "object",
        properties: { result: spec.output },
        required: spec.output.optional ? [] : ["result"],
        // Tells the runtime (and /rpc) that the tool's own value is `result`.
        "x-airlock-wrapped": true,
      };
    }
  }
  return {
    info: {
      name,
      title: spec.title ?? null,
      description,
      inputSchema: JSON.stringify(inputSchema),
      outputSchema: outputSchema ? JSON.stringify(outputSchema) : null,
      hints: {
        readOnly: !!hints.readOnly,
        destructive: !!hints.destructive,
        idempotent: !!hints.idempotent,
        openWorld: !!hints.openWorld,
      },
      icons: icons(spec.icons),
      taskSupport,
    },
    handler,
    wrap,
    meta: toolMeta(name, spec.meta, spec.ui),
  };
}

// `ui: "ui://…"` is the tool's MCP App (`_meta.ui.resourceUri`), merged
// into any other `meta`.
function toolMeta(name, meta, ui) {
  if (ui === undefined && meta === undefined) return null;
  if (ui !== undefined && !String(ui).startsWith("ui://")) {
    throw new Error(`tool ${name}: ui names its MCP App resource, a ui:// URI, not ${JSON.stringify(ui)}`);
  }
  const out = JSON.parse(JSON.stringify(meta ?? {}));
  if (ui !== undefined) out.ui = { ...(out.ui ?? {}), resourceUri: ui };
  return out;
}

/** A result with full control over the content blocks and structured JSON. */
export class Output {
  constructor() {
    this.content = [];
    this.structured = null;
  }
  text(text) {
    this.content.push({ tag: "text", val: String(text) });
    return this;
  }
  image(data, mimeType) {
    this.content.push({ tag: "image", val: { data: new Uint8Array(data), mimeType } });
    return this;
  }
  audio(data, mimeType) {
    this.content.push({ tag: "audio", val: { data: new Uint8Array(data), mimeType } });
    return this;
  }
  withStructured(value) {
    this.structured = value;
    return this;
  }
}

function toOutput(decl, result) {
  if (result && typeof result.then === "function") {
    throw new ToolError(
      `tool ${decl.info.name}: handlers must be synchronous on QuickJS (airlock runs without ` +
        `component-model async); build with StarlingMonkey for an async handler (or fetch): ` +
        `\`npm run build:http\` in a project from \`airlock new --lang js\`, else ` +
        `\`jco componentize app.js --wit wit --world-name toolbox -d fetch-event --bundle -o app.wasm\``,
    );
  }
  if (result instanceof Output) {
    return {
      content: result.content,
      structured: result.structured == null ? null : JSON.stringify(result.structured),
    };
  }
  const content = [];
  let structured;
  if (result === undefined) {
    structured = decl.wrap || !decl.info.outputSchema ? { result: true } : {};
  } else if (decl.wrap || typeof result !== "object" || result === null || Array.isArray(result)) {
    structured = result === null ? {} : { result };
    if (typeof result === "string") content.push({ tag: "text", val: result });
  } else {
    structured = result;
  }
  return { content, structured: JSON.stringify(structured) };
}

/**
 * The `tools` export for these tools: `export const tools = toolbox(a, b)`.
 */
export function toolbox(...decls) {
  const byName = new Map();
  for (const decl of decls) {
    // server()'s resources, prompts, completions and skills are not tools.
    if (decl && decl.kind) continue;
    if (!decl || !decl.info) {
      throw new Error("toolbox() takes tools made with tool({...}) (and server() resources, prompts, completions, skills)");
    }
    if (byName.has(decl.info.name)) throw new Error(`two tools are named ${decl.info.name}`);
    byName.set(decl.info.name, decl);
  }
  const offered = decls.filter((d) => d.kind);
  const toolDecls = decls.filter((d) => !d.kind);
  byName.clear();
  for (const decl of toolDecls) byName.set(decl.info.name, decl);
  const served = new Set(offered.filter((d) => d.kind === "resource").map((d) => d.info.uri));
  for (const decl of toolDecls) {
    const ui = decl.meta?.ui?.resourceUri;
    if (ui !== undefined && !served.has(ui)) {
      throw new Error(`tool ${decl.info.name} names the UI ${ui}, which no resource of this component serves`);
    }
  }
  return {
    describe() {
      return [...byName.values()].map((d) => d.info);
    },
    call(name, argumentsJson) {
      const decl = byName.get(name);
      if (!decl) throw { tag: "invalid-arguments", val: `unknown tool ${JSON.stringify(name)}` };
      let args;
      try {
        args = argumentsJson ? JSON.parse(argumentsJson) : {};
      } catch (err) {
        throw { tag: "invalid-arguments", val: `the arguments are not JSON: ${err.message}` };
      }
      const failure = (err) => ({
        tag: err instanceof InvalidArguments ? "invalid-arguments" : "failed",
        val: errorText(err),
      });
      let result;
      try {
        result = decl.handler(args);
        if (AWAITS && result && typeof result.then === "function") {
          return Promise.resolve(result).then(
            (value) => toOutput(decl, value),
            (err) => {
              throw failure(err);
            },
          );
        }
        return toOutput(decl, result);
      } catch (err) {
        throw failure(err);
      }
    },
  };
}

/**
 * All the exports of the world `server` for these declarations:
 * `export const { tools, resources, prompts, completions, skills } = server(a, b, …)`.
 */
export function server(...decls) {
  return { tools: toolbox(...decls), ...offers(...decls) };
}

/** Sends a log message to the client and the runtime's log: `log.info("…")`. */
export const log = Object.fromEntries(
  ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"].map((level) => [
    level,
    (msg) => host.log(level, String(msg)),
  ]),
);

/** Reports progress of the running call (values should grow). */
export function progress(done, total = null, msg = null) {
  host.progress(done, total, msg);
}

/** True once the client has cancelled this call. */
export function cancelled() {
  return host.cancelled();
}

// The errors, the component's resources, prompts and completions, and the
// requests to the client, importable from here too.
export { InvalidArguments, ToolError };
export {
  AskError,
  NotFound,
  ask,
  audio,
  completion,
  contents,
  elicit,
  elicitUrl,
  embedded,
  image,
  matchTemplate,
  message,
  prompt,
  resource,
  resourceTemplate,
  resourceUpdated,
  roots,
  sample,
  skill,
} from "./airlock-server.js";
