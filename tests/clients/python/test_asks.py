"""Tools that ask the client (``host.elicit``, ``host.sample``,
``host.roots``, several at once with ``host.ask``) through the official MCP Python SDK against ``airlock
serve``: over stdio and Streamable HTTP, in revision 2025-11-25
(``legacy``: the server sends the requests during the call) and 2026-07-28
(``auto``: the call answers ``input_required``, the SDK answers the
requests with the same callbacks and retries with the signed
``requestState``, and airlock re-runs the tool with the answers).

Exact assertions of what the conformance suite checks loosely: the
elicitation round trip (accept, decline, cancel) with the form as sent,
sampling with its messages and token cap, roots, a request the policy does
not grant, one over the call's limit, and a client without the capability.
The tools are the conformance fixtures' (``tests/components/conformance``,
``src/asks.rs``), served with ``tests/conformance/policy.toml`` or a
narrower policy written here."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest
from mcp import Client, MCPError, types

from conftest import CONFORMANCE, ROOT, Served, opener

pytestmark = pytest.mark.anyio

COMPONENT = CONFORMANCE
GRANTED = str(ROOT / "tests/conformance/policy.toml")
# Elicitation only, one request per call: sampling is denied, a second
# question is over the limit.
NARROW = """
[components.conformance]
ask = ["elicit"]
limits = { elicitations = 1 }
"""
FORM = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}


@pytest.fixture(scope="module")
def narrow_policy(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("asks") / "narrow.toml"
    path.write_text(NARROW)
    return str(path)


@pytest.fixture(scope="module")
def granted_server() -> Served:
    server = Served(["--policy", GRANTED, COMPONENT])
    yield server
    server.stop()


@pytest.fixture(scope="module")
def narrow_server(narrow_policy: str) -> Served:
    server = Served(["--policy", narrow_policy, COMPONENT])
    yield server
    server.stop()


@pytest.fixture
def connect(transport: str, mode: str, granted_server: Served):
    return opener(["--policy", GRANTED, COMPONENT], granted_server, transport, mode)


@pytest.fixture
def connect_narrow(transport: str, mode: str, narrow_server: Served, narrow_policy: str):
    return opener(["--policy", narrow_policy, COMPONENT], narrow_server, transport, mode)


class Asked:
    """The client's side: callbacks that answer as told and keep what they
    were asked."""

    def __init__(self, action: str = "accept", content: dict[str, Any] | None = None,
                 answer: str = "Paris", roots: list[types.Root] | None = None) -> None:
        self.action, self.content, self.answer = action, content, answer
        self.roots = roots or []
        self.elicited: list[types.ElicitRequestParams] = []
        self.sampled: list[types.CreateMessageRequestParams] = []
        self.listed = 0

    async def elicit(self, context, params):
        self.elicited.append(params)
        return types.ElicitResult(action=self.action, content=self.content)

    async def sample(self, context, params):
        self.sampled.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=self.answer),
            model="test-model",
            stop_reason="endTurn",
        )

    async def list_roots(self, context):
        self.listed += 1
        return types.ListRootsResult(roots=self.roots)

    def callbacks(self) -> dict[str, Any]:
        return {
            "elicitation_callback": self.elicit,
            "sampling_callback": self.sample,
            "list_roots_callback": self.list_roots,
        }


def text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1, result
    return result.content[0].text


async def test_an_elicitation_is_answered_with_the_form_as_sent(connect):
    asked = Asked(content={"username": "ada", "email": "ada@example.com"})
    async with connect(**asked.callbacks()) as client:
        result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
    assert not result.is_error, result
    assert text(result) == (
        'User response: action=accept, content={"username":"ada","email":"ada@example.com"}'
    )
    # Asked once on 2025-11-25; on 2026-07-28 once too (one round, then
    # the re-run finds the answer recorded).
    assert len(asked.elicited) == 1
    form = asked.elicited[0]
    assert form.message == "Who are you?"
    assert form.requested_schema == FORM


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_declining_or_cancelling_reaches_the_tool(connect, action):
    asked = Asked(action=action)
    async with connect(**asked.callbacks()) as client:
        result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
    assert not result.is_error, result
    assert text(result) == f"User response: action={action}, content={{}}"


async def test_sampling_asks_the_model_with_the_tools_messages(connect):
    asked = Asked(answer="Paris")
    async with connect(**asked.callbacks()) as client:
        result = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
    assert text(result) == "LLM response: Paris"
    assert len(asked.sampled) == 1
    request = asked.sampled[0]
    assert request.max_tokens == 100
    assert [(m.role, m.content.text) for m in request.messages] == [("user", "Capital of France?")]


async def test_roots_are_listed_for_the_tool(connect):
    roots = [
        types.Root(uri="file:///home/ada/project", name="project"),
        types.Root(uri="file:///tmp/scratch"),
    ]
    asked = Asked(roots=roots)
    async with connect(**asked.callbacks()) as client:
        result = await client.call_tool("test_input_required_result_list_roots", {})
    assert text(result) == "Client roots: file:///home/ada/project, file:///tmp/scratch"
    assert asked.listed == 1


async def test_two_questions_are_asked_in_order(connect):
    answers = iter([{"name": "Ada"}, {"color": "blue"}])
    messages: list[str] = []

    async def elicit(context, params):
        messages.append(params.message)
        return types.ElicitResult(action="accept", content=next(answers))

    async with connect(elicitation_callback=elicit) as client:
        result = await client.call_tool("test_input_required_result_multi_round", {})
    assert text(result) == "Ada likes blue"
    assert messages == ["Step 1: What is your name?", "Step 2: What is your favorite color?"]


async def test_a_batch_is_one_round_on_2026_07_28_and_a_sequence_before(connect):
    """host.ask: the three requests under the tool's keys in one
    input_required round, or sent one after another during the call."""
    tool = "test_input_required_result_multiple_inputs"
    asked = Asked(content={"name": "Ada"}, answer="Hi there",
                  roots=[types.Root(uri="file:///work", name="work")])
    order: list[str] = []

    def noting(kind, callback):
        async def noted(*args):
            order.append(kind)
            return await callback(*args)
        return noted

    callbacks = {
        "elicitation_callback": noting("elicit", asked.elicit),
        "sampling_callback": noting("sample", asked.sample),
        "list_roots_callback": noting("roots", asked.list_roots),
    }
    async with connect(**callbacks) as client:
        if client.protocol_version == "2025-11-25":
            result = await client.call_tool(tool, {})
            assert order == ["elicit", "sample", "roots"]
        else:
            round1 = await client.session.call_tool(tool, {}, allow_input_required=True)
            assert isinstance(round1, types.InputRequiredResult), round1
            assert {key: r.method for key, r in round1.input_requests.items()} == {
                "user_name": "elicitation/create",
                "greeting": "sampling/createMessage",
                "client_roots": "roots/list",
            }
            assert round1.input_requests["greeting"].params.max_tokens == 50
            assert order == [], "a round asks the client nothing itself"
            # The SDK answers the round and retries: each request once.
            result = await client.call_tool(tool, {})
            assert sorted(order) == ["elicit", "roots", "sample"]
    assert not result.is_error, result
    assert text(result) == "name=Ada, greeting=Hi there, roots=1"
    assert [p.message for p in asked.elicited] == ["What is your name?"]


async def test_a_client_without_the_capability_is_not_asked(connect):
    """The tool sees `unavailable` and fails; on 2026-07-28 the call then
    answers -32021 naming the capability (SEP-2575)."""
    async with connect() as client:
        if client.protocol_version == "2025-11-25":
            result = await client.call_tool("test_sampling", {"prompt": "hi"})
            assert result.is_error
            assert text(result) == (
                "not available: the client did not declare the sampling capability, so it "
                "cannot be asked"
            )
        else:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("test_sampling", {"prompt": "hi"})
            error = refused.value.error
            assert error.code == -32021, error
            assert error.data == {"requiredCapabilities": {"sampling": {}}}


async def test_a_request_the_policy_does_not_grant_is_denied(connect_narrow):
    asked = Asked()
    async with connect_narrow(**asked.callbacks()) as client:
        result = await client.call_tool("test_sampling", {"prompt": "hi"})
    assert result.is_error
    assert text(result) == (
        "not granted: the operator's policy does not let this tool ask the client for this "
        '(sample); it needs `ask = ["sample"]`'
    )
    assert asked.sampled == [], "a denied request never reaches the client"


async def test_a_request_over_the_calls_limit_is_refused(connect_narrow):
    asked = Asked(content={"name": "Ada"})
    async with connect_narrow(**asked.callbacks()) as client:
        result = await client.call_tool("test_input_required_result_multi_round", {})
    assert result.is_error
    assert text(result) == (
        "over the limit: this call has made all the elicitation/create requests its grant "
        "allows (limits.elicitations)"
    )
    assert [p.message for p in asked.elicited] == ["Step 1: What is your name?"]


# 2026-07-28 by hand: the rounds, and what a requestState is good for.

@pytest.fixture
def modern(granted_server: Served):
    return opener(["--policy", GRANTED, COMPONENT], granted_server, "http", "auto")


async def first_round(client: Client, tool: str = "test_input_required_result_elicitation"):
    round1 = await client.session.call_tool(tool, {}, allow_input_required=True)
    assert isinstance(round1, types.InputRequiredResult), round1
    return round1


async def test_a_round_names_its_request_and_signs_its_state(modern):
    async with modern(elicitation_callback=Asked().elicit) as client:
        round1 = await first_round(client)
        [(key, request)] = round1.input_requests.items()
        # The key the tool chose (host.ask); a single elicit's would be
        # made of its place and content (elicit-0-…).
        assert key == "user_name", key
        assert request.method == "elicitation/create"
        assert request.params.message == "What is your name?"
        answer = {key: types.ElicitResult(action="accept", content={"name": "Ada"})}
        done = await client.session.call_tool(
            "test_input_required_result_elicitation", {},
            input_responses=answer, request_state=round1.request_state,
        )
        assert text(done) == "Hello, Ada!"
        # The same state again: refused, it answered one retry.
        with pytest.raises(MCPError) as replayed:
            await client.session.call_tool(
                "test_input_required_result_elicitation", {},
                input_responses=answer, request_state=round1.request_state,
            )
        assert replayed.value.error.code == -32602
        assert "answered already" in replayed.value.error.message


async def test_a_tampered_or_foreign_state_is_refused(modern):
    async with modern(elicitation_callback=Asked().elicit) as client:
        round1 = await first_round(client)
        [key] = round1.input_requests
        answer = {key: types.ElicitResult(action="accept", content={"name": "Ada"})}
        for tool, state in [
            ("test_input_required_result_elicitation", round1.request_state + "-TAMPERED"),
            # Another tool's call: the state is bound to tool and arguments.
            ("test_input_required_result_tampered_state", round1.request_state),
        ]:
            with pytest.raises(MCPError) as refused:
                await client.session.call_tool(
                    tool, {}, input_responses=answer, request_state=state,
                )
            assert refused.value.error.code == -32602, tool
            assert "requestState is invalid" in refused.value.error.message


async def test_answers_without_a_state_are_not_taken(modern):
    """Responses are read only for what a verified state asked: without
    one the call starts at the first round again."""
    async with modern(elicitation_callback=Asked().elicit) as client:
        round1 = await client.session.call_tool(
            "test_input_required_result_elicitation", {},
            input_responses={"user_name": types.ElicitResult(action="accept", content={"name": "Eve"})},
            allow_input_required=True,
        )
        assert isinstance(round1, types.InputRequiredResult), round1


# 2026-07-28 tasks: their input is gathered in rounds before the task is made.

TASKS = "io.modelcontextprotocol/tasks"


def modern_call(base: str, method: str, params: dict, name: str) -> dict:
    """A raw 2026-07-28 request declaring the tasks extension and
    elicitation; its decoded JSON-RPC answer."""
    params = {**params, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test_asks", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}, "elicitation": {}},
    }}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(base + "/mcp", data=body, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name,
    })
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    if not text.startswith("{"):
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    return json.loads(text)


def settled_task(base: str, task_id: str) -> dict:
    for _ in range(600):
        task = modern_call(base, "tasks/get", {"taskId": task_id}, task_id)["result"]
        if task["status"] not in ("working", "input_required"):
            return task
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} did not end: {task}")


def test_a_task_asks_in_rounds_before_it_is_made(granted_server):
    base = granted_server.base
    call = {"name": "test_tool_with_task", "arguments": {}}
    round1 = modern_call(base, "tools/call", call, call["name"])["result"]
    assert round1["resultType"] == "input_required" and "taskId" not in round1, round1
    [key] = round1["inputRequests"]
    answered = {**call, "requestState": round1["requestState"],
                "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}}}
    created = modern_call(base, "tools/call", answered, call["name"])["result"]
    assert created["resultType"] == "task" and "requestState" not in created, created
    task = settled_task(base, created["taskId"])
    assert task["status"] == "completed", task
    assert task["result"]["content"] == [{"type": "text", "text": "Hello, Ada!"}], task


def test_a_task_that_asks_nothing_at_first_becomes_one_and_runs_on(granted_server):
    base = granted_server.base
    call = {"name": "slow_compute", "arguments": {"seconds": 2, "label": "long"}}
    created = modern_call(base, "tools/call", call, call["name"])["result"]
    assert created["resultType"] == "task" and created["status"] == "working", created
    task = settled_task(base, created["taskId"])
    assert task["status"] == "completed", task
    assert task["result"]["content"][0]["text"] == "computed long after 2 s", task
