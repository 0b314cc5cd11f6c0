"""The Python and JavaScript example tools (``target/examples``, built from
source by ``cargo xtask build``), served by ``airlock serve`` and called by
the official MCP Python SDK over stdio and Streamable HTTP: listing,
argument coercion by the runtime, and a tool error from each language."""

from __future__ import annotations

import os
from typing import AsyncIterator

import pytest

from conftest import ROOT, Served, opener

pytestmark = pytest.mark.anyio

EXAMPLES = os.environ.get("AIRLOCK_EXAMPLES", str(ROOT / "target/examples"))


@pytest.fixture(scope="module")
def served_examples() -> AsyncIterator[Served]:
    # The first start compiles the 18 MB Python component (tens of seconds
    # on a busy machine); it is cached for the stdio runs that follow.
    server = Served(EXAMPLES, start_timeout=600)
    yield server
    server.stop()


@pytest.fixture
def examples(transport: str, mode: str, served_examples: Served):
    return opener([EXAMPLES], served_examples, transport, mode, timeout=60)


def text_of(result) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


async def test_both_languages_are_listed(examples) -> None:
    async with examples() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= {"shipping_quote", "word_stats"}
    shipping = tools["shipping_quote"]
    parcels = shipping.input_schema["properties"]["parcels"]
    assert (parcels["type"], parcels["default"]) == ("integer", 1)
    assert shipping.annotations.read_only_hint is True
    assert shipping.annotations.destructive_hint is False
    assert tools["word_stats"].annotations.open_world_hint is False


async def test_python_tool_coerces_and_fails_cleanly(examples) -> None:
    async with examples() as client:
        ok = await client.call_tool(
            "shipping_quote",
            {"destination": "eu", "weight_kg": "2.5", "parcels": "42", "reference": "PO-7"},
        )
        assert not ok.is_error, text_of(ok)
        assert ok.structured_content == {
            "destination": "eu",
            "parcels": 42,
            "total": 472.5,
            "days": 4,
            "notes": ["reference: PO-7"],
        }
        failed = await client.call_tool("shipping_quote", {"destination": "eu", "weight_kg": 50})
        assert failed.is_error
        assert text_of(failed) == "a parcel must weigh more than 0 and at most 30 kg, not 50.0"


async def test_js_tool_coerces_and_fails_cleanly(examples) -> None:
    async with examples() as client:
        ok = await client.call_tool(
            "word_stats", {"text": "the cat and the hat and the bat", "top": "42"}
        )
        assert not ok.is_error, text_of(ok)
        assert ok.structured_content["words"] == 8
        assert ok.structured_content["top"][0] == {"word": "the", "count": 3}
        failed = await client.call_tool("word_stats", {"text": "   "})
        assert failed.is_error
        assert text_of(failed) == "the text is empty: there is nothing to count"
        refused = await client.call_tool("word_stats", {"text": "x", "top": "soon"})
        assert refused.is_error
        assert text_of(refused) == 'Parameter "top" expects an integer, got "soon"'
