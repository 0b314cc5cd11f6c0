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


# What the asking examples are granted: book_pickup elicits, suggest_title samples.
ASK_POLICY = """
[components.shipping]
ask = ["elicit"]

[components.wordstats]
ask = ["sample"]
"""


@pytest.fixture(scope="module")
def ask_policy(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("policy") / "airlock.toml"
    path.write_text(ASK_POLICY)
    return str(path)


@pytest.fixture(scope="module")
def served_granted(ask_policy: str) -> AsyncIterator[Served]:
    server = Served(EXAMPLES, start_timeout=600, args=("--policy", ask_policy))
    yield server
    server.stop()


@pytest.fixture
def granted(transport: str, mode: str, served_granted: Served, ask_policy: str):
    """The examples served with ASK_POLICY (over stdio: serve's own flags)."""
    return opener(["--policy", ask_policy, EXAMPLES], served_granted, transport, mode, timeout=60)


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


async def test_both_languages_offer_resources_prompts_and_completions(examples) -> None:
    """What the Python and JavaScript helpers bridge to the world ``server``:
    resources, a template (and its not-found), a prompt with an optional
    argument, completions."""
    from mcp import MCPError
    from mcp.types import PromptReference

    def wire(model):
        return model.model_dump(by_alias=True, exclude_none=True, mode="json")

    async with examples() as client:
        resources = {r["uri"]: r for r in wire(await client.list_resources())["resources"]}
        templates = {
            t["uriTemplate"]: t for t in wire(await client.list_resource_templates())["resourceTemplates"]
        }
        rates = wire(await client.read_resource("shipping://rates"))["contents"]
        eu = wire(await client.read_resource("shipping://rates/eu"))["contents"]
        german = wire(await client.read_resource("wordstats://stopwords/de"))["contents"]
        for missing in ("shipping://rates/mars", "wordstats://stopwords/fr"):
            with pytest.raises(MCPError) as caught:
                await client.read_resource(missing)
            assert caught.value.error.data == {"uri": missing}
        plan = wire(await client.get_prompt("plan_shipment", {"region": "eu", "weight_kg": "2"}))
        summary = wire(await client.get_prompt("summarize_text", {"text": "a b a"}))
        regions = wire(await client.complete(
            PromptReference(type="ref/prompt", name="plan_shipment"), {"name": "region", "value": "d"}))
        langs = wire(await client.complete(
            PromptReference(type="ref/prompt", name="summarize_text"), {"name": "lang", "value": ""}))
    assert resources["shipping://rates"] == {
        "uri": "shipping://rates",
        "name": "rates",
        "title": "Shipping rates",
        "description": "The price per parcel of each region, before weight and express.",
        "mimeType": "application/json",
    }
    assert resources["wordstats://stopwords"]["title"] == "Stop words"
    assert templates["shipping://rates/{region}"]["name"] == "region_rate"
    assert templates["wordstats://stopwords/{lang}"]["mimeType"] == "text/plain"
    assert rates == [{"uri": "shipping://rates", "mimeType": "application/json",
                      "text": '{"domestic": 4.5, "eu": 9.0, "world": 17.0}'}]
    assert eu == [{"uri": "shipping://rates/eu", "mimeType": "application/json",
                   "text": '{"region": "eu", "rate": 9.0, "days": 4}'}]
    assert german == [{"uri": "wordstats://stopwords/de", "mimeType": "text/plain",
                       "text": "der\ndie\ndas\nund"}]
    assert [m["content"]["text"] for m in plan["messages"]] == [
        "I need to ship parcels of 2 kg each to the region eu.",
        "Use shipping_quote to compare standard and express, and recommend one.",
    ]
    assert [m["content"]["text"] for m in summary["messages"]] == [
        "Summarize this text:",
        "a b a",
        "Call word_stats on it first and mention its three most frequent words.",
    ]
    assert regions["completion"]["values"] == ["domestic"]
    assert langs["completion"]["values"] == ["en", "de"]


async def test_both_languages_ask_the_client_where_granted(granted) -> None:
    """Python's elicit and JavaScript's sample, through the official SDK's
    callbacks, in both revisions (2025-11-25: requests during the call;
    2026-07-28: input_required and the retry)."""
    from mcp import types

    asked: list = []

    async def on_elicit(_ctx, params):
        asked.append(("elicit", params.message, params.requested_schema))
        return types.ElicitResult(action="accept", content={"date": "2026-12-24"})

    async def on_sample(_ctx, params):
        asked.append(("sample", [m.content.text for m in params.messages],
                      params.system_prompt, params.max_tokens))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="A Cat's Tale"),
            model="test-model", stop_reason="endTurn")

    async with granted(elicitation_callback=on_elicit, sampling_callback=on_sample) as client:
        pickup = await client.call_tool("book_pickup", {"region": "eu"})
        title = await client.call_tool("suggest_title", {"text": "The cat sat."})
    assert not pickup.is_error, text_of(pickup)
    assert pickup.structured_content == {"result": "pickup to eu booked for 2026-12-24"}
    assert not title.is_error, text_of(title)
    assert title.structured_content == {"result": "A Cat's Tale"}
    # On 2026-07-28 a tool runs again for each answer: each question is asked once.
    assert asked == [
        ("elicit", "When should the parcels to eu be picked up?", {
            "type": "object",
            "properties": {"date": {"type": "string", "format": "date", "description": "Pickup date"}},
            "required": ["date"],
        }),
        ("sample", ["Suggest a short title for this text:\nThe cat sat."],
         "Answer with the title only.", 30),
    ]


async def test_both_languages_do_without_an_answer(examples) -> None:
    """Without the grant, the helpers' AskError (kind denied) reaches the
    tool, which falls back: no request reaches the client."""
    from mcp import types

    asked: list = []

    async def on_elicit(_ctx, params):
        asked.append(params)
        return types.ElicitResult(action="decline")

    async with examples(elicitation_callback=on_elicit) as client:
        pickup = await client.call_tool("book_pickup", {"region": "world"})
        title = await client.call_tool(
            "suggest_title", {"text": "The cat sat on the mat today"})
    assert pickup.structured_content == {"result": "pickup to world booked for the next working day"}
    assert title.structured_content == {"result": "The cat sat on"}
    assert asked == []
