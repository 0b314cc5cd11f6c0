"""A tool with ``taskSupport: required`` (``test_long_task``) run as a task
through the official Python SDK: created, polled, its result fetched, and
one cancelled while it runs (the guest stops; the task ends ``cancelled``).

Both revisions, by what the connection negotiated:

- 2025-11-25 (``legacy`` mode): the ``task`` request parameter,
  ``tasks/get``, ``tasks/result``, ``tasks/cancel``. The SDK (``mcp`` 2.3)
  has no client API for these tasks and validates a ``tools/call`` result as
  a ``CallToolResult``, which a ``CreateTaskResult`` is not; so these
  requests go through the session's dispatcher as raw JSON-RPC.
- 2026-07-28 (``auto`` mode): the ``io.modelcontextprotocol/tasks``
  extension, declared in every request's ``_meta`` client capabilities by
  the SDK (``Client(extensions=[...])``); a call answers
  ``resultType: "task"``, ``tasks/get`` carries the result inline once
  completed, ``tasks/cancel`` stops it. The SDK ships no tasks extension,
  so ``TasksExtension`` below claims the ``task`` result through the SDK's
  extension API (``ResultClaim``) and polls ``tasks/get``; the SDK's own
  per-request stamp (``_meta``, ``MCP-Protocol-Version``, ``Mcp-Method``)
  is applied to the raw requests too."""

from __future__ import annotations

from typing import Any, Literal

import anyio
import pytest
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_types import CallToolResult, Result
from pydantic import ConfigDict, Field

pytestmark = pytest.mark.anyio

LEGACY = "2025-11-25"
TASKS = "io.modelcontextprotocol/tasks"
TERMINAL = {"completed", "failed", "cancelled"}


async def raw(client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A raw request with the SDK's per-request stamp (2026-07-28: ``_meta``
    and the routing headers; ``Mcp-Name`` carries the ``taskId`` of tasks/*)."""
    session = client.session
    data: dict[str, Any] = {"method": method, "params": dict(params)}
    opts: dict[str, Any] = {"timeout": 30}
    session._stamp(data, opts)
    if "taskId" in params and client.protocol_version != LEGACY:
        opts.setdefault("headers", {})["Mcp-Name"] = params["taskId"]
    return await session._dispatcher.send_raw_request(method, data["params"], opts)


async def wait_for(client, task_id: str, statuses: set[str]) -> dict[str, Any]:
    with anyio.fail_after(20):
        while True:
            task = await raw(client, "tasks/get", {"taskId": task_id})
            if task["status"] in statuses:
                return task
            await anyio.sleep(0.1)


class CreatedTask(Result):
    """The 2026-07-28 ``CreateTaskResult``: ``resultType: "task"``."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    result_type: Literal["task"] = Field("task", alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str


class TasksExtension(ClientExtension):
    """The client side of the tasks extension: a ``task`` answer to
    ``tools/call`` is polled with ``tasks/get`` until it ends."""

    identifier = TASKS

    def __init__(self) -> None:
        self.created: list[CreatedTask] = []

    def claims(self):
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, created: CreatedTask, ctx: ClaimContext) -> CallToolResult:
        self.created.append(created)
        with anyio.fail_after(20):
            while True:
                data: dict[str, Any] = {"method": "tasks/get", "params": {"taskId": created.task_id}}
                opts: dict[str, Any] = {"timeout": 30, "headers": {}}
                ctx.session._stamp(data, opts)
                opts["headers"]["Mcp-Name"] = created.task_id
                task = await ctx.session._dispatcher.send_raw_request("tasks/get", data["params"], opts)
                if task["status"] in TERMINAL:
                    assert task["status"] == "completed", task
                    return CallToolResult.model_validate(task["result"])
                await anyio.sleep(0.1)


async def test_task_runs_to_completion(connect):
    tasks = TasksExtension()
    async with connect(extensions=[tasks]) as client:
        if client.protocol_version != LEGACY:
            await modern_task_runs_to_completion(client, tasks)
            return
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
    async with connect(extensions=[TasksExtension()]) as client:
        if client.protocol_version != LEGACY:
            await modern_task_is_cancelled_while_running(client)
            return
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


async def modern_task_runs_to_completion(client, tasks: TasksExtension) -> None:
    # Raw: the CreateTaskResult, then tasks/get until completed, result inline.
    created = await raw(
        client, "tools/call", {"name": "test_long_task", "arguments": {"seconds": 1}}
    )
    assert created["resultType"] == "task", created
    assert created["status"] == "working"
    assert len(created["taskId"]) >= 32 and created["pollIntervalMs"] > 0
    assert "result" not in created
    done = await wait_for(client, created["taskId"], TERMINAL)
    assert done["status"] == "completed", done
    assert done["resultType"] == "complete"
    assert done["result"]["isError"] is False
    assert done["result"]["structuredContent"] == {"result": "counted 1 seconds"}
    # Through the SDK: call_tool hands the task to the extension's claim,
    # which polls it and returns the tool's result.
    result = await client.call_tool("test_long_task", {"seconds": 1})
    assert result.is_error is False
    assert result.structured_content == {"result": "counted 1 seconds"}
    assert len(tasks.created) == 1 and tasks.created[0].status == "working"


async def modern_task_is_cancelled_while_running(client) -> None:
    created = await raw(
        client, "tools/call", {"name": "test_long_task", "arguments": {"seconds": 30}}
    )
    assert created["resultType"] == "task", created
    task_id = created["taskId"]
    await anyio.sleep(0.5)
    assert (await raw(client, "tasks/get", {"taskId": task_id}))["status"] == "working"
    acked = await raw(client, "tasks/cancel", {"taskId": task_id})
    assert acked["resultType"] == "complete"
    # It stays cancelled (the guest was stopped, not merely abandoned) …
    await anyio.sleep(0.5)
    task = await wait_for(client, task_id, TERMINAL)
    assert task["status"] == "cancelled", task
    assert "result" not in task
    # … and cancelling a finished task is acknowledged without changing it.
    await raw(client, "tasks/cancel", {"taskId": task_id})
    assert (await raw(client, "tasks/get", {"taskId": task_id}))["status"] == "cancelled"
