"""The official MCP Python SDK (``mcp`` 2.x) against ``airlock serve``, over
stdio and Streamable HTTP, in its ``auto`` mode (probes ``server/discover``,
i.e. revision 2026-07-28, and falls back to the handshake) and its
``legacy`` mode (``initialize``, revision 2025-11-25).

These assert exactly what the conformance suite only checks loosely, on the
same tools (``tests/components/conformance``), plus the served example tools."""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio
import pytest
from mcp import MCPError
from mcp.types import LoggingMessageNotificationParams, PaginatedRequestParams

pytestmark = pytest.mark.anyio

JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string", "examples": ["Ada Lovelace"]},
        "address": {
            "$ref": "#/$defs/address",
            "examples": [{"street": "12 St James's Square", "city": "London"}],
        },
        "contactMethod": {"type": "string", "enum": ["phone", "email"], "examples": ["phone"]},
        "phone": {"type": "string", "examples": ["+44 20 7946 0958"]},
        "email": {"type": "string", "examples": ["ada@example.com"]},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

CONFORMANCE_TOOLS = {
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_logging_tool",
    "test_tool_with_progress",
    "test_error_handling",
    "test_long_task",
    "json_schema_2020_12_tool",
}


def wire(model: Any) -> Any:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


async def all_tools(client) -> list[dict[str, Any]]:
    tools, cursor = [], None
    while True:
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await client.session.list_tools(params=params)
        tools += [wire(t) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return tools


async def test_negotiated_revision(connect, mode):
    async with connect() as client:
        name = client.server_info.name if client.server_info else None
        version = client.protocol_version
    assert name == "airlock"
    if mode == "legacy":
        assert version == "2025-11-25"
    else:
        # auto: server/discover, then the newest revision both speak.
        assert version == "2026-07-28"


async def test_list_tools(connect):
    async with connect() as client:
        tools = {t["name"]: t for t in await all_tools(client)}
    assert CONFORMANCE_TOOLS <= tools.keys()
    assert {"lookup_price", "restock", "export_orders"} <= tools.keys()
    for tool in tools.values():
        assert tool["description"] and tool["inputSchema"]["type"] == "object"
        hints = tool["annotations"]
        for hint in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
            assert isinstance(hints[hint], bool), (tool["name"], hint)
        assert tool["execution"]["taskSupport"] in ("forbidden", "optional", "required")
    assert tools["json_schema_2020_12_tool"]["inputSchema"] == JSON_SCHEMA_2020_12
    price = tools["lookup_price"]
    assert price["title"] == "Look up price"
    assert price["outputSchema"] == {
        "type": "object",
        "properties": {"result": {"type": "number"}},
        "required": ["result"],
        "x-airlock-wrapped": True,
    }
    assert price["icons"][0]["mimeType"] == "image/svg+xml"
    assert tools["restock"]["annotations"]["destructiveHint"] is True
    assert tools["test_long_task"]["execution"]["taskSupport"] == "required"


async def test_structured_output(connect):
    async with connect() as client:
        result = await client.call_tool("lookup_price", {"sku": "SKU-1001"})
    assert not result.is_error
    assert result.structured_content == {"result": 12.5}
    assert [wire(c) for c in result.content] == [{"type": "text", "text": '{"result":12.5}'}]


async def test_content_blocks(connect):
    async with connect() as client:
        text = await client.call_tool("test_simple_text")
        image = await client.call_tool("test_image_content", {})
        audio = await client.call_tool("test_audio_content", {})
        embedded = await client.call_tool("test_embedded_resource", {})
        mixed = await client.call_tool("test_multiple_content_types", {})
    assert [wire(c) for c in text.content] == [
        {"type": "text", "text": "This is a simple text response for testing."}
    ]
    [block] = image.content
    assert block.type == "image" and block.mime_type == "image/png"
    assert base64.b64decode(block.data).startswith(b"\x89PNG\r\n\x1a\n")
    [block] = audio.content
    assert block.type == "audio" and block.mime_type == "audio/wav"
    wav = base64.b64decode(block.data)
    assert wav[:4] == b"RIFF" and wav[8:12] == b"WAVE"
    assert [wire(c) for c in embedded.content] == [
        {
            "type": "resource",
            "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            },
        }
    ]
    blocks = [wire(c) for c in mixed.content]
    assert [b["type"] for b in blocks] == ["text", "image", "resource"]
    assert blocks[0]["text"] == "Multiple content types test:"
    assert blocks[2]["resource"] == {
        "uri": "test://mixed-content-resource",
        "mimeType": "application/json",
        "text": '{"test":"data","value":123}',
    }
    for result in (text, image, audio, embedded, mixed):
        assert result.is_error is False and result.structured_content is None


async def test_tool_error(connect):
    async with connect() as client:
        result = await client.call_tool("test_error_handling", {})
    assert result.is_error is True
    assert [wire(c) for c in result.content] == [
        {"type": "text", "text": "This tool intentionally returns an error for testing"}
    ]


async def test_argument_error_is_a_tool_error(connect):
    async with connect() as client:
        result = await client.call_tool(
            "export_orders", {"customer_id": "CUST-42", "max_age_days": "soon"}
        )
    assert result.is_error is True
    assert result.content[0].text == 'Parameter "max_age_days" expects an integer, got "soon"'


async def test_unknown_tool_is_a_protocol_error(connect):
    async with connect() as client:
        with pytest.raises(MCPError) as error:
            await client.call_tool("no_such_tool", {})
    assert error.value.error.code == -32602 or error.value.error.code == -32601
    assert "no_such_tool" in error.value.error.message


async def test_destructive_call_is_refused(connect):
    """restock is destructive; the default policy denies it, and the guest
    never runs (no /data folder would be touched)."""
    async with connect() as client:
        result = await client.call_tool("restock", {"sku": "SKU-1001", "units": 1})
    assert result.is_error is True
    assert result.content[0].text == (
        "not permitted: restock is destructive and the operator's policy does not allow "
        "destructive calls for it"
    )


async def test_logging(connect, mode):
    messages: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        messages.append(params)

    kwargs: dict[str, Any] = {"logging_callback": on_log}
    if mode == "auto":
        kwargs["log_level"] = "debug"  # the 2026-07-28 opt-in; ignored on a handshake
    async with connect(**kwargs) as client:
        if client.protocol_version == "2025-11-25":
            await client.set_logging_level("debug")
        result = await client.call_tool("test_tool_with_logging", {})
        with anyio.fail_after(5):
            while len(messages) < 3:
                await anyio.sleep(0.02)
        # Above the level: nothing arrives.
        if client.protocol_version == "2025-11-25":
            await client.set_logging_level("warning")
            await client.call_tool("test_tool_with_logging", {})
            await anyio.sleep(0.3)
    assert result.is_error is False
    assert [(m.level, m.data) for m in messages] == [
        ("info", "Tool execution started"),
        ("info", "Tool processing data"),
        ("info", "Tool execution completed"),
    ]


async def test_progress(connect):
    reports: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    async with connect() as client:
        result = await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
        with anyio.fail_after(5):
            while len(reports) < 3:
                await anyio.sleep(0.02)
    assert result.is_error is False
    assert reports == [(0, 100, "started"), (50, 100, "half way"), (100, 100, "done")]


async def test_required_task_refuses_a_plain_call(connect):
    async with connect() as client:
        version = client.protocol_version
        with pytest.raises(MCPError) as error:
            await client.call_tool("test_long_task", {"seconds": 1})
    if version == "2025-11-25":
        # Without the `task` parameter: method not found, as 2025-11-25 asks.
        assert error.value.error.code == -32601
        assert "taskSupport" in error.value.error.message
    else:
        # 2026-07-28: the client did not declare the tasks extension, a
        # required client capability (MissingRequiredClientCapabilityError).
        assert error.value.error.code == -32021
        assert error.value.error.data["requiredCapabilities"] == {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }
