"""Components written for other hosts (``target/test-components``, built by
``cargo xtask build``), served by ``airlock serve`` and used by the official
MCP Python SDK over stdio and Streamable HTTP: a plain-function component
(every row of the WIT type table: exact schemas, exact values, errors) and a
wasmcp tools component (its annotations as hints, its content blocks)."""

from __future__ import annotations

import base64
from typing import Any, AsyncIterator

import pytest
from mcp import Client

from conftest import TEST_COMPONENTS, Served, opener

pytestmark = pytest.mark.anyio

FILES = [f"{TEST_COMPONENTS}/plain.wasm", f"{TEST_COMPONENTS}/wasmcp_tools.wasm"]

NO_HINTS = {
    "readOnlyHint": False,
    "destructiveHint": False,
    "idempotentHint": False,
    "openWorldHint": False,
}
U16 = {"minimum": 0, "maximum": 65535}
S32 = {"minimum": -(2**31), "maximum": 2**31 - 1}
S64 = {"minimum": -(2**63), "maximum": 2**63 - 1}


@pytest.fixture(scope="module")
def served_kinds() -> AsyncIterator[Served]:
    server = Served(FILES, start_timeout=600)
    yield server
    server.stop()


@pytest.fixture
def kinds(transport: str, mode: str, served_kinds: Served):
    return opener(FILES, served_kinds, transport, mode, timeout=60)


def wire(model: Any) -> Any:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


async def listed(client: Client) -> dict[str, dict[str, Any]]:
    tools, cursor = {}, None
    while True:
        page = await client.session.list_tools(params={"cursor": cursor} if cursor else None)
        tools.update({t.name: wire(t) for t in page.tools})
        cursor = page.next_cursor
        if not cursor:
            return tools


async def test_plain_functions_have_exact_schemas(kinds) -> None:
    async with kinds() as client:
        tools = await listed(client)
    add = tools["add"]
    assert add == {
        "name": "add",
        "description": "`add: func(a: s64, b: s64) -> s64` (no doc comment in its WIT).",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer", **S64}, "b": {"type": "integer", **S64}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {"result": {"type": "integer", **S64}},
            "required": ["result"],
        },
        "annotations": NO_HINTS,
        "execution": {"taskSupport": "forbidden"},
    }
    assert tools["types.echo-option"]["inputSchema"] == {
        "type": "object",
        "properties": {"v": {"type": ["integer", "null"], **U16}},
        "required": [],
        "additionalProperties": False,
    }
    assert tools["types.echo-tuple"]["inputSchema"]["properties"]["v"] == {
        "type": "array",
        "prefixItems": [
            {"type": "string"},
            {"type": "integer", "minimum": 0, "maximum": 255},
            {"type": "boolean"},
        ],
        "items": False,
        "minItems": 3,
    }
    assert tools["types.echo-shape"]["inputSchema"]["properties"]["v"] == {
        "oneOf": [
            {
                "type": "object",
                "properties": {"circle": {"type": "number"}},
                "required": ["circle"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"square": {"type": "number"}},
                "required": ["square"],
                "additionalProperties": False,
            },
            {"const": "dot"},
        ]
    }
    assert tools["types.echo-perms"]["outputSchema"]["properties"]["result"] == {
        "type": "array",
        "items": {"type": "string", "enum": ["read", "write", "exec"]},
        "uniqueItems": True,
    }
    assert tools["types.echo-color"]["inputSchema"]["properties"]["v"] == {
        "type": "string",
        "enum": ["red", "green", "blue"],
    }
    assert tools["types.divide"]["outputSchema"] == {
        "type": "object",
        "properties": {"result": {"type": "integer", **S32}},
        "required": ["result"],
    }


@pytest.mark.parametrize(
    "tool, value",
    [
        ("types.echo-s64", -(2**63)),
        ("types.echo-u64", 2**64 - 1),
        ("types.echo-f64", -0.125),
        ("types.echo-char", "ß"),
        ("types.echo-bytes", base64.b64encode(b"\x00\xff\x10\x82").decode()),
        ("types.echo-list", [0, 1, 4294967295]),
        ("types.echo-option", 9),
        ("types.echo-result", {"err": 3}),
        ("types.echo-tuple", ["x", 7, False]),
        ("types.echo-shape", {"circle": 2.0}),
        ("types.echo-shape", "dot"),
        ("types.echo-color", "blue"),
        ("types.echo-perms", ["read", "exec"]),
    ],
)
async def test_plain_values_round_trip_exactly(kinds, tool: str, value: Any) -> None:
    async with kinds() as client:
        result = await client.call_tool(tool, {"v": value})
    assert result.is_error is False
    assert result.structured_content == {"result": value}


async def test_plain_records_errors_and_refusals(kinds) -> None:
    async with kinds() as client:
        point = await client.call_tool("types.echo-point", {"v": {"x": 1.5, "y": -2.0}})
        divided = await client.call_tool("types.divide", {"a": 7, "b": 2})
        by_zero = await client.call_tool("types.divide", {"a": 7, "b": 0})
        coerced = await client.call_tool("add", {"a": "40", "b": 2})
        too_big = await client.call_tool("types.echo-u8", {"v": 256})
        none = await client.call_tool("types.echo-option", {})
    # A record is the structured result as it is.
    assert point.structured_content == {"x": 1.5, "y": -2.0}
    assert divided.structured_content == {"result": 3}
    assert by_zero.is_error is True
    assert [wire(c) for c in by_zero.content] == [{"type": "text", "text": "cannot divide 7 by 0"}]
    assert coerced.structured_content == {"result": 42}
    assert too_big.is_error is True
    assert too_big.content[0].text == 'Parameter "v": 256 is greater than the maximum of 255'
    assert none.structured_content == {}


async def test_wasmcp_tools_annotations_and_content(kinds) -> None:
    async with kinds() as client:
        tools = await listed(client)
        echo = await client.call_tool("echo", {"text": "grüße"})
        media = await client.call_tool("media", {})
        failed = await client.call_tool("fail", {})
    assert tools["echo"]["title"] == "Echo"
    assert tools["echo"]["annotations"] == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
        "title": "Echo",
    }
    assert tools["echo"]["icons"] == [
        {"src": "https://example.com/echo.png", "mimeType": "image/png", "sizes": ["48x48"]}
    ]
    # A tool that declares no annotations gets none: the strictest sandbox.
    assert tools["bare"]["annotations"] == NO_HINTS
    assert echo.structured_content == {"echo": "grüße"}
    assert [wire(c) for c in echo.content] == [{"type": "text", "text": "grüße"}]
    assert [wire(c) for c in media.content] == [
        {"type": "image", "data": base64.b64encode(b"\x89PNG").decode(), "mimeType": "image/png"},
        {"type": "audio", "data": base64.b64encode(b"RIFF").decode(), "mimeType": "audio/wav"},
        {
            "type": "resource_link",
            "uri": "file:///data/report.csv",
            "name": "report",
            "title": "Report",
            "mimeType": "text/csv",
            "size": 42,
        },
        {
            "type": "resource",
            "resource": {"uri": "memo://today", "mimeType": "text/plain", "text": "remember the milk"},
        },
        {"type": "resource", "resource": {"uri": "memo://raw", "blob": "AAEC"}},
    ]
    assert failed.is_error is True
    assert [wire(c) for c in failed.content] == [
        {"type": "text", "text": "the tool failed on purpose"}
    ]
