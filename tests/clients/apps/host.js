// A small MCP Apps host, as a chat client's web page would be one: the
// MCP client of @modelcontextprotocol/client connects to airlock over
// Streamable HTTP, and @modelcontextprotocol/ext-apps' AppBridge renders the
// tool's UI resource in a sandbox proxy on another origin (the spec's
// double iframe) and forwards the view's tools/call to airlock.
// run.mjs bundles this file for the browser and drives the page.
//
// Query: ?tool=NAME&sandbox=URL (the sandbox proxy page, another origin).
// The page talks to /mcp on its own origin, which run.mjs forwards to
// airlock unchanged, Origin header included.

import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  getToolUiResourceUri,
  isToolVisibilityAppOnly,
} from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const HOST_INFO = { name: "airlock-test-host", version: "1.0.0" };
const params = new URLSearchParams(location.search);
const toolName = params.get("tool");
const sandboxUrl = new URL(params.get("sandbox"));

// What the host did, for the person looking at the screenshot and for
// run.mjs (window.hostEvents).
window.hostEvents = [];
function record(kind, detail) {
  window.hostEvents.push({ kind, ...detail });
  const li = document.createElement("li");
  li.textContent = `${kind}: ${JSON.stringify(detail)}`;
  document.getElementById("events").append(li);
}

function fail(err) {
  const message = err instanceof Error ? err.message : String(err);
  record("error", { message });
  document.body.dataset.state = "failed";
}

// The sandbox proxy is loaded into `frame` and says it is ready.
function loadSandbox(frame, csp) {
  const url = new URL(sandboxUrl);
  if (csp) url.searchParams.set("csp", JSON.stringify(csp));
  const ready = new Promise((resolve) => {
    window.addEventListener("message", function listener(event) {
      if (
        event.source === frame.contentWindow &&
        event.origin === sandboxUrl.origin &&
        event.data?.method === "ui/notifications/sandbox-proxy-ready"
      ) {
        window.removeEventListener("message", listener);
        resolve();
      }
    });
  });
  frame.src = url.href;
  return ready;
}

async function main() {
  const client = new Client(HOST_INFO);
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)));
  const server = client.getServerVersion();
  record("connected", { server: server?.name, version: server?.version });

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  document.getElementById("tools").textContent = names.join(", ");
  record("tools/list", { count: tools.length });
  const tool = tools.find((t) => t.name === toolName);
  if (!tool) throw new Error(`airlock lists no tool ${toolName} (it lists ${names.join(", ")})`);
  const uri = getToolUiResourceUri(tool);
  if (!uri) throw new Error(`${toolName} names no UI resource (_meta.ui.resourceUri)`);
  record("ui resource", { tool: toolName, uri });

  const { contents } = await client.readResource({ uri });
  if (contents.length !== 1) throw new Error(`${uri}: ${contents.length} contents, expected 1`);
  const [content] = contents;
  if (content.mimeType !== RESOURCE_MIME_TYPE) {
    throw new Error(`${uri} is ${content.mimeType}, expected ${RESOURCE_MIME_TYPE}`);
  }
  const html = "blob" in content ? atob(content.blob) : content.text;
  const ui = content._meta?.ui ?? {};
  record("resources/read", { uri, bytes: html.length, csp: ui.csp ?? null });

  const frame = document.createElement("iframe");
  frame.id = "app";
  frame.title = `${toolName} UI`;
  // The proxy needs both (spec: Sandbox proxy, 2); it lives on another
  // origin, so allow-same-origin gives it its own origin, not this page's.
  frame.setAttribute("sandbox", "allow-scripts allow-same-origin");
  document.getElementById("frame").append(frame);
  await loadSandbox(frame, ui.csp);

  const caps = client.getServerCapabilities();
  const bridge = new AppBridge(
    client,
    HOST_INFO,
    { serverTools: caps?.tools, serverResources: caps?.resources, logging: {} },
    {
      hostContext: {
        theme: "light",
        displayMode: "inline",
        availableDisplayModes: ["inline"],
        platform: "web",
        containerDimensions: { maxHeight: 800 },
        toolInfo: { tool },
      },
    },
  );
  bridge.onsizechange = ({ height }) => {
    if (height) frame.style.height = `${height + 4}px`;
  };
  bridge.onloggingmessage = (message) => record("app log", message);
  const initialized = new Promise((resolve) => (bridge.oninitialized = resolve));
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  // connect() routes the view's tools/call to airlock; the host keeps its
  // say first (spec: a view may call only tools visible to "app").
  const forward = bridge.oncalltool;
  bridge.oncalltool = async (call, extra) => {
    const target = tools.find((t) => t.name === call.name);
    if (!target || (target._meta?.ui?.visibility && !target._meta.ui.visibility.includes("app"))) {
      record("refused app tools/call", { name: call.name });
      throw new Error(`the view may not call ${call.name}`);
    }
    record("app tools/call", { name: call.name, arguments: call.arguments });
    const result = await forward(call, extra);
    record("app tools/call result", { name: call.name, isError: !!result.isError, structuredContent: result.structuredContent });
    return result;
  };
  await bridge.sendSandboxResourceReady({ html, csp: ui.csp, permissions: ui.permissions });
  await initialized;
  record("view initialized", { app: bridge.getAppVersion()?.name });

  // The model's call, as a chat client makes it once the model asks: the
  // view gets the arguments, then the result.
  const args = {};
  await bridge.sendToolInput({ arguments: args });
  const result = await client.callTool({ name: toolName, arguments: args });
  record("tools/call", { name: toolName, isError: !!result.isError, appOnly: isToolVisibilityAppOnly(tool) });
  await bridge.sendToolResult(result);
  document.body.dataset.state = "ready";
}

main().catch(fail);
