// The sandbox proxy of a web host (MCP Apps spec 2026-01-26, "Sandbox
// proxy"): served from another origin than the host page, with the view's
// Content-Security-Policy as an HTTP header (run.mjs builds it from the
// resource's _meta.ui.csp). It renders the view's HTML in an inner iframe
// (srcdoc inherits this page's CSP; sandbox "allow-scripts" only, so the
// view has an opaque origin) and relays JSON-RPC messages both ways, except
// the ui/notifications/sandbox-* ones, which are its own.
"use strict";
(() => {
  if (window.self === window.top) throw new Error("the sandbox proxy runs only inside a host's iframe");
  // The host page is whatever embeds this one; its origin is fixed by the
  // first (and only) page allowed to talk to us.
  const hostOrigin = new URL(document.referrer).origin;
  const inner = document.createElement("iframe");
  inner.setAttribute("sandbox", "allow-scripts");
  inner.title = "MCP App";
  document.body.append(inner);

  window.addEventListener("message", (event) => {
    const data = event.data;
    if (event.source === window.parent) {
      if (event.origin !== hostOrigin) return;
      if (data && data.method === "ui/notifications/sandbox-resource-ready") {
        const { html, sandbox } = data.params || {};
        if (typeof sandbox === "string") inner.setAttribute("sandbox", sandbox);
        if (typeof html === "string") inner.srcdoc = html;
      } else if (inner.contentWindow) {
        inner.contentWindow.postMessage(data, "*");
      }
    } else if (event.source === inner.contentWindow) {
      if (data && typeof data.method === "string" && data.method.startsWith("ui/notifications/sandbox-")) return;
      window.parent.postMessage(data, hostOrigin);
    }
  });

  window.parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/sandbox-proxy-ready", params: {} }, hostOrigin);
})();
