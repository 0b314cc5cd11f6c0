"""The types every part of the SDK shares, as the contract's ``types``
interface has them: the errors a tool (or a prompt) raises, icons, the
blocks and messages of prompts and sampling requests — and their WIT forms.

``airlock_tool``, ``airlock_offers``, ``airlock_ask`` and ``airlock_http``
import them from here, and none of those is imported back: the SDK's
modules form a one-way graph. Tools import these names from
``airlock_tool``, which re-exports them::

    from airlock_tool import InvalidArguments, Message, ToolError

The bindings (``wit_world``) are looked up once, when this module is
imported (at build time); under plain CPython there are none and
``_wit_types`` says so.
"""

from __future__ import annotations

import dataclasses
from typing import Any, List, Optional, Union

__all__ = [
    "ToolError",
    "InvalidArguments",
    "Icon",
    "Image",
    "Audio",
    "EmbeddedResource",
    "Message",
]


class ToolError(Exception):
    """Raise to fail the call; the message reaches the client as the tool error."""


class InvalidArguments(ToolError):
    """Raise when the arguments do not fit (a check the schema cannot express).

    The client sees it as invalid arguments, like the runtime's own refusals.
    """


@dataclasses.dataclass(frozen=True)
class Icon:
    """An icon a client may show next to the tool."""

    src: str
    mime_type: Optional[str] = None
    sizes: List[str] = dataclasses.field(default_factory=list)


# ---------------------------------------------------------------------------
# Blocks and messages


@dataclasses.dataclass
class Image:
    """An image block of a message."""

    data: bytes
    mime_type: str


@dataclasses.dataclass
class Audio:
    """An audio block of a message."""

    data: bytes
    mime_type: str


@dataclasses.dataclass
class EmbeddedResource:
    """A resource inside a message: ``text`` or ``blob``."""

    uri: str
    text: Optional[str] = None
    blob: Optional[bytes] = None
    mime_type: Optional[str] = None


Block = Union[str, Image, Audio, EmbeddedResource]


@dataclasses.dataclass
class Message:
    """One message of a prompt: a role (``user`` or ``assistant``) and one
    block (text, ``Image``, ``Audio`` or ``EmbeddedResource``)."""

    role: str
    content: Block

    @staticmethod
    def user(content: Block) -> "Message":
        return Message("user", content)

    @staticmethod
    def assistant(content: Block) -> "Message":
        return Message("assistant", content)

    def __post_init__(self) -> None:
        if self.role not in ("user", "assistant"):
            raise ValueError(f"a message's role is user or assistant, not {self.role!r}")


# ---------------------------------------------------------------------------
# The WIT forms


def _find_wit_types():
    """The contract's ``types`` interface, found while the module is imported
    (when componentize-py builds the component; a failed import at run time
    would search files the component does not have). In the world
    ``toolbox-http`` (tools that use ``airlock_http``) componentize-py names
    it ``airlock_tool_types``, since ``wasi:http`` has a ``types`` too.
    ``None`` under plain CPython."""
    try:
        from wit_world.imports import airlock_tool_types as t
    except ImportError:
        try:
            from wit_world.imports import types as t
        except ImportError:
            return None
    return t


_WIT_TYPES = _find_wit_types()


def _wit_types():
    """The contract's ``types`` interface (inside a component only)."""
    if _WIT_TYPES is None:
        raise ImportError("the airlock:tool bindings exist only inside a component")
    return _WIT_TYPES


def _wit_block(t, block: Block):
    if isinstance(block, str):
        return t.Content_Text(block)
    if isinstance(block, Image):
        return t.Content_Image(t.Media(bytes(block.data), block.mime_type))
    if isinstance(block, Audio):
        return t.Content_Audio(t.Media(bytes(block.data), block.mime_type))
    if isinstance(block, EmbeddedResource):
        body = (t.ResourceBody_Text(block.text) if block.text is not None
                else t.ResourceBody_Blob(bytes(block.blob or b"")))
        return t.Content_Embedded(t.EmbeddedResource(block.uri, block.mime_type, body))
    raise TypeError(f"a message block is text, Image, Audio or EmbeddedResource, not {block!r}")


def _icons(t, icons: List[Any]):
    return [t.Icon(i.src, i.mime_type, list(i.sizes)) for i in icons]


def _role(t, role: str):
    return t.Role.USER if role == "user" else t.Role.ASSISTANT
