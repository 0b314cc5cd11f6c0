"""``/rpc``, the plain JSON-RPC 2.0 endpoint, with plain HTTP requests.

``runtime/tests/serve_http.rs`` (``rpc_endpoint_rules``) already covers named
and positional params, a notification's 204, -32700, an empty batch, an
object id, a wrong ``jsonrpc``, -32601, a missing argument and a type error
with ``data.parameter``, a refused destructive call, a mixed batch and a
batch of notifications, leaks, and ``/rpc/describe``. These add the rest of
the issue's rules, on the conformance tools."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

ERROR_TEXT = "This tool intentionally returns an error for testing"


def post(served, body: Any, raw: bytes | None = None) -> tuple[int, dict[str, str], Any]:
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(
        served.base + "/rpc", data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, headers, text = response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        status, headers, text = error.code, dict(error.headers), error.read()
    return status, {k.lower(): v for k, v in headers.items()}, json.loads(text) if text else None


def call(method: str, params: Any = None, id: Any = 1) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def test_content_only_result_is_the_content_blocks(served):
    status, headers, body = post(served, call("test_simple_text"))
    assert status == 200 and headers["content-type"] == "application/json"
    assert body == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": [{"type": "text", "text": "This is a simple text response for testing."}],
    }


@pytest.mark.parametrize("id", ["a-string", 7, 0, -3, None])
def test_ids_string_number_or_null_are_echoed(served, id):
    _, _, body = post(served, call("test_simple_text", id=id))
    assert body["id"] == id and "result" in body


@pytest.mark.parametrize("id", [True, [1], {"n": 1}])
def test_other_ids_are_invalid_requests(served, id):
    status, _, body = post(served, call("test_simple_text", id=id))
    assert status == 200
    assert body["id"] is None and body["error"]["code"] == -32600


def test_tool_failure_is_in_the_server_error_range_with_the_tools_message(served):
    status, _, body = post(served, call("test_error_handling"))
    assert status == 200
    assert body["error"]["code"] == -32000
    assert body["error"]["message"] == ERROR_TEXT
    _, _, body = post(served, call("lookup_price", {"sku": "SKU-9"}))
    assert body["error"] == {
        "code": -32000,
        "message": 'unknown article "SKU-9"',
        "data": {"kind": "tool-error"},
    }


def test_failing_notification_is_still_204(served):
    status, _, body = post(served, {"jsonrpc": "2.0", "method": "test_error_handling"})
    assert status == 204 and body is None


@pytest.mark.parametrize(
    "params, code, parameter",
    [
        ({"sku": "SKU-1001", "color": "red"}, -32602, "color"),
        ({}, -32602, "sku"),
        (["SKU-1001", "extra"], -32602, None),
        (3, -32600, None),
        ("SKU-1001", -32600, None),
    ],
)
def test_invalid_params(served, params, code, parameter):
    _, _, body = post(served, call("lookup_price", params))
    assert body["error"]["code"] == code, body
    if parameter:
        assert body["error"]["data"] == {"parameter": parameter}


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1},
        {"jsonrpc": "2.0", "id": 1, "method": 7},
        {"id": 1, "method": "test_simple_text"},
    ],
)
def test_malformed_requests(served, message):
    status, _, body = post(served, message)
    assert status == 200 and body["error"]["code"] == -32600


def test_positional_params_bind_in_schema_order(served):
    _, _, named = post(served, call("export_orders", {"customer_id": "CUST-42", "max_age_days": 42}))
    _, _, positional = post(served, call("export_orders", ["CUST-42", 42]))
    assert positional["result"] == named["result"]
    # The tool's own value (a string), not MCP's {"result": …} wrapper.
    assert positional["result"].startswith("order_id,")


def test_batch_of_invalid_entries_answers_each(served):
    status, _, body = post(served, [1, "x"])
    assert status == 200
    assert body == [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": body[0]["error"]["message"]}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": body[1]["error"]["message"]}},
    ]


def test_batch_keeps_order_and_omits_notifications(served):
    status, _, body = post(
        served,
        [
            call("test_long_task", {"seconds": 1}, id="slow"),
            call("lookup_price", ["SKU-1001"], id="fast"),
            {"jsonrpc": "2.0", "method": "test_simple_text"},
            call("test_error_handling", id=3),
            call("lookup_price", {"sku": "SKU-1001", "x": 1}, id=4),
            {"jsonrpc": "2.0", "id": 5},
        ],
    )
    assert status == 200
    assert [r["id"] for r in body] == ["slow", "fast", 3, 4, 5]
    # Each tool's own value, not MCP's {"result": …} wrapper.
    assert body[0]["result"] == "counted 1 seconds"
    assert body[1]["result"] == 12.5
    assert body[2]["error"]["code"] == -32000
    assert body[3]["error"]["code"] == -32602
    assert body[4]["error"]["code"] == -32600


def test_parse_error_has_null_id(served):
    status, _, body = post(served, None, raw=b'{"jsonrpc":"2.0","id":1,"method":')
    assert status == 200
    assert body["id"] is None and body["error"]["code"] == -32700


def test_refusals_do_not_leak_internals(served):
    _, _, body = post(served, call("restock", {"sku": "SKU-1001", "units": 1}))
    message = body["error"]["message"]
    assert -32099 <= body["error"]["code"] <= -32000
    assert "restock is destructive" in message
    for leak in ("/work", "target/", ".rs", "wasmtime", "panicked"):
        assert leak not in json.dumps(body)


def test_get_only_for_read_only_tools(served):
    # A read-only tool (GET /rpc?method=NAME&params=JSON, #39) answers as POST.
    query = "method=test_simple_text&params=%7B%7D&id=3"
    with urllib.request.urlopen(served.base + "/rpc?" + query, timeout=10) as response:
        assert json.loads(response.read())["id"] == 3
    # A destructive one is POST only: 405, Allow: POST.
    request = urllib.request.Request(served.base + "/rpc?method=restock")
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=10)
    assert error.value.code == 405 and error.value.headers["Allow"] == "POST"
