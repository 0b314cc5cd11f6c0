"""``GET /metrics``, read with the Prometheus project's own OpenMetrics
parser (``prometheus_client``), checked against the calls this test made on
a server of its own (so no other test's calls are counted)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from conftest import SERVED, Served


def request(served: Served, path: str, body: dict | None = None) -> tuple[int, str, str]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if body is not None else {}
    req = urllib.request.Request(served.base + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


def rpc(served: Served, method: str, id: int = 1) -> dict:
    _, _, text = request(served, "/rpc", {"jsonrpc": "2.0", "id": id, "method": method})
    return json.loads(text)


@pytest.fixture(scope="module")
def own_server():
    server = Served(SERVED)
    yield server
    server.stop()


def samples(text: str) -> dict[tuple[str, tuple], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_a_scrape_counts_the_calls_made(own_server):
    for n in range(3):
        assert "result" in rpc(own_server, "test_simple_text", id=n)
    assert "error" in rpc(own_server, "test_error_handling")
    assert rpc(own_server, "no_such_tool")["error"]["code"] == -32601
    assert request(own_server, "/nowhere")[0] == 404

    status, content_type, text = request(own_server, "/metrics")
    assert status == 200
    assert content_type.startswith("application/openmetrics-text")
    found = samples(text)

    def value(name: str, **labels: str) -> float:
        return found.get((name, tuple(sorted(labels.items()))), 0.0)

    assert value("airlock_calls_total", tool="test_simple_text", outcome="ok") == 3
    assert value("airlock_calls_total", tool="test_error_handling", outcome="tool-error") == 1
    # A name that is not served is counted without it.
    assert value("airlock_calls_total", tool="", outcome="unknown-tool") == 1
    assert not any("no_such_tool" in str(key) for key in found)
    assert value("airlock_call_duration_seconds_count", tool="test_simple_text") == 3
    assert value("airlock_http_requests_total", status="200") >= 5
    assert value("airlock_http_requests_total", status="404") == 1
    assert value("airlock_tools_loaded") > 10
    assert value("airlock_components_loaded") >= 1
    assert value("airlock_components_loading") == 0
    assert value("airlock_instances_pool") >= 256
    assert value("airlock_calls_running") == 0
    assert value("airlock_tasks", status="working") == 0
