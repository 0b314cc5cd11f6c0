"""Builds {{name}}.wasm from app.py (`python3 build.py`; `--help` for options).

On first use, and whenever requirements.txt changes, it makes the venv
`.venv` and installs componentize-py and requirements.txt into it. Then it
runs componentize-py with the venv's site-packages on the module path, so
the component has the packages requirements.txt lists (airlock_tool builds
them in whole, with everything they require).
"""

import argparse
import os
import shlex
import subprocess
import sys
import venv
from pathlib import Path

# The toolchain; airlock's own examples build with the same pin.
COMPONENTIZE_PY = "componentize-py==0.25.1"

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")


def say(text: str) -> None:
    """What the next step does, before it starts (some take half a minute)."""
    print(f"build.py: {text}", flush=True)


def run(cmd: list) -> None:
    shown = (os.path.relpath(c, HERE) if isinstance(c, Path) else c for c in cmd)
    print("+", " ".join(shlex.quote(str(c)) for c in shown), flush=True)
    subprocess.run(cmd, cwd=HERE, check=True)


def install() -> None:
    """The venv with the toolchain and requirements.txt, unless already there."""
    pins = COMPONENTIZE_PY + "\n" + (HERE / "requirements.txt").read_text()
    stamp = VENV / ".installed"
    if stamp.is_file() and stamp.read_text() == pins:
        return
    if not (BIN / "python").exists() and not (BIN / "python.exe").exists():
        say(f"making the virtual environment {VENV.name} (a few seconds)")
        print(f"+ python3 -m venv {VENV.name}", flush=True)
        venv.create(VENV, with_pip=True)
    say(f"installing {COMPONENTIZE_PY} and requirements.txt into {VENV.name}: the first "
        "time a download of about 20 MB, up to half a minute (pip's progress follows); "
        "later builds skip this until requirements.txt changes")
    run([BIN / "python", "-m", "pip", "install", "--disable-pip-version-check",
         COMPONENTIZE_PY, "-r", "requirements.txt"])
    stamp.write_text(pins)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--wasi", action="store_true",
        help="keep the WASI imports (for a tool that reads the folders the operator "
        "grants or uses the network); by default they are stubs and the component "
        "imports only airlock's own interface",
    )
    parser.add_argument(
        "--http", action="store_true",
        help="build with the world server-http, for a tool that uses airlock_http "
        "(implies --wasi)",
    )
    parser.add_argument("-o", "--output", default="{{name}}.wasm", help="the component (%(default)s)")
    args = parser.parse_args()
    if sys.version_info < (3, 11):
        sys.exit("error: componentize-py needs Python 3.11 or newer")
    try:
        install()
        site = subprocess.run(
            [BIN / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        world = "server-http" if args.http else "server"
        cmd = [BIN / "componentize-py", "-d", "wit", "-w", world, "componentize"]
        if not (args.wasi or args.http):
            cmd.append("-s")
        cmd += ["app", "-p", ".", "-p", os.path.relpath(site, HERE), "-o", args.output]
        say(f"building {args.output} from app.py and the Python it needs (10-20 s)")
        run(cmd)
    except subprocess.CalledProcessError as err:
        return err.returncode or 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
