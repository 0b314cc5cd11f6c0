"""Resources, resource templates, prompts and completions of a component
(``tests/components/conformance``, ``src/offers.rs``), through the official MCP
Python SDK against ``airlock serve``: over stdio and Streamable HTTP, in
revision 2025-11-25 (``legacy``) and 2026-07-28 (``auto``). Exact
assertions of what the conformance suite checks only loosely: the listed
declarations, text and blob contents, a template read, prompts with
arguments, an embedded resource and an image, completions, and a resource
update reaching a subscribed client (``resources/subscribe`` on 2025-11-25,
``subscriptions/listen`` on 2026-07-28)."""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio
import pytest
from mcp import MCPError
from mcp.types import PromptReference, ResourceTemplateReference

from conftest import ROOT

pytestmark = pytest.mark.anyio

RED_PNG = base64.b64encode((ROOT / "tests/components/conformance/data/red.png").read_bytes()).decode()
STATIC_TEXT = "This is the content of the static text resource."
WATCHED = "test://watched-resource"


def wire(model: Any) -> Any:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def ours(items: list[dict[str, Any]], key: str, prefix: str) -> dict[str, dict[str, Any]]:
    """The listed items whose ``key`` starts with ``prefix``, by that key."""
    return {i[key]: i for i in items if i[key].startswith(prefix)}


async def test_lists_resources_and_templates(connect):
    async with connect() as client:
        listed = wire(await client.list_resources())
        templates = wire(await client.list_resource_templates())
    resources = ours(listed["resources"], "uri", "test://")
    assert resources == {
        "test://static-text": {
            "uri": "test://static-text",
            "name": "static-text",
            "title": "Static text",
            "description": "A static text resource (`resources-read-text`).",
            "mimeType": "text/plain",
        },
        "test://static-binary": {
            "uri": "test://static-binary",
            "name": "static-binary",
            "title": "Static binary",
            "description": "A static binary resource: a 1×1 red PNG (`resources-read-binary`).",
            "mimeType": "image/png",
        },
        WATCHED: {
            "uri": WATCHED,
            "name": "watched-resource",
            "title": "Watched resource",
            "description": "A resource clients subscribe to (`resources-subscribe`); the tool\n"
            "`test_update_watched_resource` says it changed.",
            "mimeType": "text/plain",
        },
    }
    assert ours(templates["resourceTemplates"], "uriTemplate", "test://") == {
        "test://template/{id}/data": {
            "uriTemplate": "test://template/{id}/data",
            "name": "template-data",
            "title": "Template data",
            "description": "Data for one ID, as JSON (`resources-templates-read`).",
            "mimeType": "application/json",
        }
    }


async def test_reads_text_blob_and_template(connect):
    async with connect() as client:
        text = wire(await client.read_resource("test://static-text"))
        blob = wire(await client.read_resource("test://static-binary"))
        data = wire(await client.read_resource("test://template/123/data"))
    assert text["contents"] == [
        {"uri": "test://static-text", "mimeType": "text/plain", "text": STATIC_TEXT}
    ]
    assert blob["contents"] == [
        {"uri": "test://static-binary", "mimeType": "image/png", "blob": RED_PNG}
    ]
    assert data["contents"] == [
        {
            "uri": "test://template/123/data",
            "mimeType": "application/json",
            "text": '{"id":"123","templateTest":true,"data":"Data for ID: 123"}',
        }
    ]
    assert json.loads(data["contents"][0]["text"]) == {
        "id": "123", "templateTest": True, "data": "Data for ID: 123",
    }


async def test_reading_what_is_not_there_is_an_error(connect):
    """Each revision's code, with the URI as data: -32002 on 2025-11-25,
    invalid params (-32602, SEP-2164) on 2026-07-28."""
    async with connect() as client:
        code = -32002 if client.protocol_version == "2025-11-25" else -32602
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("test://no-such-resource")
        with pytest.raises(MCPError) as too_deep:
            await client.read_resource("test://template/1/2/data")
    for caught, uri in ((unknown, "test://no-such-resource"), (too_deep, "test://template/1/2/data")):
        error = caught.value.error
        assert (error.code, error.data) == (code, {"uri": uri}), error
        assert error.message.startswith(f'Resource not found: no resource "{uri}"'), error


async def test_lists_prompts_with_their_arguments(connect):
    async with connect() as client:
        listed = wire(await client.list_prompts())
    prompts = ours(listed["prompts"], "name", "test_")
    assert prompts["test_simple_prompt"] == {
        "name": "test_simple_prompt",
        "title": "Simple prompt",
        "description": "A simple prompt without arguments (`prompts-get-simple`).",
        "arguments": [],
    }
    assert prompts["test_prompt_with_arguments"] == {
        "name": "test_prompt_with_arguments",
        "title": "Prompt with arguments",
        "description": "A prompt with two required arguments (`prompts-get-with-args`).",
        "arguments": [
            {"name": "arg1", "description": "First test argument", "required": True},
            {"name": "arg2", "description": "Second test argument", "required": True},
        ],
    }
    assert prompts["test_prompt_with_embedded_resource"]["arguments"] == [
        {"name": "resourceUri", "description": "URI of the resource to embed", "required": True}
    ]
    assert prompts["test_prompt_with_image"]["arguments"] == []


async def test_gets_prompts(connect):
    async with connect() as client:
        simple = wire(await client.get_prompt("test_simple_prompt"))
        args = wire(await client.get_prompt(
            "test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"}))
        embedded = wire(await client.get_prompt(
            "test_prompt_with_embedded_resource", {"resourceUri": "test://example-resource"}))
        image = wire(await client.get_prompt("test_prompt_with_image"))
    assert simple["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}
    ]
    assert args["messages"] == [
        {"role": "user", "content": {
            "type": "text", "text": "Prompt with arguments: arg1='hello', arg2='world'"}}
    ]
    assert embedded["messages"] == [
        {"role": "user", "content": {"type": "resource", "resource": {
            "uri": "test://example-resource",
            "mimeType": "text/plain",
            "text": "Embedded resource content for testing.",
        }}},
        {"role": "user", "content": {
            "type": "text", "text": "Please process the embedded resource above."}},
    ]
    assert image["messages"] == [
        {"role": "user", "content": {"type": "image", "data": RED_PNG, "mimeType": "image/png"}},
        {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}},
    ]


async def test_a_prompt_without_its_required_argument_is_invalid(connect):
    async with connect() as client:
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("test_prompt_with_arguments", {"arg1": "hello"})
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("no_such_prompt")
    assert missing.value.error.code == -32602
    assert "arg2" in missing.value.error.message
    assert unknown.value.error.code == -32602


async def test_completes_prompt_arguments_and_template_variables(connect):
    async with connect() as client:
        arg1 = wire(await client.complete(
            PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
            {"name": "arg1", "value": "par"}))
        narrower = wire(await client.complete(
            PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
            {"name": "arg1", "value": "pari"}))
        template = wire(await client.complete(
            ResourceTemplateReference(type="ref/resource", uri="test://template/{id}/data"),
            {"name": "id", "value": "2"}))
        nothing = wire(await client.complete(
            PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
            {"name": "arg2", "value": "x"}))
    assert arg1["completion"]["values"] == ["paris", "park", "party"]
    assert arg1["completion"].get("hasMore", False) is False
    assert narrower["completion"]["values"] == ["paris"]
    assert template["completion"]["values"] == ["222"]
    assert nothing["completion"]["values"] == []


async def test_a_subscribed_client_hears_of_an_update(connect, mode):
    """2025-11-25: ``resources/subscribe``, then ``notifications/resources/updated``
    while ``test_update_watched_resource`` runs; 2026-07-28: the same event on
    a ``subscriptions/listen`` stream."""
    updated: list[str] = []
    got = anyio.Event()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            updated.append(root.params.uri)
            got.set()

    async with connect(message_handler=on_message) as client:
        if client.protocol_version == "2025-11-25":
            await client.subscribe_resource(WATCHED)
            result = await client.call_tool("test_update_watched_resource", {})
            assert not result.is_error
            with anyio.fail_after(10):
                await got.wait()
            assert updated == [WATCHED]
            await client.unsubscribe_resource(WATCHED)
            updated.clear()
            await client.call_tool("test_update_watched_resource", {})
            await anyio.sleep(0.5)
            assert updated == [], "no update after unsubscribing"
        else:
            assert mode == "auto" and client.protocol_version == "2026-07-28"
            async with client.listen(resource_subscriptions=[WATCHED]) as sub:
                assert list(sub.honored.resource_subscriptions or []) == [WATCHED]
                result = await client.call_tool("test_update_watched_resource", {})
                assert not result.is_error
                with anyio.fail_after(10):
                    async for event in sub:
                        assert getattr(event, "uri", None) == WATCHED, event
                        break
