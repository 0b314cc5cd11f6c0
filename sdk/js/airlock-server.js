// airlock-server.js — the rest of the world `server` for airlock-tool.js:
// resources, resource templates, prompts and completions (their exports:
// `offers`, which airlock-tool.js's `server` joins to the tools), and the
// requests to the client (elicit, elicitUrl, sample, roots; ask for several
// at once). Import it through airlock-tool.js, which re-exports all of it.

import * as hostModule from "airlock:tool/host@0.1.2";
import { InvalidArguments, NAME, ToolError, errorText, icons } from "./airlock-types.js";

const host = hostModule.default ?? hostModule;

function optionalText(value) {
  return value === undefined ? null : value;
}

function annotations(spec) {
  if (!spec.audience && spec.priority === undefined && spec.lastModified === undefined) return null;
  for (const role of spec.audience ?? []) {
    if (role !== "user" && role !== "assistant") throw new Error(`audience holds user and assistant, not ${role}`);
  }
  return {
    audience: spec.audience ?? [],
    priority: optionalText(spec.priority),
    lastModified: optionalText(spec.lastModified),
  };
}

/**
 * Declares a resource with a fixed URI: `{ uri, name, title, description,
 * mimeType, size, audience, priority, meta, read }`. `read()` returns its
 * contents: a string (text), a `Uint8Array` (a blob) or `contents(…)`
 * pieces. `meta` is extra `_meta`, e.g. an MCP App's `{ ui: { csp: … } }`.
 */
export function resource(spec) {
  const { uri, read } = spec;
  if (typeof uri !== "string" || !uri.includes(":")) throw new Error(`resource URI ${JSON.stringify(uri)} has no scheme`);
  if (typeof read !== "function") throw new Error(`resource ${uri} has no read function`);
  return {
    kind: "resource",
    info: {
      uri,
      name: spec.name ?? uri,
      title: optionalText(spec.title),
      description: optionalText(spec.description),
      mimeType: optionalText(spec.mimeType),
      size: optionalText(spec.size),
      annotations: annotations(spec),
      icons: icons(spec.icons),
      meta: spec.meta === undefined ? null : JSON.stringify(spec.meta),
    },
    read,
  };
}

/** The variable names of an RFC 6570 level-1 template, in order. */
function templateVariables(template) {
  return [...template.matchAll(/\{([^}]*)\}/g)].map((m) => m[1]);
}

/**
 * The variables of `uri` under a level-1 `template`, percent-decoded, or
 * null: a value is never empty and holds no `/`.
 */
export function matchTemplate(template, uri) {
  const names = templateVariables(template);
  const pattern = template
    .split(/\{[^}]*\}/)
    .map((literal) => literal.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("([^/]+?)");
  const m = new RegExp(`^${pattern}$`).exec(uri);
  if (!m) return null;
  const out = {};
  try {
    names.forEach((name, i) => (out[name] = decodeURIComponent(m[i + 1])));
  } catch {
    return null;
  }
  return out;
}

/**
 * Declares the resources of a URI template: `{ uriTemplate, name, title,
 * description, mimeType, read(variables, uri) }`; `read` receives the
 * template's variables as an object.
 */
export function resourceTemplate(spec) {
  const { uriTemplate, read } = spec;
  if (typeof uriTemplate !== "string" || templateVariables(uriTemplate).length === 0) {
    throw new Error(`resource template ${JSON.stringify(uriTemplate)} has no {variable}`);
  }
  if (typeof read !== "function") throw new Error(`resource template ${uriTemplate} has no read function`);
  return {
    kind: "template",
    info: {
      uriTemplate,
      name: spec.name ?? uriTemplate,
      title: optionalText(spec.title),
      description: optionalText(spec.description),
      mimeType: optionalText(spec.mimeType),
      annotations: annotations(spec),
      icons: icons(spec.icons),
    },
    read,
  };
}

/** One piece of a resource's contents: `contents(uri, textOrBytes, { mimeType, meta })`. */
export function contents(uri, body, opts = {}) {
  return { piece: true, uri, body, mimeType: opts.mimeType ?? null, meta: opts.meta ?? null };
}

/** Thrown by a read when there is no such resource. */
export class NotFound extends Error {}

function toContents(result, uri, mimeType) {
  const pieces = Array.isArray(result) ? result : [result];
  return pieces.map((p) => {
    const piece = p && p.piece ? p : contents(uri, p);
    const isText = typeof piece.body === "string";
    if (!isText && !(piece.body instanceof Uint8Array) && !Array.isArray(piece.body)) {
      throw new ToolError(`a read returns a string, a Uint8Array or contents(…), not ${typeof piece.body}`);
    }
    return {
      uri: piece.uri,
      mimeType: piece.mimeType ?? mimeType ?? (isText ? "text/plain" : "application/octet-stream"),
      body: isText ? { tag: "text", val: piece.body } : { tag: "blob", val: new Uint8Array(piece.body) },
      meta: piece.meta == null ? null : JSON.stringify(piece.meta),
    };
  });
}

/** An image block of a message. */
export function image(data, mimeType) {
  return { tag: "image", val: { data: new Uint8Array(data), mimeType } };
}

/** An audio block of a message. */
export function audio(data, mimeType) {
  return { tag: "audio", val: { data: new Uint8Array(data), mimeType } };
}

/** A resource inside a message: `embedded(uri, textOrBytes, mimeType)`. */
export function embedded(uri, body, mimeType = null) {
  const b = typeof body === "string" ? { tag: "text", val: body } : { tag: "blob", val: new Uint8Array(body) };
  return { tag: "embedded", val: { uri, mimeType, body: b } };
}

function block(content) {
  return typeof content === "string" ? { tag: "text", val: content } : content;
}

/** Messages of prompts (and sampling): `message.user("…")`, `message.assistant(image(…))`. */
export const message = {
  user: (content) => ({ role: "user", content: block(content) }),
  assistant: (content) => ({ role: "assistant", content: block(content) }),
};

/**
 * Declares a prompt: `{ name, title, description, arguments, get }`.
 * `arguments` maps each argument's name to `{ description, title, required }`
 * (required unless `required: false`); `get(args)` returns messages
 * (`message.user(…)`, a list of them, or a string: one user message).
 */
export function prompt(spec) {
  const { name, get } = spec;
  if (typeof name !== "string" || !NAME.test(name)) {
    throw new Error(`prompt name ${JSON.stringify(name)} must be 1 to 64 characters of A-Z a-z 0-9 _ - .`);
  }
  if (typeof get !== "function") throw new Error(`prompt ${name} has no get function`);
  const args = Object.entries(spec.arguments ?? {}).map(([argName, a]) => ({
    name: argName,
    title: optionalText(a.title),
    description: optionalText(a.description),
    required: a.required !== false,
  }));
  return {
    kind: "prompt",
    info: {
      name,
      title: optionalText(spec.title),
      description: optionalText(spec.description),
      arguments: args,
      icons: icons(spec.icons),
    },
    get,
  };
}

/**
 * Declares the completions of one argument: `{ prompt | resourceTemplate,
 * argument, complete(value, context) }` (the prompt or template by name or
 * by its declaration); `complete` returns the values (at most 100 are
 * sent) or `{ values, total, hasMore }`.
 */
export function completion(spec) {
  const ref = spec.prompt ?? spec.resourceTemplate;
  if ((spec.prompt === undefined) === (spec.resourceTemplate === undefined)) {
    throw new Error("completion() is for one prompt or one resourceTemplate");
  }
  if (typeof spec.complete !== "function") throw new Error("completion() needs a complete function");
  const kind = spec.prompt !== undefined ? "prompt" : "resource-template";
  const target = typeof ref === "string" ? ref : kind === "prompt" ? ref.info.name : ref.info.uriTemplate;
  return { kind: "completion", info: { kind, target, argument: spec.argument }, complete: spec.complete };
}

function failure(err) {
  return { tag: err instanceof InvalidArguments ? "invalid-arguments" : "failed", val: errorText(err) };
}

/**
 * The `resources`, `prompts` and `completions` exports of the world
 * `server` for these declarations (tools among them are skipped; their
 * `_meta` is what `resources.describe` reports as `toolMeta`).
 */
/**
 * A skill the component carries (an Agent Skill: a `SKILL.md` with YAML
 * front matter and the files it refers to), served by airlock as
 * `skill://<path>/…`: `skill("order-total", { "SKILL.md": text, "references/x.md": text })`.
 * A file is text (encoded as UTF-8) or a `Uint8Array`; bring it into the
 * bundle at build time (an `import … with { type: "text" }` your bundler
 * supports, or a module generated from the folder). airlock checks the
 * skill at load and computes its digests.
 */
export function skill(path, files) {
  if (!files || typeof files["SKILL.md"] === "undefined") {
    throw new Error(`skill ${path} has no SKILL.md: give it { "SKILL.md": text, … }`);
  }
  return { kind: "skill", path, files };
}

/** The UTF-8 bytes of `text` (QuickJS has no TextEncoder). */
function utf8(text) {
  const bytes = [];
  for (const ch of text) {
    const c = ch.codePointAt(0);
    if (c < 0x80) bytes.push(c);
    else if (c < 0x800) bytes.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else bytes.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return new Uint8Array(bytes);
}

export function offers(...decls) {
  const skillsOf = decls.filter((d) => d && d.kind === "skill");
  const resourcesOf = decls.filter((d) => d && d.kind === "resource");
  const templates = decls.filter((d) => d && d.kind === "template");
  const promptsOf = new Map(decls.filter((d) => d && d.kind === "prompt").map((d) => [d.info.name, d]));
  const completers = decls.filter((d) => d && d.kind === "completion");
  const toolMeta = decls
    .filter((d) => d && !d.kind && d.meta)
    .map((d) => ({ tool: d.info.name, meta: JSON.stringify(d.meta) }));
  return {
    resources: {
      describe() {
        return {
          resources: resourcesOf.map((r) => r.info),
          templates: templates.map((t) => t.info),
          toolMeta,
        };
      },
      read(uri) {
        try {
          const r = resourcesOf.find((x) => x.info.uri === uri);
          if (r) return toContents(r.read(), uri, r.info.mimeType);
          for (const t of templates) {
            const vars = matchTemplate(t.info.uriTemplate, uri);
            if (vars) return toContents(t.read(vars, uri), uri, t.info.mimeType);
          }
        } catch (err) {
          if (err instanceof NotFound) throw { tag: "not-found", val: err.message };
          throw { tag: "failed", val: errorText(err) };
        }
        const known = [...resourcesOf.map((r) => r.info.uri), ...templates.map((t) => t.info.uriTemplate)];
        throw { tag: "not-found", val: `this component has no resource ${uri} (it serves ${known.join(", ")})` };
      },
    },
    prompts: {
      describe() {
        return [...promptsOf.values()].map((p) => p.info);
      },
      get(name, argumentPairs) {
        const p = promptsOf.get(name);
        if (!p) throw { tag: "invalid-arguments", val: `this component has no prompt named ${name}` };
        const args = Object.fromEntries(argumentPairs);
        const missing = p.info.arguments.find((a) => a.required && !(a.name in args));
        if (missing) throw { tag: "invalid-arguments", val: `missing required argument ${missing.name}` };
        try {
          let result = p.get(args);
          if (!Array.isArray(result)) result = [result];
          const messages = result.map((m) => (typeof m === "string" ? message.user(m) : m));
          return { description: null, messages };
        } catch (err) {
          throw failure(err);
        }
      },
    },
    skills: {
      describe() {
        return skillsOf.map((k) => ({
          path: k.path,
          files: Object.entries(k.files).map(([path, body]) => ({
            path,
            bytes: typeof body === "string" ? utf8(body) : new Uint8Array(body),
          })),
        }));
      },
    },
    completions: {
      complete(reference, argument, value, contextPairs) {
        const c = completers.find(
          (x) => x.info.kind === reference.tag && x.info.target === reference.val && x.info.argument === argument,
        );
        if (!c) return { values: [], total: null, hasMore: false };
        try {
          let got = c.complete(value, Object.fromEntries(contextPairs));
          if (Array.isArray(got)) got = { values: got };
          const values = got.values.map(String);
          const cut = values.length > 100;
          return {
            values: values.slice(0, 100),
            total: got.total ?? (cut ? values.length : null),
            hasMore: got.hasMore ?? cut,
          };
        } catch (err) {
          throw failure(err);
        }
      },
    },
  };
}

/** Tells the runtime that resource `uri` changed: subscribed clients are notified. */
export function resourceUpdated(uri) {
  host.resourceUpdated(uri);
}

// ---------------------------------------------------------------------------
// Requests to the client: each needs the operator's grant and a client with
// the capability, else it throws an AskError (kind denied, unavailable,
// over-limit or failed); none ends the call.

/** Why a request to the client has no answer; `kind` says which. */
export class AskError extends Error {
  constructor(kind, text) {
    super(text);
    this.kind = kind;
  }
}

function hostCall(fn) {
  try {
    return fn();
  } catch (err) {
    // QuickJS throws the WIT error itself, StarlingMonkey a ComponentError
    // carrying it as `payload`.
    const e = err && err.payload !== undefined ? err.payload : err;
    if (e && typeof e.tag === "string") throw new AskError(e.tag, e.val ?? e.tag);
    throw err;
  }
}

function answer(a) {
  return a.tag === "accept" ? { action: "accept", content: a.val ? JSON.parse(a.val) : {} } : { action: a.tag, content: null };
}

/**
 * Asks the user to fill in a form (`schema`: a JSON Schema of a flat
 * object); returns `{ action: "accept" | "decline" | "cancel", content }`.
 */
export function elicit(msg, schema) {
  return answer(hostCall(() => host.elicit(msg, JSON.stringify(schema))));
}

/** Asks the user to open `url` outside the client; returns `{ action }`. */
export function elicitUrl(msg, url) {
  return answer(hostCall(() => host.elicitUrl(msg, url)));
}

/**
 * Asks the client's model: `sample({ messages, maxTokens, systemPrompt,
 * temperature, stopSequences, modelHints })` (`messages` a string or
 * `message.user(…)` list); returns `{ role, text, content, model, stopReason }`.
 */
export function sample(request) {
  return sampled(hostCall(() => host.sample(samplingRequest(request))));
}

function samplingRequest(request) {
  const messages = typeof request.messages === "string" ? [message.user(request.messages)] : request.messages;
  const prefs = request.modelHints || request.costPriority !== undefined || request.speedPriority !== undefined
    || request.intelligencePriority !== undefined
    ? {
        hints: request.modelHints ?? [],
        costPriority: optionalText(request.costPriority),
        speedPriority: optionalText(request.speedPriority),
        intelligencePriority: optionalText(request.intelligencePriority),
      }
    : null;
  return {
    messages,
    systemPrompt: optionalText(request.systemPrompt),
    maxTokens: request.maxTokens,
    temperature: optionalText(request.temperature),
    stopSequences: request.stopSequences ?? [],
    modelPreferences: prefs,
  };
}

function sampled(got) {
  return {
    role: got.role,
    text: got.content.tag === "text" ? got.content.val : null,
    content: got.content,
    model: got.model,
    stopReason: got.stopReason,
  };
}

/** The client's roots: `[{ uri, name }]` (information, never a folder to open). */
export function roots() {
  return hostCall(() => host.roots());
}

/**
 * Asks several things at once, each under a key the tool chooses (1 to 64
 * characters of `A-Z a-z 0-9 _ - .`): in revision 2026-07-28 they reach the
 * client in one round, as `inputRequests` under these keys; with sessions
 * one after another. Each request needs its grant and counts against the
 * call's limits as alone.
 *
 *     const answers = ask({
 *       user_name: { elicit: "What is your name?", schema: { type: "object", … } },
 *       greeting: { sample: { messages: "Generate a greeting", maxTokens: 50 } },
 *       client_roots: { roots: true },
 *     });
 *     answers.user_name  // { action, content }, as elicit returns
 *
 * Each answer is what `elicit`, `elicitUrl` (`{ elicitUrl: message, url }`),
 * `sample` or `roots` returns, or the `AskError` of a request that got
 * none (returned, not thrown). A batch that is empty, over 16 requests or
 * with a bad or repeated key throws an `AskError` and asks nothing.
 */
export function ask(requests) {
  const entries = Object.entries(requests).map(([key, r]) => {
    if (r.elicit !== undefined) return [key, { tag: "elicit", val: { message: r.elicit, requestedSchema: JSON.stringify(r.schema) } }];
    if (r.elicitUrl !== undefined) return [key, { tag: "elicit-url", val: { message: r.elicitUrl, url: r.url } }];
    if (r.sample !== undefined) return [key, { tag: "sample", val: samplingRequest(r.sample) }];
    if (r.roots) return [key, { tag: "roots" }];
    throw new Error(`${key}: ask takes { elicit, schema }, { elicitUrl, url }, { sample } or { roots: true }`);
  });
  const results = hostCall(() => host.ask(entries));
  const answers = {};
  entries.forEach(([key], i) => {
    const got = results[i];
    if (got.tag === "err") {
      answers[key] = new AskError(got.val.tag, got.val.val ?? got.val.tag);
    } else if (got.val.tag === "elicited") {
      answers[key] = answer(got.val.val);
    } else if (got.val.tag === "sampled") {
      answers[key] = sampled(got.val.val);
    } else {
      answers[key] = got.val.val;
    }
  });
  return answers;
}
