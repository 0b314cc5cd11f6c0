"""Reading the guide's examples: its fenced blocks, the ``$ `` commands of
a transcript with what each shows, and trycmd's way of comparing what is
shown with what was printed (``[..]`` any text within a line, a line
``...`` any lines). Shared by test_docs.py (every client example of the
guide) and test_oauth_walkthrough.py (docs/deploy/oauth.md, step by step)."""

from __future__ import annotations

import re


def blocks(text: str) -> list[tuple[int, str, str, int]]:
    """The fenced blocks of a Markdown text: (line, info, body, end line)."""
    found, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if m:
            start, info, body = i + 1, m.group(1), []
            i += 1
            while i < len(lines) and lines[i].rstrip() != "```":
                body.append(lines[i])
                i += 1
            found.append((start, info, "\n".join(body), i + 1))
        i += 1
    return found


def matches(shown: list[str], printed: list[str]) -> bool:
    """trycmd's rules: `[..]` is any text in a line, a line `...` any lines."""
    if not shown:
        return not printed
    if shown[0] == "...":
        return any(matches(shown[1:], printed[k:]) for k in range(len(printed) + 1))
    if not printed:
        return False
    pattern = "^" + ".*?".join(map(re.escape, shown[0].split("[..]"))) + "$"
    return re.match(pattern, printed[0]) is not None and matches(shown[1:], printed[1:])


def trimmed(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.rstrip("\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def commands(body: str) -> list[tuple[str, str]]:
    """A transcript's `$ ` commands (with `\\` continuations) and what each shows."""
    out, lines, i = [], body.split("\n"), 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1
            continue
        command = lines[i][2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1] + " " + lines[i].strip()
        i += 1
        shown = []
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        out.append((command, "\n".join(shown)))
    return out
