"""A tool with ``taskSupport: required`` (``test_long_task``) run as a task
through the official Python SDK: created, polled, its result fetched, and
one cancelled while it runs (the guest stops; the task ends ``cancelled``).

The SDK (``mcp`` 2.3) has no client API for the 2025-11-25 tasks and
validates a ``tools/call`` result as a ``CallToolResult``, which a
``CreateTaskResult`` is not; so these requests go through the session's
dispatcher as raw JSON-RPC, on the SDK's transports and session."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytestmark = pytest.mark.anyio


async def raw(client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return await client.session._dispatcher.send_raw_request(method, params, {"timeout": 30})


def needs_2025_tasks(client) -> None:
    if client.protocol_version != "2025-11-25":
        pytest.xfail(
            "the tasks extension as 2026-07-28 defines it is being implemented; "
            "this test speaks the 2025-11-25 tasks"
        )


async def wait_for(client, task_id: str, statuses: set[str]) -> dict[str, Any]:
    with anyio.fail_after(20):
        while True:
            task = await raw(client, "tasks/get", {"taskId": task_id})
            if task["status"] in statuses:
                return task
            await anyio.sleep(0.1)


async def test_task_runs_to_completion(connect):
    async with connect() as client:
        needs_2025_tasks(client)
        created = await raw(
            client,
            "tools/call",
            {"name": "test_long_task", "arguments": {"seconds": 1}, "task": {"ttl": 60000}},
        )
        task = created["task"]
        assert task["status"] == "working" and task["ttl"] == 60000
        assert len(task["taskId"]) >= 32 and task["pollInterval"] > 0
        result = await raw(client, "tasks/result", {"taskId": task["taskId"]})
        done = await raw(client, "tasks/get", {"taskId": task["taskId"]})
    assert result["isError"] is False
    assert result["structuredContent"] == {"result": "counted 1 seconds"}
    assert done["status"] == "completed"


async def test_task_is_cancelled_while_running(connect):
    async with connect() as client:
        needs_2025_tasks(client)
        created = await raw(
            client,
            "tools/call",
            {"name": "test_long_task", "arguments": {"seconds": 30}, "task": {}},
        )
        task_id = created["task"]["taskId"]
        await anyio.sleep(0.5)
        assert (await raw(client, "tasks/get", {"taskId": task_id}))["status"] == "working"
        cancelled = await raw(client, "tasks/cancel", {"taskId": task_id})
        assert cancelled["status"] == "cancelled"
        # It stays cancelled (the guest was stopped, not merely abandoned) …
        await anyio.sleep(0.5)
        task = await wait_for(client, task_id, {"cancelled", "completed", "failed"})
        assert task["status"] == "cancelled"
        # … and a second cancel of a finished task is refused.
        with pytest.raises(Exception) as error:
            await raw(client, "tasks/cancel", {"taskId": task_id})
        assert getattr(error.value, "error", None) is not None
        assert error.value.error.code == -32602
