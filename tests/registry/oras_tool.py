"""What the registry tests ask of software no one here wrote.

- push / pull / manifest: the ORAS Python SDK against a plain-HTTP registry
  (the CNCF Wasm layout: config application/vnd.wasm.config.v0+json, one
  application/wasm layer);
- keygen / sign: cosign-compatible key-based signatures made with the
  `cryptography` package: an ECDSA P-256 key pair (cosign.pub is a PEM
  PUBLIC KEY), and the simple-signing payload pushed as the layer of the
  tag sha256-HEX.sig with its signature in the layer annotation
  dev.cosignproject.cosign/signature, as `cosign sign --key` does;
- htpasswd: a bcrypt htpasswd line for the registry's Basic auth.

Usage (run by runtime/tests/registry.rs with target/registry-venv's python):
  oras_tool.py push REGISTRY REPO:TAG FILE.wasm
  oras_tool.py pull REGISTRY REPO:TAG OUTDIR
  oras_tool.py manifest REGISTRY REPO:TAG
  oras_tool.py keygen DIR
  oras_tool.py sign REGISTRY REPO DIGEST KEY.pem [--claims OTHER-DIGEST]
  oras_tool.py htpasswd USER PASSWORD
"""

import base64
import json
import os
import sys
import tempfile

WASM_CONFIG = "application/vnd.wasm.config.v0+json"
PAYLOAD = "application/vnd.dev.cosign.simplesigning.v1+json"
SIGNATURE = "dev.cosignproject.cosign/signature"


def client(registry):
    import oras.client

    return oras.client.OrasClient(hostname=registry, insecure=True)


def push(registry, ref, wasm):
    work = tempfile.mkdtemp()
    config = os.path.join(work, "config.json")
    with open(config, "w") as f:
        json.dump(
            {
                "architecture": "wasm",
                "os": "wasip2",
                "layerDigests": [],
                "component": {"exports": [], "imports": [], "target": None},
            },
            f,
        )
    client(registry).push(
        target=f"{registry}/{ref}",
        files=[f"{wasm}:application/wasm"],
        manifest_config=f"{config}:{WASM_CONFIG}",
        disable_path_validation=True,
        quiet=True,
    )


def pull(registry, ref, outdir):
    for path in client(registry).pull(target=f"{registry}/{ref}", outdir=outdir):
        print(path)


def manifest(registry, ref):
    print(json.dumps(client(registry).get_manifest(f"{registry}/{ref}")))


def keygen(folder):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    with open(os.path.join(folder, "cosign.key"), "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    with open(os.path.join(folder, "cosign.pub"), "wb") as f:
        f.write(
            key.public_key().public_bytes(
                serialization.Encoding.PEM,
                serialization.PublicFormat.SubjectPublicKeyInfo,
            )
        )


def sign(registry, repo, digest, key_file, claims=None):
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    with open(key_file, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    payload = json.dumps(
        {
            "critical": {
                "identity": {"docker-reference": f"{registry}/{repo}"},
                "image": {"docker-manifest-digest": claims or digest},
                "type": "cosign container image signature",
            },
            "optional": None,
        },
        separators=(",", ":"),
    ).encode()
    signature = base64.b64encode(key.sign(payload, ec.ECDSA(hashes.SHA256()))).decode()
    work = tempfile.mkdtemp()
    payload_file = os.path.join(work, "payload.json")
    with open(payload_file, "wb") as f:
        f.write(payload)
    annotations = os.path.join(work, "annotations.json")
    with open(annotations, "w") as f:
        json.dump({payload_file: {SIGNATURE: signature}}, f)
    tag = digest.replace(":", "-", 1) + ".sig"
    client(registry).push(
        target=f"{registry}/{repo}:{tag}",
        files=[f"{payload_file}:{PAYLOAD}"],
        annotation_file=annotations,
        disable_path_validation=True,
        quiet=True,
    )


def htpasswd(user, password):
    import bcrypt

    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
    print(f"{user}:{hashed}")


def main(argv):
    command, args = argv[1], argv[2:]
    if command == "push":
        push(*args)
    elif command == "pull":
        pull(*args)
    elif command == "manifest":
        manifest(*args)
    elif command == "keygen":
        keygen(*args)
    elif command == "sign":
        claims = None
        if "--claims" in args:
            i = args.index("--claims")
            claims = args[i + 1]
            args = args[:i] + args[i + 2 :]
        sign(*args, claims=claims)
    elif command == "htpasswd":
        htpasswd(*args)
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv)
