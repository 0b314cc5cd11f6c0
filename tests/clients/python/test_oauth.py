"""The official MCP Python SDK's OAuth client (``mcp.client.auth``) against
``airlock serve`` over HTTPS, with tokens from a real authorization server
(oidc-provider, ``oauth_parts.Issuer``), all on loopback with a throwaway
CA: discovery from the 401, Protected Resource Metadata, the issuer's
metadata, a client-credentials token (a JWT for this resource), then
tools/list and tools/call through it — and the token's scopes decide which
tools the client sees and may call.

The SDK's client-credentials provider (``ClientCredentialsOAuthProvider``)
is the flow used: it is the SDK's own for machine clients, and needs no
browser; oidc-provider has the grant (``features.clientCredentials``). It
asks for the scopes the 401's challenge names (else the resource metadata's
``scopes_supported``: the MCP specification's scope selection), not ones it
is given, so which scopes a client gets is the authorization server's
decision (issuer.mjs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jwt
import pytest
from mcp import MCPError

from conftest import COMPONENTS, Served, free_port
from oauth_parts import READER, WRITER, Issuer, Pki, oauth_policy, sdk_client

pytestmark = pytest.mark.anyio

CATALOG = str(Path(COMPONENTS) / "catalog.wasm")


class OAuthServed:
    """``airlock serve`` over HTTPS with an ``[oauth]`` policy whose
    resource is its own URL, and its audit log."""

    def __init__(self, pki: Pki, issuer: Issuer, folder: Path) -> None:
        data = folder / "data"
        data.mkdir(parents=True, exist_ok=True)
        self.audit = folder / "audit.jsonl"
        policy = folder / "airlock.toml"
        # The resource must be the URL clients connect to, which names the
        # port: chosen before the start, and chosen again if another process
        # took it in between.
        for attempt in range(5):
            port = free_port()
            self.resource = f"https://127.0.0.1:{port}/mcp"
            policy.write_text(oauth_policy(
                self.resource, issuer.url, pki.ca,
                extra=f'audit = "{self.audit}"\n\n'
                      "[components.catalog]\n"
                      'destructive = "allow"\n'
                      f'folders = [{{ host = "{data}", guest = "/data", mode = "read-write" }}]\n',
            ))
            try:
                self.served = Served(
                    CATALOG, port=port,
                    args=("--policy", str(policy), "--tls-cert", str(pki.cert), "--tls-key", str(pki.key)),
                )
                break
            except RuntimeError as error:
                if attempt == 4 or "in use" not in str(error).lower():
                    raise
        assert self.served.url == self.resource

    def audit_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.audit.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def airlock(pki: Pki, issuer: Issuer, tmp_path_factory: pytest.TempPathFactory):
    server = OAuthServed(pki, issuer, tmp_path_factory.mktemp("airlock"))
    yield server
    server.served.stop()


@pytest.fixture
def connect(pki: Pki, issuer: Issuer, airlock: OAuthServed, mode: str):
    """``async with connect(credentials) as (client, seen, storage)``:
    ``oauth_parts.sdk_client`` for this server in ``mode``."""
    return lambda credentials: sdk_client(airlock.resource, pki, issuer, credentials, mode)


async def test_the_sdk_finds_the_issuer_from_the_401_and_sees_only_its_scopes_tools(connect, airlock, issuer, mode):
    async with connect(READER) as (client, seen, storage):
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == ["lookup_price"]
        result = await client.call_tool("lookup_price", {"sku": "SKU-1001"})
        assert not result.is_error, result
        assert result.structured_content == {"result": 12.5}
        # restock exists (the writer sees it) but not for this token.
        with pytest.raises(MCPError, match="Unknown tool: restock"):
            await client.call_tool("restock", {"sku": "SKU-1001", "units": 1})
        # The token the SDK got: a JWT for this resource, with the scope the
        # issuer let the reader have of the two the SDK asked for.
        token = storage.tokens
        assert token is not None and token.scope == "catalog.read", token
        claims = jwt.decode(token.access_token, options={"verify_signature": False})
        assert claims["aud"] == airlock.resource and claims["iss"] == issuer.url, claims
        assert jwt.get_unverified_header(token.access_token)["alg"] == "RS256"

    base = airlock.resource.removesuffix("/mcp")
    flow = seen.requests
    # The flow, in order: a request without a token is refused with 401;
    # the resource's metadata (the URL its WWW-Authenticate named); the
    # issuer's metadata (RFC 8414, which oidc-provider 9 serves beside
    # OpenID Connect discovery); a token; the request again, with it.
    assert flow[:5] == [
        ("POST", airlock.resource, 401),
        ("GET", f"{base}/.well-known/oauth-protected-resource/mcp", 200),
        ("GET", f"{issuer.url}/.well-known/oauth-authorization-server", 200),
        ("POST", f"{issuer.url}/token", 200),
        ("POST", airlock.resource, 200),
    ], flow
    # One token for the whole session: no other 401, no other token request.
    assert [r for r in flow[5:] if r[2] == 401 or r[1].startswith(issuer.url)] == [], flow

    calls = [e for e in airlock.audit_lines() if e["tool"] == "lookup_price" and e.get("subject") == "reader"]
    assert calls, airlock.audit_lines()
    entry = calls[-1]
    assert entry["caller_kind"] == "oauth", entry
    assert entry["issuer"] == issuer.url, entry
    assert entry["subject"] == "reader", entry  # oidc-provider: a client-credentials token's sub is its client
    assert entry["client_id"] == "reader", entry
    assert entry["outcome"] == "ok", entry


async def test_a_token_with_the_write_scope_sees_and_calls_restock(connect, airlock, mode):
    async with connect(WRITER) as (client, _, _):
        tools = await client.list_tools()
        assert sorted(t.name for t in tools.tools) == ["lookup_price", "restock"]
        result = await client.call_tool("restock", {"sku": "SKU-1001", "units": 2})
        assert not result.is_error, result
    entry = [e for e in airlock.audit_lines() if e["tool"] == "restock" and e["outcome"] == "ok"][-1]
    assert (entry["caller_kind"], entry["subject"], entry["client_id"]) == ("oauth", "writer", "writer")
