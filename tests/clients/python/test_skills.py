"""The MCP Skills extension (``io.modelcontextprotocol/skills``, SEP-2640)
through the official MCP Python SDK against ``airlock serve``, with the
skill ``catalog-pricing`` of ``components/catalog``: over stdio and
Streamable HTTP, in revision 2025-11-25 (``legacy``) and 2026-07-28
(``auto``).

The pinned SDK (``mcp`` 2.3.0, tests/clients/requirements.txt) does not
implement the extension's client side: it has no ``skills/list``,
``skills/get`` or ``resources/directory/read`` of its own (its source names
no skill). So these go out as raw JSON-RPC through the SDK's
``ClientSession.send_request`` — the SDK still stamps each request for the
negotiated revision and checks the answer's envelope — and a skill's files
are read with the SDK's own ``read_resource``, since every file is a
resource. The digests the host computed are recomputed here from the bytes
read back."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from mcp import MCPError
from mcp.types import Request
from pydantic import TypeAdapter

from conftest import ROOT

pytestmark = pytest.mark.anyio

EXTENSION = "io.modelcontextprotocol/skills"
SKILL = "skill://catalog-pricing/SKILL.md"
ARTICLES = "skill://catalog-pricing/references/articles.md"
ROOT_DIR = "skill://catalog-pricing"
SOURCE = ROOT / "components/catalog/skills/catalog-pricing"
ANY = TypeAdapter(dict[str, Any])


async def raw(client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One request the SDK has no method for, as JSON-RPC; its result."""
    request = Request[dict[str, Any], str](method=method, params=params)
    return await client.session.send_request(request, ANY)


async def read_bytes(client, uri: str) -> bytes:
    """A skill's file through the SDK's own resources/read."""
    read = (await client.read_resource(uri)).model_dump(by_alias=True, exclude_none=True, mode="json")
    [contents] = read["contents"]
    assert contents["uri"] == uri and contents["mimeType"] == "text/markdown", contents
    return contents["text"].encode()


async def test_the_sdk_sees_the_extension_announced(connect):
    async with connect() as client:
        extensions = client.server_capabilities.extensions or {}
    assert extensions[EXTENSION] == {"directoryRead": True}


async def test_lists_a_skill_and_reads_its_files_with_the_digests_listed(connect):
    async with connect() as client:
        listed = await raw(client, "skills/list", {})
        [entry] = [s for s in listed["skills"] if s["uri"] == SKILL]
        files = {f["uri"]: await read_bytes(client, f["uri"]) for f in entry["resources"]}
        got = await raw(client, "skills/get", {"uri": SKILL})
        root = await raw(client, "resources/directory/read", {"uri": ROOT_DIR})
        with pytest.raises(MCPError) as unknown:
            await raw(client, "skills/get", {"uri": "skill://no-such-skill/SKILL.md"})
        modern = client.protocol_version != "2025-11-25"
    assert list(entry["frontmatter"]) == ["name", "description", "license", "metadata"]
    assert entry["frontmatter"]["name"] == "catalog-pricing"
    assert entry["frontmatter"]["metadata"] == {"component": "catalog"}
    assert [f["uri"] for f in entry["resources"]] == [SKILL, ARTICLES]
    for listed_file in entry["resources"]:
        data = files[listed_file["uri"]]
        assert listed_file["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
        assert listed_file["size"] == len(data)
    assert files[SKILL] == (SOURCE / "SKILL.md").read_bytes()
    assert files[ARTICLES] == (SOURCE / "references/articles.md").read_bytes()
    assert got["skill"] == entry
    assert ("ttlMs" in listed) == modern, listed
    assert [r["uri"] for r in root["resources"]] == [SKILL, "skill://catalog-pricing/references"]
    assert root["resources"][1]["mimeType"] == "inode/directory"
    assert unknown.value.error.code == -32602
