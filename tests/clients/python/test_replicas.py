"""Three replicas of ``airlock serve --state redis://…`` behind HAProxy, with
Debian's ``redis-server`` and ``haproxy`` started here on free loopback
ports (``cargo xtask test`` installs both when missing).

What is checked, all through real parts:

- the official SDK, in both modes (2026-07-28 and 2025-11-25 sessions,
  which HAProxy pins to a replica by ``Mcp-Session-Id``), lists and calls
  tools through the balancer;
- a task made on one replica is polled and cancelled through the others,
  and its guest really stops on the replica running it;
- a replica killed with SIGKILL mid-task: its task turns ``failed`` within
  the lease bound, read through another replica;
- a replica drained with SIGTERM under load: every call made through the
  balancer meanwhile is answered with its result (each one counted);
- Redis restarted during load: calls go on, task requests fail with a clear
  error while it is down and work again after, and no replica dies;
- readiness: a replica stays in the balancer while Redis restarts and
  leaves it once it has not reached Redis for a lease;
- a tool's question (2026-07-28, replayed) asked by one replica is answered
  through another, and refused as a replay through a third;
- Redis emptied and the request-state key seeded by a newcomer first: the
  running replicas adopt it, and a state one of them signs verifies on the
  newcomer;
- a component added to the folder three ``--watch`` replicas serve: every
  replica reloads and tells its own clients, 2025-11-25 sessions (their GET
  streams through the balancer) and 2026-07-28 ``subscriptions/listen``
  streams alike, and the new tool answers through the balancer."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp import Client

from conftest import COMPONENTS, CONFORMANCE, Served

REDIS = os.environ.get("AIRLOCK_REDIS_SERVER", "/usr/bin/redis-server")
HAPROXY = os.environ.get("AIRLOCK_HAPROXY", "/usr/sbin/haproxy")
CATALOG = str(Path(COMPONENTS) / "catalog.wasm")
# restock (destructive) runs only once the user confirms it; one of the
# conformance tools may ask the user (elicitation).
CONFIRM_POLICY = (
    '[components.catalog.tools.restock]\ndestructive = "confirm"\n'
    '[components.conformance.tools.test_input_required_result_elicitation]\nask = ["elicit"]\n'
)
TASKS = "io.modelcontextprotocol/tasks"
MODERN = "2026-07-28"
# A replica's lease outlives its last renewal by 3 s (airlock::state::LEASE).
LEASE_BOUND = 3.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what: str, check, timeout: float = 30.0, every: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


class Redis:
    """``redis-server`` on a free loopback port, without persistence."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until("redis to answer", self.answers, timeout=10)

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def command(self, *words: str) -> bytes:
        """One command in RESP; the first line of the answer."""
        request = f"*{len(words)}\r\n" + "".join(f"${len(w)}\r\n{w}\r\n" for w in words)
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(request.encode())
            return s.recv(4096).split(b"\r\n")[0]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


class Replica(Served):
    """``airlock serve --state`` on a free loopback port, with its log."""

    def __init__(self, redis: Redis, name: str, policy: Path, served: list[str] | None = None,
                 extra: tuple[str, ...] = ()) -> None:
        self.name = name
        super().__init__(
            served or [CONFORMANCE, CATALOG],
            start_timeout=120,
            args=("--grace", "20", "--max-calls", "256", "--state", redis.url, "--policy", str(policy),
                  *extra),
            env={**os.environ, "AIRLOCK_LOG": "info", "NO_COLOR": "1"},
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.proc.terminate()
            self.proc.wait(30)


class Balancer:
    """HAProxy in front of the replicas, configured by the documented
    ``docs/deploy/haproxy.cfg`` with only its ``bind`` and ``server`` lines
    pointed at this test's ports (on ``port`` if given) — and, with ``tls``
    (an ``oauth_parts.Pki``), HTTPS on the ``bind`` with its certificate
    and to every replica, verified against its CA."""

    def __init__(self, replicas: list[Replica], workdir: Path, tls=None, port: int | None = None) -> None:
        self.port = port or free_port()
        self.base = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"
        bind_tls = server_tls = ""
        self.context = None
        if tls is not None:
            combined = workdir / "haproxy.pem"
            combined.write_bytes(tls.cert.read_bytes() + tls.key.read_bytes())
            bind_tls = f" ssl crt {combined}"
            server_tls = f" ssl verify required ca-file {tls.ca}"
            self.context = tls.client_context()
        lines = []
        for line in DOCUMENTED.read_text().splitlines():
            words = line.split()
            if words[:1] == ["bind"]:
                line = f"    bind 127.0.0.1:{self.port}{bind_tls}"
            elif words[:1] == ["server"]:
                if words[1] != "r1":
                    continue
                line = "\n".join(
                    f"    server {r.name} 127.0.0.1:{r.port} " + " ".join(words[3:]) + server_tls
                    for r in replicas
                )
            lines.append(line)
        self.config = workdir / "haproxy.cfg"
        self.config.write_text("\n".join(lines) + "\n")
        self.proc = subprocess.Popen(
            [HAPROXY, "-db", "-f", str(self.config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_until("haproxy to listen", lambda: status(self.base + "/readyz", self.context) == 200, timeout=15)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


DOCUMENTED = Path(__file__).resolve().parents[3] / "docs/deploy/haproxy.cfg"


def text(url: str) -> str:
    """The body of a GET, whatever its status."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode()
    except urllib.error.HTTPError as error:
        return error.read().decode()


def status(url: str, context=None) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def post(base: str, path: str, body: dict, headers: dict | None = None, timeout: float = 30):
    """POSTs JSON; the status and the decoded answer (JSON, or the last SSE
    event)."""
    req = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                 **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            code, text = response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        code, text = error.code, error.read().decode()
    if text.startswith("event:") or text.startswith("data:"):
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    try:
        return code, json.loads(text)
    except json.JSONDecodeError:
        return code, text


def modern(base: str, method: str, params: dict, name: str | None = None, id: int = 1):
    """A 2026-07-28 request declaring the tasks extension and elicitation."""
    params = dict(params)
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "replica-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {TASKS: {}},
            "elicitation": {"form": {}},
        },
    }
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
    return post(base, "/mcp", body, headers)


def start_task(replica: Replica, seconds: int) -> str:
    code, answer = modern(
        replica.base, "tools/call", {"name": "test_long_task", "arguments": {"seconds": seconds}},
        name="test_long_task",
    )
    assert code == 200, answer
    result = answer["result"]
    assert result["resultType"] == "task" and result["status"] == "working", result
    return result["taskId"]


def task_get(replica: Replica, task_id: str):
    return modern(replica.base, "tasks/get", {"taskId": task_id}, name=task_id)


def running_calls(replica: Replica) -> float:
    with urllib.request.urlopen(replica.base + "/metrics", timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("airlock_calls_running "):
                return float(line.split()[1])
    raise AssertionError("no airlock_calls_running gauge")


@pytest.fixture(scope="module")
def policy():
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "airlock.toml"
        path.write_text(CONFIRM_POLICY)
        yield path


@contextlib.contextmanager
def three_replicas(policy: Path, workdir: Path, prefix: str, **options):
    """Redis, three replicas (``Replica`` ``options``) and HAProxy in front
    of them; all stopped after."""
    redis = Redis()
    replicas = [Replica(redis, f"{prefix}{n}", policy, **options) for n in range(1, 4)]
    balancer = Balancer(replicas, workdir)
    try:
        yield redis, replicas, balancer
    finally:
        balancer.stop()
        for replica in replicas:
            replica.stop()
        redis.stop()


@pytest.fixture(scope="module")
def cluster(policy):
    with tempfile.TemporaryDirectory() as workdir, three_replicas(policy, Path(workdir), "r") as parts:
        yield parts


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_lists_and_calls_tools_through_the_balancer(cluster, mode):
    _, _, balancer = cluster
    async with Client(balancer.url, mode=mode, read_timeout_seconds=30) as client:
        tools = await client.list_tools()
        assert "test_simple_text" in {t.name for t in tools.tools}
        # Enough calls to go round every replica; a 2025-11-25 session
        # stays on the replica that opened it (no 404 for its id).
        for _ in range(9):
            result = await client.call_tool("test_simple_text", {})
            assert result.is_error is False
            assert result.content[0].text


def test_a_task_made_on_one_replica_is_polled_and_cancelled_through_others(cluster):
    _, (a, b, c), _ = cluster
    task_id = start_task(a, 30)
    code, answer = task_get(b, task_id)
    assert code == 200 and answer["result"]["status"] == "working", answer
    wait_until("the guest to run on its replica", lambda: running_calls(a) >= 1, timeout=10)
    code, answer = modern(c.base, "tasks/cancel", {"taskId": task_id}, name=task_id)
    assert code == 200 and "error" not in answer, answer
    code, answer = task_get(b, task_id)
    assert answer["result"]["status"] == "cancelled", answer
    # The guest on the replica running it stops: nothing runs there any
    # more, and it says why.
    wait_until("the guest to stop", lambda: running_calls(a) == 0, timeout=10)
    assert any("cancelled through another replica" in line for line in a.log), a.log[-5:]
    code, answer = task_get(a, task_id)
    assert answer["result"]["status"] == "cancelled", answer
    # Another caller's (owner) view is unchanged: no such task for a
    # made-up id on any replica.
    code, answer = task_get(c, "0" * 32)
    assert answer["error"]["code"] == -32602


def test_a_confirmation_asked_by_one_replica_is_answered_through_another(cluster):
    _, (a, b, c), _ = cluster
    call = {"name": "restock", "arguments": {"sku": "SKU-1001", "units": 1}}
    code, asked = modern(a.base, "tools/call", call, name="restock")
    assert code == 200 and asked["result"]["resultType"] == "input_required", asked
    state = asked["result"]["requestState"]
    yes = {"airlock-confirm": {"action": "accept", "content": {"confirm": True}}}
    answered = {**call, "requestState": state, "inputResponses": yes}
    code, done = modern(b.base, "tools/call", answered, name="restock")
    assert code == 200 and done["result"]["resultType"] == "complete", done
    # Confirmed, it ran: what stops it now is the grant (no /data folder
    # in this policy), not the confirmation.
    assert "/data" in done["result"]["content"][0]["text"], done
    # Good for one call over every replica: a replay through a third is refused.
    code, replay = modern(c.base, "tools/call", answered, name="restock")
    assert replay["error"]["code"] == -32602, replay
    assert "answered already" in replay["error"]["message"], replay


def test_a_tools_question_asked_by_one_replica_is_answered_through_another(cluster):
    """2026-07-28 replays a tool that asks: no instance waits on the
    replica that asked, so the retry may land on any replica sharing the
    state key, and is good there once."""
    _, (a, b, c), _ = cluster
    call = {"name": "test_input_required_result_elicitation", "arguments": {}}
    code, asked = modern(a.base, "tools/call", call, name=call["name"])
    assert code == 200 and asked["result"]["resultType"] == "input_required", asked
    [(key, request)] = asked["result"]["inputRequests"].items()
    assert request["method"] == "elicitation/create", request
    state = asked["result"]["requestState"]
    ada = {key: {"action": "accept", "content": {"name": "Ada"}}}
    answered = {**call, "requestState": state, "inputResponses": ada}
    code, done = modern(b.base, "tools/call", answered, name=call["name"])
    assert code == 200 and done["result"]["resultType"] == "complete", done
    assert done["result"]["content"] == [{"type": "text", "text": "Hello, Ada!"}], done
    # A replay through a third replica is refused, and so is a forgery.
    code, replay = modern(c.base, "tools/call", answered, name=call["name"])
    assert replay["error"]["code"] == -32602, replay
    assert "answered already" in replay["error"]["message"], replay
    forged = {**answered, "requestState": state[:-2] + ("00" if not state.endswith("00") else "11")}
    code, refused = modern(c.base, "tools/call", forged, name=call["name"])
    assert refused["error"]["code"] == -32602, refused
    assert "requestState is invalid" in refused["error"]["message"], refused


def test_a_completed_task_is_read_through_another_replica(cluster):
    _, (a, b, _), _ = cluster
    task_id = start_task(a, 1)

    def done():
        _, answer = task_get(b, task_id)
        return answer["result"] if answer["result"]["status"] != "working" else None

    task = wait_until("the task to end", done, timeout=20, every=0.1)
    assert task["status"] == "completed", task
    assert task["result"]["structuredContent"] == {"result": "counted 1 seconds"}


def test_a_killed_replicas_task_fails_within_the_lease(cluster, policy, request):
    redis, replicas, _ = cluster
    doomed = Replica(redis, "doomed", policy)
    request.addfinalizer(doomed.stop)
    survivor = replicas[0]
    task_id = start_task(doomed, 60)
    assert task_get(survivor, task_id)[1]["result"]["status"] == "working"
    doomed.proc.send_signal(signal.SIGKILL)
    doomed.proc.wait(10)
    killed = time.monotonic()

    def failed():
        _, answer = task_get(survivor, task_id)
        return answer["result"] if answer["result"]["status"] == "failed" else None

    task = wait_until("the orphaned task to fail", failed, timeout=15, every=0.1)
    took = time.monotonic() - killed
    # The lease, one heartbeat and the polling.
    assert took < LEASE_BOUND + 2.5, took
    assert "stopped before it ended" in task["statusMessage"], task
    assert task["error"]["code"] == -32603


def call_through(balancer: Balancer, n: int) -> tuple[int, dict | str]:
    return post(balancer.base, "/rpc", {"jsonrpc": "2.0", "id": n, "method": "test_simple_text"})


def load(balancer: Balancer, stop: threading.Event, outcomes: list, workers: int = 8) -> list[threading.Thread]:
    def work(w: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            try:
                outcomes.append(call_through(balancer, w * 1_000_000 + n))
            except Exception as error:  # every failure counts, none is lost
                outcomes.append((0, repr(error)))

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(workers)]
    for thread in threads:
        thread.start()
    return threads


def test_a_replica_drained_under_load_loses_no_call(cluster, policy, request):
    redis, _, _ = cluster
    with tempfile.TemporaryDirectory() as workdir:
        pair = [Replica(redis, "d1", policy), Replica(redis, "d2", policy)]
        for replica in pair:
            request.addfinalizer(replica.stop)
        balancer = Balancer(pair, Path(workdir))
        request.addfinalizer(balancer.stop)
        # A long call on the replica that will drain: the drain waits for it.
        long_task = start_task(pair[0], 2)
        stop, outcomes = threading.Event(), []
        threads = load(balancer, stop, outcomes)
        time.sleep(1.0)
        pair[0].proc.send_signal(signal.SIGTERM)
        # While it drains, it is not ready and refuses new calls with 503.
        wait_until("readyz to turn 503", lambda: status(pair[0].base + "/readyz") in (503, 0), timeout=5)
        code, _ = post(pair[0].base, "/rpc", {"jsonrpc": "2.0", "id": 1, "method": "test_simple_text"})
        assert code in (503, 0), code
        assert pair[0].proc.wait(30) == 0
        time.sleep(1.0)
        stop.set()
        for thread in threads:
            thread.join(30)
    bad = [o for o in outcomes if o[0] != 200 or not isinstance(o[1], dict) or "result" not in o[1]]
    assert len(outcomes) > 50, len(outcomes)
    assert not bad, f"{len(bad)} of {len(outcomes)} calls lost: {bad[:3]}"
    # The task it ran finished before it exited (the drain waited).
    assert any("stopped" in line for line in pair[0].log)
    code, answer = task_get(pair[1], long_task)
    assert answer["result"]["status"] == "completed", answer


def test_redis_restarted_under_load(cluster):
    redis, replicas, balancer = cluster
    stop, outcomes = threading.Event(), []
    threads = load(balancer, stop, outcomes, workers=4)
    time.sleep(0.5)
    redis.stop()
    # Plain calls need no shared state: they go on. A task cannot be made
    # without it, and the error says why.
    code, answer = modern(replicas[0].base, "tools/call",
                          {"name": "test_long_task", "arguments": {"seconds": 1}}, name="test_long_task")
    assert "error" in answer, answer
    assert "shared task store is unreachable" in answer["error"]["message"]
    time.sleep(0.5)
    redis.start()
    # Recovery: the replicas reconnect by themselves.
    task_id = wait_until(
        "tasks to work again",
        lambda: _try_start_task(replicas[1]),
        timeout=20,
        every=0.25,
    )
    stop.set()
    for thread in threads:
        thread.join(30)
    answer = task_get(replicas[2], task_id)[1]
    assert answer.get("result", {}).get("status") in ("working", "completed"), answer
    assert all(r.alive() for r in replicas)
    assert not any("panicked" in line for r in replicas for line in r.log)
    bad = [o for o in outcomes if o[0] != 200 or "result" not in o[1]]
    assert len(outcomes) > 20 and not bad, f"{len(bad)} of {len(outcomes)}: {bad[:3]}"


def test_readiness_outlasts_a_redis_restart_not_an_outage(cluster):
    """A replica stays ready while Redis restarts (so the balancer keeps
    sending it the calls that need no shared state), and leaves once it has
    not reached Redis for a lease (3 s); it is ready again once Redis is."""
    redis, replicas, _ = cluster
    replica = replicas[0]
    ready = f"{replica.base}/readyz"
    assert status(ready) == 200
    seen = len(replica.log)
    redis.stop()
    try:
        wait_until(
            "a heartbeat to fail",
            lambda: any("shared state unreachable" in line for line in replica.log[seen:]),
            timeout=20,
        )
        # A heartbeat has failed, and the lease has not run out since.
        time.sleep(1.0)
        assert status(ready) == 200, "a replica left the balancer during a short outage"
        wait_until("the replica to leave the balancer", lambda: status(ready) == 503, timeout=20)
        body = text(ready)
        assert "state store unreachable" in body, body
    finally:
        redis.start()
    wait_until("the replica to be ready again", lambda: status(ready) == 200, timeout=20)


def test_replicas_agree_on_the_request_state_key_again_after_redis_lost_it(cluster, policy):
    redis, (a, b, c), _ = cluster
    # Redis loses its data, and a replica starting meanwhile seeds the key
    # before any running one re-seeds it: the running ones adopt it.
    assert redis.command("FLUSHALL") == b"+OK"
    seeded = os.urandom(32).hex()
    assert redis.command("SET", "airlock:state-key", seeded) == b"+OK"
    wait_until("every replica to adopt the stored key", lambda: all(
        any("adopting it" in line for line in r.log) for r in (a, b, c)), timeout=5)
    # A key written wrong is not adopted, and no replica stops being ready.
    assert redis.command("SET", "airlock:state-key", "junk") == b"+OK"
    wait_until("every replica to tell of the bad key", lambda: all(
        any("not 64 hex digits; keeping this replica's key" in line for line in r.log) for r in (a, b, c)), timeout=5)
    assert [status(r.base + "/readyz") for r in (a, b, c)] == [200, 200, 200]
    assert redis.command("SET", "airlock:state-key", seeded) == b"+OK"
    newcomer = Replica(redis, "r4", policy)
    try:
        call = {"name": "restock", "arguments": {"sku": "SKU-1001", "units": 1}}
        code, asked = modern(a.base, "tools/call", call, name="restock")
        assert code == 200 and asked["result"]["resultType"] == "input_required", asked
        yes = {"airlock-confirm": {"action": "accept", "content": {"confirm": True}}}
        answered = {**call, "requestState": asked["result"]["requestState"], "inputResponses": yes}
        code, done = modern(newcomer.base, "tools/call", answered, name="restock")
        assert code == 200 and done["result"]["resultType"] == "complete", done
    finally:
        newcomer.stop()


def _try_start_task(replica: Replica) -> str | None:
    code, answer = modern(replica.base, "tools/call",
                          {"name": "test_long_task", "arguments": {"seconds": 1}}, name="test_long_task")
    result = answer.get("result") if isinstance(answer, dict) else None
    return result["taskId"] if code == 200 and result and result.get("resultType") == "task" else None


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


_ = anyio  # the SDK test runs on anyio's pytest plugin


# --- 2025-11-25 tasks of a bearer token, across replicas ----------------------

TOKEN = "replica-test-token"


class Session:
    """A 2025-11-25 MCP session over raw HTTP, opened with a bearer token
    (this test's, unless told otherwise)."""

    def __init__(self, base: str, token: str | None = TOKEN) -> None:
        self.base = base
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "replica-test", "version": "1"}}}
        req = urllib.request.Request(
            base + "/mcp",
            data=json.dumps(init).encode(),
            headers={"Content-Type": "application/json",
                     "Accept": "application/json, text/event-stream", **self.headers},
        )
        with urllib.request.urlopen(req, timeout=30) as response:
            self.headers["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
        self.headers["MCP-Protocol-Version"] = "2025-11-25"
        post(base, "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, self.headers)

    def request(self, method: str, params: dict, id: int = 1, timeout: float = 30):
        return post(self.base, "/mcp", {"jsonrpc": "2.0", "id": id, "method": method, "params": params},
                    self.headers, timeout)


@pytest.fixture(scope="module")
def token_pair():
    import hashlib

    with tempfile.TemporaryDirectory() as workdir:
        policy = Path(workdir) / "airlock.toml"
        digest = hashlib.sha256(TOKEN.encode()).hexdigest()
        policy.write_text(f'[[tokens]]\nname = "agent-1"\nsha256 = "{digest}"\n')
        redis = Redis()
        pair = [Replica(redis, f"t{n}", policy) for n in (1, 2)]
        yield pair
        for replica in pair:
            replica.stop()
        redis.stop()


def test_a_tokens_tasks_are_listed_and_awaited_through_another_replica(token_pair):
    a, b = token_pair
    on_a, on_b = Session(a.base), Session(b.base)
    code, created = on_a.request("tools/call", {
        "name": "test_long_task", "arguments": {"seconds": 1}, "task": {"ttl": 60000}})
    assert code == 200, created
    task_id = created["result"]["task"]["taskId"]
    # Another session of the same token, on another replica: it lists the
    # task and waits for its result there.
    code, listed = on_b.request("tasks/list", {})
    assert task_id in [t["taskId"] for t in listed["result"]["tasks"]], listed
    code, result = on_b.request("tasks/result", {"taskId": task_id}, id=2)
    assert code == 200, result
    assert result["result"]["structuredContent"] == {"result": "counted 1 seconds"}, result
    assert result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == task_id
    code, got = on_b.request("tasks/get", {"taskId": task_id}, id=3)
    assert got["result"]["status"] == "completed", got


# --- a changed tool set, told to the clients of every replica ----------------


class Stream:
    """An SSE response read on a thread of its own: the JSON of each
    ``data:`` line, as it arrives."""

    def __init__(self, base: str, headers: dict, body: dict | None = None) -> None:
        host, port = base.removeprefix("http://").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=60)
        data = json.dumps(body).encode() if body is not None else None
        self.connection.request("POST" if data else "GET", "/mcp", body=data, headers=headers)
        self.response = self.connection.getresponse()
        assert self.response.status == 200, self.response.read()
        self.messages: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for raw in self.response:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("data:"):
                    self.messages.append(json.loads(line[5:]))
        except (OSError, ValueError, AttributeError):
            # AttributeError: http.client's answer to the socket closed
            # under a read.
            pass

    def methods(self) -> list[str]:
        return [m.get("method", "") for m in self.messages]

    def close(self) -> None:
        # Shut the socket down rather than close the response: a close
        # waits for the reading thread's lock, up to the read timeout.
        assert self.connection.sock is not None
        self.connection.sock.shutdown(socket.SHUT_RDWR)
        self.connection.close()


def listen(base: str) -> Stream:
    """A 2026-07-28 ``subscriptions/listen`` for tool list changes."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "notifications": {"toolsListChanged": True},
        "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                  "io.modelcontextprotocol/clientInfo": {"name": "replica-test", "version": "1"},
                  "io.modelcontextprotocol/clientCapabilities": {}}}}
    return Stream(base, {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"}, body)


@pytest.fixture(scope="module")
def watching(policy):
    """Three replicas serving one folder with ``--watch`` (as replicas on one
    host, or on a shared volume, do), behind HAProxy."""
    with tempfile.TemporaryDirectory() as workdir:
        folder = Path(workdir) / "tools"
        folder.mkdir()
        shutil.copy(CONFORMANCE, folder / "conformance.wasm")
        with three_replicas(policy, Path(workdir), "w", served=[str(folder)], extra=("--watch",)) as parts:
            _, replicas, balancer = parts
            yield folder, replicas, balancer


def test_a_changed_tool_set_reaches_the_clients_of_every_replica(watching):
    folder, replicas, balancer = watching
    # 2025-11-25: three sessions opened through the balancer (round robin
    # puts one on each replica), each with its GET stream, which HAProxy
    # sends to the session's replica by Mcp-Session-Id.
    sessions = [Session(balancer.base, token=None) for _ in replicas]
    legacy = [Stream(balancer.base, {**s.headers, "Accept": "text/event-stream"}) for s in sessions]
    # 2026-07-28: a subscriptions/listen on each replica.
    listens = [listen(r.base) for r in replicas]
    wait_until("every subscription to be acknowledged", lambda: all(
        "notifications/subscriptions/acknowledged" in s.methods() for s in listens), timeout=10)
    told_before = [sum("client(s) notified" in line for line in r.log) for r in replicas]

    shutil.copy(Path(COMPONENTS) / "export.wasm", folder / "export.wasm")
    streams = legacy + listens
    wait_until("list_changed on every stream", lambda: all(
        "notifications/tools/list_changed" in s.methods() for s in streams), timeout=30)
    for stream in streams:
        stream.close()
    # Every replica reloaded and told its own clients (two each: the
    # session pinned to it and the subscription opened on it).
    for replica, before in zip(replicas, told_before):
        told = [line for line in replica.log if "after reload;" in line]
        assert len(told) == 1 and sum("client(s) notified" in line for line in replica.log) == before + 1, \
            replica.log[-5:]
        assert told[0].endswith("2 client(s) notified"), told
        code, answer = modern(replica.base, "tools/list", {})
        assert "export_orders" in {t["name"] for t in answer["result"]["tools"]}, answer
    # And the new tool answers through the balancer, on whichever replica:
    # a task (its taskSupport is optional and the request declares the
    # tasks extension), read through the balancer too.
    for n in range(len(replicas)):
        code, answer = modern(balancer.base, "tools/call", {
            "name": "export_orders", "arguments": {"customer_id": "CUST-42"}}, name="export_orders", id=n)
        assert code == 200 and answer["result"]["resultType"] == "task", answer
        task_id = answer["result"]["taskId"]
        wait_until("the export to end", lambda: modern(
            balancer.base, "tasks/get", {"taskId": task_id}, name=task_id)[1]["result"]["status"] != "working")
        code, task = modern(balancer.base, "tasks/get", {"taskId": task_id}, name=task_id)
        assert task["result"]["status"] == "completed", task
        assert task["result"]["result"]["structuredContent"]["result"].startswith("order_id"), task
