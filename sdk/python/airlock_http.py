"""HTTP requests from an airlock tool, over componentize-py's ``wasi:http``
bindings. Blocking, like the tool functions themselves::

    from airlock_http import fetch

    @tool(read_only=True, open_world=True)
    def latest(repo: str) -> str:
        \"\"\"Returns the name of a repository's latest release.\"\"\"
        release = fetch(f"https://api.github.com/repos/{repo}/releases/latest").raise_for_status().json()
        return release["name"]

Inside airlock only an open-world tool reaches the network, and only the
hosts the operator lists; anything else raises :class:`HttpError` with the
``wasi:http`` error code (``HTTP-request-denied``,
``destination-IP-prohibited``, ``TLS-certificate-error`` ...). A credential
the operator has airlock inject (an ``Authorization`` header, say) is added
by the runtime on the way out: the tool never sets it and never sees it.

Build with the world ``toolbox-http`` (the contract plus
``wasi:http/outgoing-handler``) and without ``-s``, which would stub
``wasi:http`` out::

    componentize-py -d wit -w toolbox-http componentize -p sdk/python -p . app -o app.wasm

Outside a component (unit tests under plain CPython) every request raises
:class:`HttpError` with code ``unavailable``.
"""

from __future__ import annotations

import json as _json
from typing import Any, Dict, List, Optional, Tuple, Union
from urllib.parse import urlsplit

from airlock_types import ToolError

# Imported when this module is: componentize-py snapshots the modules the
# app imported while it was built, and a component has no files to import
# anything from later. Under plain CPython (unit tests) there are none.
try:
    from componentize_py_types import Err as _Err
    from wit_world.imports import outgoing_handler as _handler
    from wit_world.imports import streams as _streams
    from wit_world.imports import wasi_http_types as _h
except ImportError:
    _handler = None

# Most bytes `blocking-write-and-flush` takes at once.
_CHUNK = 4096

# What the common `wasi:http` error codes usually mean, for a person.
_MEANINGS = {
    "HTTP-request-denied": "the operator's policy does not let this tool reach this URL: "
    "only open-world tools, only listed hosts, scheme and port",
    "destination-IP-prohibited": "the host resolves to an address that is not public "
    "and that the policy does not list",
    "TLS-certificate-error": "the server's certificate was not accepted",
    "TLS-protocol-error": "the TLS handshake failed",
    "TLS-alert-received": "the TLS handshake failed",
    "DNS-error": "the host name did not resolve",
    "connection-refused": "nothing listens at that address and port",
    "connection-timeout": "the server did not answer in time",
    "HTTP-response-timeout": "the server did not answer in time",
    "connection-limit-reached": "the call holds too many connections and files at once",
}

# WIT spellings that do not follow from the binding's class names.
_SPELLINGS = {
    "DnsTimeout": "DNS-timeout",
    "DnsError": "DNS-error",
    "DestinationIpProhibited": "destination-IP-prohibited",
    "DestinationIpUnroutable": "destination-IP-unroutable",
    "TlsProtocolError": "TLS-protocol-error",
    "TlsCertificateError": "TLS-certificate-error",
    "TlsAlertReceived": "TLS-alert-received",
    "HttpRequestDenied": "HTTP-request-denied",
    "HttpRequestUriInvalid": "HTTP-request-URI-invalid",
    "HttpResponseTimeout": "HTTP-response-timeout",
}


class HttpError(ToolError):
    """A request that produced no response (or, from
    :meth:`Response.raise_for_status`, an error status). ``code`` is the
    ``wasi:http`` error code, ``invalid``, ``io``, ``status`` or
    ``unavailable``. Uncaught, it fails the call with its message."""

    def __init__(self, code: str, detail: str = ""):
        self.code = code
        meaning = _MEANINGS.get(code, "")
        text = f"request failed: {code}"
        if detail:
            text += f": {detail}"
        if meaning:
            text += f" ({meaning})"
        super().__init__(text)


class Response:
    """A response, its body read whole."""

    def __init__(self, status: int, headers: List[Tuple[str, str]], body: bytes):
        self.status = status
        #: Names lower case, in the order the server sent them.
        self.headers = headers
        self.body = body

    def header(self, name: str) -> Optional[str]:
        """The first value of header ``name`` (any case)."""
        name = name.lower()
        return next((v for n, v in self.headers if n == name), None)

    def text(self) -> str:
        """The body as text (invalid UTF-8 replaced)."""
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON."""
        try:
            return _json.loads(self.body)
        except ValueError as err:
            raise HttpError("invalid", f"the response is not JSON: {err}") from err

    def raise_for_status(self) -> "Response":
        """The response itself if its status is 2xx; else raises ``HttpError``."""
        if not 200 <= self.status < 300:
            raise HttpError("status", f"the server answered with status {self.status}")
        return self


def fetch(
    url: str,
    method: str = "GET",
    headers: Optional[Union[Dict[str, str], List[Tuple[str, str]]]] = None,
    body: Optional[Union[bytes, str]] = None,
    json: Any = None,
) -> Response:
    """Sends one request and reads the whole response.

    ``headers`` is a dict or a list of pairs; ``body`` bytes or text;
    ``json`` a value sent as a JSON body with ``content-type:
    application/json``.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise HttpError("invalid", f"{url!r}: the scheme must be http or https")
    if not parts.netloc or "@" in parts.netloc:
        raise HttpError("invalid", f"{url!r}: no host, or user information in the URL")
    pairs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    if json is not None:
        body = _json.dumps(json)
        pairs.append(("content-type", "application/json"))
    data = body.encode() if isinstance(body, str) else (body or b"")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    if _handler is None:
        raise HttpError(
            "unavailable",
            "no network outside a component built with the world toolbox-http",
        )
    return _send(method.upper(), scheme, parts.netloc, path, pairs, data)


def _send(method, scheme, authority, path, pairs, data) -> Response:
    Err, h = _Err, _h

    try:
        fields = h.Fields.from_list([(n, str(v).encode()) for n, v in pairs])
    except Err as err:
        raise HttpError("invalid", f"a header cannot be sent: {_name(err.value)}") from None
    request = h.OutgoingRequest(fields)
    methods = {
        "GET": h.Method_Get, "HEAD": h.Method_Head, "POST": h.Method_Post,
        "PUT": h.Method_Put, "DELETE": h.Method_Delete, "CONNECT": h.Method_Connect,
        "OPTIONS": h.Method_Options, "TRACE": h.Method_Trace, "PATCH": h.Method_Patch,
    }
    try:
        request.set_method(methods[method]() if method in methods else h.Method_Other(method))
        request.set_scheme(h.Scheme_Https() if scheme == "https" else h.Scheme_Http())
        request.set_authority(authority)
        request.set_path_with_query(path)
    except Err:
        raise HttpError("invalid", f"cannot send {method} {scheme}://{authority}{path}") from None
    outgoing = request.body()
    # Handed over first, so the body below streams to a request under way.
    try:
        future = _handler.handle(request, None)
    except Err as err:
        raise HttpError(_code(err.value)) from None
    with future:
        with outgoing.write() as stream:
            for at in range(0, len(data), _CHUNK):
                try:
                    stream.blocking_write_and_flush(data[at : at + _CHUNK])
                except Err as err:
                    raise HttpError("io", f"sending the body: {_name(err.value)}") from None
        try:
            h.OutgoingBody.finish(outgoing, None)
        except Err as err:
            raise HttpError(_code(err.value)) from None
        with future.subscribe() as ready:
            ready.block()
        answer = future.get()
    # `get` after waiting: Some(Ok(Ok(response) | Err(code))).
    if answer is None or isinstance(answer, Err):
        raise HttpError("io", "no response after waiting for it")
    inner = answer.value
    if isinstance(inner, Err):
        raise HttpError(_code(inner.value))
    return _read(inner.value)


def _read(response) -> Response:
    Err, h = _Err, _h
    with response:
        status = response.status()
        with response.headers() as fields:
            headers = [(n.lower(), v.decode("utf-8", "replace")) for n, v in fields.entries()]
        incoming = response.consume()
        chunks = []
        with incoming.stream() as stream:
            while True:
                try:
                    chunks.append(stream.blocking_read(64 * 1024))
                except Err as err:
                    if isinstance(err.value, _streams.StreamError_Closed):
                        break
                    raise HttpError("io", "reading the response body") from None
        with h.IncomingBody.finish(incoming):
            pass
    return Response(status, headers, b"".join(chunks))


def _name(value) -> str:
    return type(value).__name__.split("_", 1)[-1]


def _code(value) -> str:
    """A `wasi:http` error code in the WIT's spelling (`HTTP-request-denied`)."""
    name = _name(value)
    if name in _SPELLINGS:
        return _SPELLINGS[name]
    # ConnectionRefused -> connection-refused
    out = "".join("-" + c.lower() if c.isupper() else c for c in name).lstrip("-")
    if name == "InternalError" and getattr(value, "value", None):
        out += f": {value.value}"
    return out
