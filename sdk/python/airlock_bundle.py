"""What a Python tool component contains, and what it says when a module is missing.

componentize-py builds a component by importing the app while it builds and
keeping a snapshot of the interpreter: the modules imported then are in the
component, the files they came from are not. A module first imported while
a call runs is therefore missing (and under ``-s``, where every WASI call is
a trapping stub, even looking for it traps the call with ``unreachable``).
Libraries import lazily all the time: a codec by name
(``"...".encode("unicode_escape")``), ``_strptime`` on the first
``datetime.strptime``, their own submodules inside functions.

``prepare`` runs while the component is built (``toolbox()`` calls it) and
imports what a call is likely to import late:

- every distribution the app's ``requirements.txt`` lists, and every
  distribution those require, whole (each top-level module with all its
  submodules, except ``tests`` and ``__main__``);
- all codecs (``encodings.*``) and ``_strptime``.

It also puts an import guard on ``sys.meta_path``, ahead of the path finder.
Once the component runs (``running()``, called by the ``tools`` export), the
guard answers the import of any module that is not in the component with a
``ModuleNotFoundError`` that says what to do, before anything touches the
filesystem: ``except ImportError`` works as in plain Python, and no call
traps.

Natively (``sys.platform != "wasi"``) nothing happens: plain CPython finds
modules on disk.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import pkgutil
import re
import sys
from typing import Iterable, List, Optional

__all__ = ["prepare", "running", "requirement_names", "ImportGuard", "BundleError"]

# Never imported while bundling: a package's own tests and its command line.
_SKIP = frozenset({"__main__", "tests", "test", "conftest"})
# Build tools that requirements.txt may list but the component does not use.
_TOOLCHAIN = frozenset({"componentize-py", "pip", "setuptools", "wheel"})
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")

# Modules the standard library imports only when first used.
_LATE_STDLIB = ("_strptime",)


class BundleError(ImportError):
    """A listed requirement that cannot be built into the component."""


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(text: str) -> List[str]:
    """The distribution names in a requirements file's text, in order.

    Comments, options (``-r``, ``--index-url``) and build tools
    (componentize-py, pip, setuptools, wheel) are left out.
    """
    names = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        m = _NAME.match(line)
        if m and _normalize(m.group(1)) not in _TOOLCHAIN:
            names.append(m.group(1))
    return names


class _Dist:
    """An installed distribution, read from its ``.dist-info`` folder (by
    hand: ``importlib.metadata`` would pull ``email``, ``zipfile`` and more
    into every component)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.name = os.path.basename(folder)[: -len(".dist-info")].rsplit("-", 1)[0]
        self.requires: List[str] = []
        for line in self._lines("METADATA"):
            if not line:
                break  # the headers end at the first blank line
            key, _, value = line.partition(":")
            if key == "Name":
                self.name = value.strip()
            elif key == "Requires-Dist":
                self.requires.append(value.strip())

    def _lines(self, file: str) -> List[str]:
        try:
            with open(os.path.join(self.folder, file), encoding="utf-8") as f:
                return f.read().splitlines()
        except OSError:
            return []

    def top_level(self) -> List[str]:
        """The importable top-level modules it installed."""
        names = set(self._lines("top_level.txt"))
        if not names:
            for line in self._lines("RECORD"):
                parts = line.rsplit(",", 2)[0].strip('"').split("/")
                first = parts[0]
                if first in ("", "..", "__pycache__") or first.endswith((".dist-info", ".data")):
                    continue
                if len(parts) > 1:
                    names.add(first)
                elif first.endswith(".py"):
                    names.add(first[:-3])
        return sorted(n.strip() for n in names if n.strip().isidentifier())


def _find(name: str) -> Optional[_Dist]:
    """The installed distribution of that name on ``sys.path``, if any."""
    key = _normalize(name)
    for entry in sys.path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:
            continue
        for item in listing:
            if item.endswith(".dist-info"):
                if _normalize(item[: -len(".dist-info")].rsplit("-", 1)[0]) == key:
                    return _Dist(os.path.join(entry or ".", item))
    return None


def _distributions(names: Iterable[str]) -> List[_Dist]:
    """The installed distributions named, and those they require (extras
    left out; a requirement whose marker did not install it is skipped)."""
    direct = {_normalize(n) for n in names}
    todo = list(names)
    found = {}
    while todo:
        name = todo.pop(0)
        key = _normalize(name)
        if key in found or key in _TOOLCHAIN:
            continue
        dist = _find(name)
        if dist is None:
            if key in direct:
                raise BundleError(
                    f"requirements.txt lists {name}, but it is not installed where the "
                    "build looks: install requirements.txt into the project's venv and pass "
                    "its site-packages with -p (python3 build.py does both)"
                )
            continue
        found[key] = dist
        for req in dist.requires:
            if "extra" in req.partition(";")[2]:
                continue
            m = _NAME.match(req)
            if m:
                todo.append(m.group(1))
    return list(found.values())


def _import_whole(package) -> None:
    """Imports every submodule of a package (failures skipped: optional
    backends, other platforms' extension modules)."""
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if info.name.rpartition(".")[2] in _SKIP:
            continue
        try:
            module = importlib.import_module(info.name)
        except (Exception, SystemExit):
            continue
        if info.ispkg and hasattr(module, "__path__"):
            _import_whole(module)


def _bundle_distribution(dist) -> None:
    """Imports a distribution whole; refuses one none of whose modules imports."""
    name = dist.name
    modules = dist.top_level()
    first_error: Optional[BaseException] = None
    imported = 0
    for top in modules:
        try:
            module = importlib.import_module(top)
        except (Exception, SystemExit) as err:
            first_error = first_error or err
            continue
        imported += 1
        if hasattr(module, "__path__"):
            _import_whole(module)
    if modules and not imported:
        raise BundleError(
            f"requirements.txt: {name} cannot be imported in the component "
            f"({type(first_error).__name__}: {first_error}); a tool can use pure-Python "
            "packages only (a py3-none-any wheel), not extension modules"
        )


def _import_codecs() -> None:
    import encodings

    for info in pkgutil.iter_modules(encodings.__path__, "encodings."):
        try:
            importlib.import_module(info.name)
        except (Exception, SystemExit):
            continue  # another platform's codec (mbcs, oem)
    for name in _LATE_STDLIB:
        importlib.import_module(name)


class ImportGuard:
    """A ``sys.meta_path`` finder that, once active, refuses every module the
    finders ahead of it (built-in, frozen) do not have, with what to do."""

    def __init__(self) -> None:
        self.active = False

    def find_spec(self, name, path=None, target=None):
        if not self.active:
            return None
        raise ModuleNotFoundError(
            f"No module named {name!r} in this component: componentize-py builds in only "
            "the modules imported while it builds. Import it at the top of app.py, or list "
            "its distribution in requirements.txt (listed distributions are built in whole)",
            name=name,
        )

    def install(self) -> None:
        if self in sys.meta_path:
            return
        at = len(sys.meta_path)
        for i, finder in enumerate(sys.meta_path):
            if finder is importlib.machinery.PathFinder:
                at = i
                break
        sys.meta_path.insert(at, self)


_guard = ImportGuard()


def prepare(app_file: Optional[str]) -> None:
    """At build time (under WASI): imports what calls may import late (see
    the module's doc) and installs the import guard. ``app_file`` is the
    app module's file; its folder's ``requirements.txt`` is read."""
    if sys.platform != "wasi" or _guard in sys.meta_path:
        return
    _import_codecs()
    if app_file:
        path = os.path.join(os.path.dirname(app_file), "requirements.txt")
        try:
            with open(path, encoding="utf-8") as f:
                names = requirement_names(f.read())
        except FileNotFoundError:
            names = []
        for dist in _distributions(names):
            _bundle_distribution(dist)
    _guard.install()


def running() -> None:
    """Called by the component's exports: from now on a missing module is a
    clear ``ModuleNotFoundError`` (no filesystem lookup)."""
    _guard.active = True
