"""Skills a Python tool component carries: Agent Skills (a folder with a
``SKILL.md`` and the files it refers to) bundled into the component.

``skills("skills")`` reads every skill folder inside ``skills/`` (relative
to the calling module's file) when the module is imported. componentize-py
imports the app while it builds the component and keeps a snapshot, so the
files are read then, on the build machine, and their bytes are in the
component: nothing is read while it runs. List the result in ``toolbox``::

    Tools = toolbox(lookup_price, skills("skills"))

``toolbox`` then defines the class ``Skills`` (the world ``server``'s
``skills`` export). airlock checks the skills at load (the Agent Skills
rules), computes their digests and serves them itself.
"""

from __future__ import annotations

import os
import re
import sys
from typing import List, Optional, Tuple

__all__ = ["skills", "SkillSet", "export_class"]

_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class SkillSet:
    """The skills of one folder: ``(skill path, [(file path, bytes)])``."""

    def __init__(self, items: List[Tuple[str, List[Tuple[str, bytes]]]]):
        self.items = items


def _files(root: str) -> List[Tuple[str, bytes]]:
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(n for n in names if not n.startswith(".")):
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root).replace(os.sep, "/")
            with open(path, "rb") as f:
                found.append((relative, f.read()))
    return sorted(found)


def skills(folder: str, base: Optional[str] = None) -> SkillSet:
    """Every skill in ``folder`` (each a folder of its own with a
    ``SKILL.md``), read now; ``folder`` is relative to ``base``, by default
    the folder of the calling module's file."""
    if base is None:
        caller = sys._getframe(1).f_globals.get("__file__")
        base = os.path.dirname(os.path.abspath(caller)) if caller else os.getcwd()
    root = os.path.join(base, folder)
    if not os.path.isdir(root):
        raise FileNotFoundError(f"the skills' folder {root} does not exist")
    items = []
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if name.startswith(".") or not os.path.isdir(path):
            continue
        if len(name) > 64 or not _NAME.match(name):
            raise ValueError(
                f"skill folder {name!r}: a skill's name is 1 to 64 lowercase letters, digits "
                "and single hyphens, not starting or ending with one: rename the folder"
            )
        files = _files(path)
        if not any(p == "SKILL.md" for p, _ in files):
            raise ValueError(
                f"skill folder {name!r} has no SKILL.md at its root: add one (YAML front "
                f"matter with `name: {name}` and a `description`, then the instructions)"
            )
        items.append((name, files))
    if not items:
        raise ValueError(f"{root} holds no skill: put each in a folder of its own, with a SKILL.md")
    return SkillSet(items)


def export_class(sets: List[SkillSet]):
    """The ``Skills`` class of the world ``server`` for these skills (its
    method runs only inside a component)."""
    bundled = [item for s in sets for item in s.items]

    class Skills:
        """The ``skills`` export: ``describe``."""

        bundle = bundled

        def describe(self):
            from wit_world.exports import skills as k

            return [
                k.Skill(path, [k.File(p, data) for p, data in files])
                for path, files in bundled
            ]

    return Skills
