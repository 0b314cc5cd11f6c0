"""Replicas behind HAProxy with TLS on each of them, and access tokens from a
real authorization server (oidc-provider): a cluster of its own beside
``test_replicas``' plain-HTTP ones — two ``airlock serve --state --tls-cert``
replicas sharing Redis, HAProxy (the documented ``docs/deploy/haproxy.cfg``)
with HTTPS on its ``bind`` and ``ssl verify required ca-file`` to each
replica, and one ``[oauth]`` policy whose resource is the balancer's URL,
the address clients use.

Checked: a token works on every replica and through the balancer (and a
token for another resource on none of them); the official SDK's OAuth
client works through the balancer in both modes; a task made with a token
is its subject's on every replica — polled through another replica by the
same subject, unknown there to another subject."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import httpx2
import pytest

from conftest import free_port
from oauth_parts import READER, WRITER, Issuer, Pki, access_token, oauth_policy, sdk_client
from test_replicas import CATALOG, CONFORMANCE, MODERN, TASKS, Balancer, Redis, Replica

# catalog.read also gives test_long_task, the conformance component's task.
SCOPES = {"catalog.read": ["lookup_price", "test_long_task"], "catalog.write": ["restock"]}
READER_TOOLS = ["lookup_price", "test_long_task"]


@pytest.fixture(scope="module")
def tls_cluster(pki: Pki, issuer: Issuer):
    """Redis, two HTTPS replicas and HAProxy over HTTPS; their resource is
    HAProxy's URL, so its port is chosen before the replicas start (and not
    chosen again: a process taking it meanwhile fails the fixture, with
    HAProxy's 15 s wait, rather than restarting the replicas)."""
    with tempfile.TemporaryDirectory() as workdir:
        folder = Path(workdir)
        port = free_port()
        resource = f"https://127.0.0.1:{port}/mcp"
        policy = folder / "airlock.toml"
        policy.write_text(oauth_policy(resource, issuer.url, pki.ca, scopes=SCOPES))
        tls = ("--tls-cert", str(pki.cert), "--tls-key", str(pki.key))
        redis = Redis()
        replicas: list[Replica] = []
        try:
            for n in (1, 2):
                replicas.append(Replica(redis, f"o{n}", policy, served=[CONFORMANCE, CATALOG], extra=tls))
            balancer = Balancer(replicas, folder, tls=pki, port=port)
            try:
                assert balancer.url == resource
                yield replicas, balancer
            finally:
                balancer.stop()
        finally:
            for replica in replicas:
                replica.stop()
            redis.stop()


@pytest.fixture(scope="module")
def http(pki: Pki):
    with httpx2.Client(verify=pki.client_context(), timeout=30) as client:
        yield client


def modern(http: httpx2.Client, base: str, token: str | None, method: str, params: dict,
           name: str | None = None, id: int = 1) -> tuple[httpx2.Response, dict | None]:
    """A 2026-07-28 request (declaring the tasks extension) with ``token``;
    the response and its JSON-RPC message (JSON, or the last SSE event)."""
    params = {**params, "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "replica-oauth-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
    }}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    response = http.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": id, "method": method, "params": params},
                         headers=headers)
    text = response.text
    if text.startswith("event:") or text.startswith("data:"):
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    try:
        return response, json.loads(text)
    except json.JSONDecodeError:
        return response, None


def tool_names(http: httpx2.Client, base: str, token: str) -> list[str]:
    response, message = modern(http, base, token, "tools/list", {})
    assert response.status_code == 200, (base, response.status_code, response.text)
    assert message is not None
    return sorted(t["name"] for t in message["result"]["tools"])


def test_a_token_works_on_every_replica_and_through_the_balancer(tls_cluster, pki, issuer, http):
    replicas, balancer = tls_cluster
    reader = access_token(pki, issuer, READER, balancer.url)
    writer = access_token(pki, issuer, WRITER, balancer.url)
    metadata = balancer.base + "/.well-known/oauth-protected-resource/mcp"
    for base in [r.base for r in replicas] + [balancer.base]:
        assert tool_names(http, base, reader) == READER_TOOLS, base
        assert tool_names(http, base, writer) == sorted([*READER_TOOLS, "restock"]), base
        response, message = modern(http, base, reader, "tools/call", {
            "name": "lookup_price", "arguments": {"sku": "SKU-1001"}}, name="lookup_price")
        assert response.status_code == 200 and message is not None, response.text
        assert message["result"]["structuredContent"] == {"result": 12.5}, message
        # Without a token: 401, pointing at the resource's metadata — the
        # balancer's address, whichever replica answers.
        response, _ = modern(http, base, None, "tools/list", {})
        assert response.status_code == 401, base
        assert response.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{metadata}", scope="catalog.read catalog.write"'
        ), base
        document = http.get(metadata).json()
        assert document["resource"] == balancer.url
        assert document["authorization_servers"] == [issuer.url]


def test_a_token_for_another_resource_works_on_no_replica(tls_cluster, pki, issuer, http):
    replicas, balancer = tls_cluster
    # A token for replica o1's own address, not for the cluster's resource.
    elsewhere = access_token(pki, issuer, READER, replicas[0].url)
    for base in [r.base for r in replicas] + [balancer.base]:
        response, _ = modern(http, base, elsewhere, "tools/list", {})
        assert response.status_code == 401, (base, response.text)
        challenge = response.headers["www-authenticate"]
        assert 'error="invalid_token"' in challenge, challenge
        assert "for another resource" in challenge, challenge


def test_a_task_is_its_subjects_on_every_replica(tls_cluster, pki, issuer, http):
    (first, second), balancer = tls_cluster
    reader = access_token(pki, issuer, READER, balancer.url)
    writer = access_token(pki, issuer, WRITER, balancer.url)
    response, created = modern(http, first.base, reader, "tools/call", {
        "name": "test_long_task", "arguments": {"seconds": 1}}, name="test_long_task")
    assert response.status_code == 200 and created is not None, response.text
    result = created["result"]
    assert result["resultType"] == "task", result
    task_id = result["taskId"]

    # Another subject's token does not find it, on either replica.
    for replica in (first, second):
        response, other = modern(http, replica.base, writer, "tasks/get", {"taskId": task_id}, name=task_id)
        assert other is not None and other.get("error", {}).get("message") == (
            "Failed to retrieve task: Task not found"
        ), (replica.name, response.status_code, other)

    # Its own subject polls it through the other replica until it is done.
    deadline = time.monotonic() + 30
    while True:
        response, got = modern(http, second.base, reader, "tasks/get", {"taskId": task_id}, name=task_id)
        assert response.status_code == 200 and got is not None and "result" in got, (response.status_code, got)
        if got["result"]["status"] == "completed":
            break
        assert got["result"]["status"] == "working", got
        assert time.monotonic() < deadline, "the task did not complete within 30 s"
        time.sleep(0.2)
    # And through the balancer, whichever replica answers.
    response, got = modern(http, balancer.base, reader, "tasks/get", {"taskId": task_id}, name=task_id)
    assert got is not None and got["result"]["status"] == "completed", got


@pytest.mark.anyio
async def test_the_sdks_oauth_client_works_through_the_balancer(tls_cluster, pki, issuer, mode):
    _, balancer = tls_cluster
    async with sdk_client(balancer.url, pki, issuer, READER, mode) as (client, seen, _):
        tools = await client.list_tools()
        assert sorted(t.name for t in tools.tools) == READER_TOOLS
        # Enough calls to go round both replicas; a 2025-11-25 session stays
        # on the replica that opened it.
        for _ in range(4):
            result = await client.call_tool("lookup_price", {"sku": "SKU-1001"})
            assert result.structured_content == {"result": 12.5}, result
    assert [s for _, _, s in seen.requests].count(401) == 1, seen.requests
