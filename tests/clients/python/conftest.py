"""Fixtures for the client tests: the airlock binary, the served components,
and a server on a free loopback port (``cargo xtask test`` sets
``AIRLOCK_BIN``, ``AIRLOCK_COMPONENTS`` and ``AIRLOCK_TEST_COMPONENTS``)."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

import pytest
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[3]
AIRLOCK = os.environ.get("AIRLOCK_BIN", str(ROOT / "target/debug/airlock"))
COMPONENTS = os.environ.get("AIRLOCK_COMPONENTS", str(ROOT / "target/components"))
TEST_COMPONENTS = os.environ.get("AIRLOCK_TEST_COMPONENTS", str(ROOT / "target/test-components"))
# The conformance suite's fixtures (the test_* tools, resources and prompts):
# a test component, not one of the examples.
CONFORMANCE = f"{TEST_COMPONENTS}/conformance.wasm"
# What the shared server serves: the example tools and the fixtures.
SERVED = [COMPONENTS, CONFORMANCE]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Served:
    """``airlock serve --listen 127.0.0.1:PORT COMPONENTS…``, with its log."""

    def __init__(self, components: str | list[str] = SERVED, start_timeout: float = 60,
                 args: tuple[str, ...] = (), env: dict[str, str] | None = None,
                 port: int | None = None) -> None:
        """``args``: more flags of ``serve`` (with ``--tls-cert`` its URLs
        are https://); ``env``: its environment, if not this one; ``port``:
        listen there (one a policy already names), else on a free one.
        Raises RuntimeError, with the log, if it stops or does not listen
        within ``start_timeout``."""
        paths = [components] if isinstance(components, str) else list(components)
        if port is None:
            port = free_port()
        self.port = port
        scheme = "https" if "--tls-cert" in args else "http"
        self.base = f"{scheme}://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"
        self.log: list[str] = []
        self.proc = subprocess.Popen(
            [AIRLOCK, "serve", "--load-wait", "600", "--listen", f"127.0.0.1:{self.port}", *args, *paths],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        ready = threading.Event()
        listening = threading.Event()

        def drain() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log.append(line.rstrip("\n"))
                if "listening on" in line:
                    listening.set()
                    ready.set()
            ready.set()  # it stopped: no need to wait out start_timeout

        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(start_timeout) or not listening.is_set():
            self.stop()
            raise RuntimeError("airlock serve did not start: " + "\n".join(self.log))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def free_port() -> int:
    """A loopback port free now (another process may take it before use)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def served() -> AsyncIterator[Served]:
    server = Served()
    yield server
    server.stop()


def opener(paths: list[str], served: Served, transport: str, mode: str, timeout: float = 30):
    """``async with opener(...)(**kwargs) as client``: the official SDK's
    Client for ``paths``, over stdio (a server of its own) or Streamable HTTP
    (``served``), in ``mode``."""

    @asynccontextmanager
    async def open_client(**kwargs) -> AsyncIterator[Client]:
        server = (
            StdioServerParameters(command=AIRLOCK, args=["serve", "--stdio", "--load-wait", "600", *paths])
            if transport == "stdio"
            else served.url
        )
        async with Client(server, mode=mode, read_timeout_seconds=timeout, **kwargs) as client:
            yield client

    return open_client


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def connect(transport: str, mode: str, served: Served):
    """``async with connect(**kwargs) as client``: the official SDK's Client
    over the parametrized transport and mode."""
    return opener(SERVED, served, transport, mode)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory):
    """A throwaway CA and a certificate for 127.0.0.1 (``oauth_parts.Pki``)."""
    from oauth_parts import make_pki

    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def issuer(pki):
    """A real authorization server, oidc-provider, over HTTPS with ``pki``'s
    certificate (``oauth_parts.Issuer``)."""
    from oauth_parts import Issuer

    issuer = Issuer(pki)
    yield issuer
    issuer.stop()
