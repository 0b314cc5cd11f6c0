"""Resources, resource templates, prompts and completions of an airlock
component (the ``resources``, ``prompts`` and ``completions`` exports of
the world ``server``), as decorated Python functions.

A read is a function; a prompt is a function returning messages::

    from typing import Annotated, Optional
    from airlock_tool import Message, complete, prompt, resource, resource_template, toolbox

    @resource("file:///prices.csv", mime_type="text/csv")
    def price_list() -> str:
        \"\"\"Today's price list.\"\"\"
        return "sku,price\\nSKU-1001,12.5\\n"

    @resource_template("file:///notes/{name}", mime_type="text/markdown")
    def note(name: str) -> str:
        \"\"\"One note.\"\"\"
        return NOTES[name]           # a KeyError is "not found"

    @prompt(title="Code review")
    def review(code: Annotated[str, "The code"], language: Optional[str] = None) -> list[Message]:
        \"\"\"Asks for a review of a piece of code.\"\"\"
        return [Message.user(f"Please review this {language or ''} code:\\n{code}")]

    @complete(prompt=review, argument="language")
    def languages(value: str) -> list[str]:
        return [l for l in ("python", "rust") if l.startswith(value)]

    Tools = toolbox(price_list, note, review, languages)

``toolbox`` also defines ``Resources``, ``Prompts`` and ``Completions`` in
the calling module, the classes componentize-py looks for in the world
``server`` (empty when nothing is declared). Everything here works under
plain CPython too (``read``, ``get_prompt``, ``complete_value``), for unit
tests.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from typing import Any, Callable, Dict, List, Optional, Tuple, Union
from urllib.parse import unquote  # at the top: a component has only what was imported at build

import airlock_bundle
from airlock_types import (  # noqa: F401 - Image, Audio, EmbeddedResource, Block: re-exported
    Audio,
    Block,
    EmbeddedResource,
    Image,
    InvalidArguments,
    Message,
    ToolError,
    _icons,
    _role,
    _wit_block,
    _wit_types,
)

__all__ = [
    "resource",
    "resource_template",
    "prompt",
    "complete",
    "Message",  # these four from airlock_types
    "Image",
    "Audio",
    "EmbeddedResource",
    "Contents",
    "Completion",
    "NotFound",
    "Offers",
    "resource_updated",
]

_NAME_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")
MAX_VALUES = 100


class NotFound(Exception):
    """Raise from a read when there is no such resource (a ``KeyError`` or
    ``FileNotFoundError`` counts too)."""


# ---------------------------------------------------------------------------
# Contents and completions (a prompt's messages are airlock_types')


@dataclasses.dataclass
class Contents:
    """One piece of a resource's contents: ``text`` or ``blob`` (bytes)."""

    uri: str
    text: Optional[str] = None
    blob: Optional[bytes] = None
    mime_type: Optional[str] = None
    meta: Optional[Dict[str, Any]] = None


@dataclasses.dataclass
class Completion:
    """Values for an argument, with how many exist in all when known."""

    values: List[str]
    total: Optional[int] = None
    has_more: bool = False


# ---------------------------------------------------------------------------
# Declarations


@dataclasses.dataclass
class Resource:
    """A ``@resource``: its description and the read function."""

    func: Callable
    uri: str
    name: str
    title: Optional[str]
    description: Optional[str]
    mime_type: Optional[str]
    size: Optional[int]
    meta: Optional[Dict[str, Any]]
    audience: List[str]
    priority: Optional[float]
    last_modified: Optional[str] = None
    icons: List[Any] = dataclasses.field(default_factory=list)

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)


@dataclasses.dataclass
class Template:
    """A ``@resource_template``: its description and the read function."""

    func: Callable
    uri_template: str
    variables: List[str]
    name: str
    title: Optional[str]
    description: Optional[str]
    mime_type: Optional[str]
    audience: List[str] = dataclasses.field(default_factory=list)
    priority: Optional[float] = None
    last_modified: Optional[str] = None
    icons: List[Any] = dataclasses.field(default_factory=list)

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)


@dataclasses.dataclass
class PromptArgument:
    name: str
    description: Optional[str]
    required: bool


@dataclasses.dataclass
class Prompt:
    """A ``@prompt``: its description and the function."""

    func: Callable
    name: str
    title: Optional[str]
    description: Optional[str]
    arguments: List[PromptArgument]
    icons: List[Any] = dataclasses.field(default_factory=list)

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)


@dataclasses.dataclass
class Completer:
    """A ``@complete``: what it completes and the function."""

    func: Callable
    kind: str  # "prompt" | "resource-template"
    target: str
    argument: str
    takes_context: bool

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)


def _doc(func: Callable, description: Optional[str]) -> Optional[str]:
    return description or (inspect.cleandoc(func.__doc__) if func.__doc__ else None)


def resource(
    uri: str,
    *,
    name: Optional[str] = None,
    title: Optional[str] = None,
    description: Optional[str] = None,
    mime_type: Optional[str] = None,
    size: Optional[int] = None,
    meta: Optional[Dict[str, Any]] = None,
    audience: Optional[List[str]] = None,
    priority: Optional[float] = None,
    last_modified: Optional[str] = None,
    icons: Optional[List[Any]] = None,
):
    """Declares a resource with a fixed URI; the function (no parameters)
    returns its contents: ``str`` (text), ``bytes`` (a blob), ``Contents``
    or a list of them. ``meta`` is extra ``_meta`` (an MCP App's
    ``{"ui": {"csp": …}}``); ``audience`` (``user``, ``assistant``),
    ``priority`` (0 to 1) and ``last_modified`` (ISO 8601) are annotations;
    ``icons`` a list of ``airlock_tool.Icon``."""
    if ":" not in uri:
        raise ValueError(f"resource URI {uri!r} has no scheme, e.g. file:///… or ui://…")
    for role in audience or []:
        if role not in ("user", "assistant"):
            raise ValueError(f"audience holds user and assistant, not {role!r}")

    def wrap(f: Callable) -> Resource:
        if inspect.signature(f).parameters:
            raise TypeError(
                f"resource {uri!r} takes no parameters; for variables use @resource_template"
            )
        return Resource(f, uri, name or f.__name__, title, _doc(f, description), mime_type,
                        size, meta, list(audience or []), priority, last_modified,
                        list(icons or []))

    return wrap


def template_variables(template: str) -> List[str]:
    """The variable names of an RFC 6570 level-1 template, in order."""
    out, rest = [], template
    while "{" in rest:
        start = rest.index("{")
        end = rest.index("}", start)
        out.append(rest[start + 1:end])
        rest = rest[end + 1:]
    return out


def match_template(template: str, uri: str) -> Optional[Dict[str, str]]:
    """The variables of ``uri`` under a level-1 ``template``, percent-decoded,
    or ``None``: a value is never empty and holds no ``/``."""
    values: Dict[str, str] = {}
    rest, tail = uri, template
    while tail:
        if not tail.startswith("{"):
            literal = tail.split("{", 1)[0]
            if not rest.startswith(literal):
                return None
            rest, tail = rest[len(literal):], tail[len(literal):]
            continue
        close = tail.index("}")
        name, tail = tail[1:close], tail[close + 1:]
        following = tail.split("{", 1)[0]
        if not following and tail:
            return None
        end = rest.find(following) if following else len(rest)
        if end <= 0:
            return None
        value = rest[:end]
        if "/" in value:
            return None
        values[name] = unquote(value)
        rest = rest[end:]
    return values if not rest else None


def resource_template(
    uri_template: str,
    *,
    name: Optional[str] = None,
    title: Optional[str] = None,
    description: Optional[str] = None,
    mime_type: Optional[str] = None,
    audience: Optional[List[str]] = None,
    priority: Optional[float] = None,
    last_modified: Optional[str] = None,
    icons: Optional[List[Any]] = None,
):
    """Declares the resources of an RFC 6570 level-1 URI template; the
    function's parameters are its variables, by name. The other keywords
    are ``resource``'s."""
    variables = template_variables(uri_template)
    if not variables:
        raise ValueError(f"template {uri_template!r} has no {{variable}}; use @resource")

    def wrap(f: Callable) -> Template:
        params = list(inspect.signature(f).parameters)
        if sorted(params) != sorted(variables):
            raise TypeError(
                f"the parameters of {f.__name__} ({', '.join(params)}) must be the variables "
                f"of {uri_template!r} ({', '.join(variables)})"
            )
        return Template(f, uri_template, variables, name or f.__name__, title,
                        _doc(f, description), mime_type, list(audience or []), priority,
                        last_modified, list(icons or []))

    return wrap


def prompt(
    func: Optional[Callable] = None,
    *,
    name: Optional[str] = None,
    title: Optional[str] = None,
    description: Optional[str] = None,
    icons: Optional[List[Any]] = None,
):
    """Declares a prompt: its parameters are the arguments (strings;
    ``Optional`` or a default = not required; ``Annotated[str, "text"]``
    describes one), the docstring describes it, and it returns messages
    (``list[Message]``, one ``Message`` or a ``str``: one user message)."""

    def wrap(f: Callable) -> Prompt:
        prompt_name = name or f.__name__
        if not (1 <= len(prompt_name) <= 64) or not set(prompt_name) <= _NAME_CHARS:
            raise ValueError(f"prompt name {prompt_name!r} must be 1 to 64 of A-Z a-z 0-9 _ - .")
        hints = typing.get_type_hints(f, include_extras=True)
        arguments = []
        for p in inspect.signature(f).parameters.values():
            tp = hints.get(p.name, str)
            text = None
            if typing.get_origin(tp) is typing.Annotated:
                tp, *meta = typing.get_args(tp)
                text = next((m for m in meta if isinstance(m, str)), None)
                text = next((m.description for m in meta if hasattr(m, "description")), text)
            optional = type(None) in typing.get_args(tp)
            required = p.default is inspect.Parameter.empty and not optional
            arguments.append(PromptArgument(p.name, text, required))
        return Prompt(f, prompt_name, title, _doc(f, description), arguments, list(icons or []))

    return wrap(func) if func is not None else wrap


def complete(
    *,
    argument: str,
    prompt: Union[str, Prompt, None] = None,
    resource_template: Union[str, Template, None] = None,
):
    """Declares the completions of one argument of a prompt (or variable of
    a resource template), named by string or by its decorated function. The
    function takes the text typed so far (and, if it has a second
    parameter, a dict of the arguments already given) and returns values
    (``list[str]`` or ``Completion``); more than 100 are cut there."""
    if (prompt is None) == (resource_template is None):
        raise ValueError("complete() is for one prompt or one resource_template")
    if prompt is not None:
        kind, target = "prompt", prompt.name if isinstance(prompt, Prompt) else prompt
    else:
        kind = "resource-template"
        target = (resource_template.uri_template if isinstance(resource_template, Template)
                  else resource_template)

    def wrap(f: Callable) -> Completer:
        takes_context = len(inspect.signature(f).parameters) >= 2
        return Completer(f, kind, target, argument, takes_context)

    return wrap


# ---------------------------------------------------------------------------
# Dispatch (plain Python data)


def _contents(result: Any, uri: str, mime_type: Optional[str]) -> List[Contents]:
    if isinstance(result, Contents):
        result = [result]
    if isinstance(result, list) and all(isinstance(c, Contents) for c in result):
        for c in result:
            c.mime_type = c.mime_type or mime_type
        return result
    if isinstance(result, str):
        return [Contents(uri, text=result, mime_type=mime_type or "text/plain")]
    if isinstance(result, (bytes, bytearray)):
        return [Contents(uri, blob=bytes(result), mime_type=mime_type or "application/octet-stream")]
    raise TypeError(f"a read returns str, bytes or Contents, not {type(result).__name__}")


def _messages(result: Any) -> List[Message]:
    if isinstance(result, (str, Message)):
        result = [result]
    out = []
    for m in result:
        out.append(Message.user(m) if isinstance(m, str) else m)
        if not isinstance(out[-1], Message):
            raise TypeError(f"a prompt returns messages, not {type(m).__name__}")
    return out


class Offers:
    """The resources, templates, prompts and completions of one component."""

    def __init__(self, items: List[Any]):
        self.resources = [i for i in items if isinstance(i, Resource)]
        self.templates = [i for i in items if isinstance(i, Template)]
        self.prompts = {i.name: i for i in items if isinstance(i, Prompt)}
        self.completers = [i for i in items if isinstance(i, Completer)]
        uris = [r.uri for r in self.resources]
        if len(set(uris)) != len(uris):
            raise ValueError(f"two resources have the same URI: {uris}")
        names = [i.name for i in items if isinstance(i, Prompt)]
        if len(set(names)) != len(names):
            raise ValueError(f"two prompts have the same name: {names}")

    def read(self, uri: str) -> List[Contents]:
        """Reads ``uri``; raises ``NotFound`` (or the read's own error)."""
        for r in self.resources:
            if r.uri == uri:
                return _contents(r.func(), uri, r.mime_type)
        for t in self.templates:
            values = match_template(t.uri_template, uri)
            if values is not None:
                try:
                    result = t.func(**values)
                except (KeyError, FileNotFoundError) as err:
                    raise NotFound(f"no resource {uri!r}: {err}") from err
                return _contents(result, uri, t.mime_type)
        known = [r.uri for r in self.resources] + [t.uri_template for t in self.templates]
        raise NotFound(f"this component has no resource {uri!r} (it serves {known})")

    def get_prompt(self, name: str, arguments: Dict[str, str]) -> List[Message]:
        """The messages of prompt ``name``; ``InvalidArguments`` for a wrong one."""
        p = self.prompts.get(name)
        if p is None:
            raise InvalidArguments(f"this component has no prompt named {name!r}")
        missing = [a.name for a in p.arguments if a.required and a.name not in arguments]
        if missing:
            raise InvalidArguments(f"missing required argument {missing[0]!r}")
        unknown = set(arguments) - {a.name for a in p.arguments}
        if unknown:
            raise InvalidArguments(f"unknown arguments: {sorted(unknown)}")
        return _messages(p.func(**arguments))

    def complete_value(self, kind: str, target: str, argument: str, value: str,
                       context: Optional[Dict[str, str]] = None) -> Completion:
        """Values for ``argument`` of a prompt (``kind="prompt"``) or
        template (``"resource-template"``); none when nothing completes it."""
        for c in self.completers:
            if (c.kind, c.target, c.argument) == (kind, target, argument):
                result = c.func(value, dict(context or {})) if c.takes_context else c.func(value)
                if not isinstance(result, Completion):
                    result = Completion([str(v) for v in result])
                if len(result.values) > MAX_VALUES:
                    result = Completion(result.values[:MAX_VALUES],
                                        result.total or len(result.values), True)
                return result
        return Completion([])


def resource_updated(uri: str) -> None:
    """Tells the runtime that resource ``uri`` changed: subscribed clients
    are notified. Natively it does nothing."""
    try:
        from wit_world.imports import host
    except ImportError:
        return
    host.resource_updated(uri)


# ---------------------------------------------------------------------------
# The WIT exports


def export_classes(offers: Offers, tool_meta: List[Tuple[str, Dict[str, Any]]]):
    """The ``Resources``, ``Prompts`` and ``Completions`` classes of the
    world ``server`` (their methods run only inside a component)."""
    class Resources:
        def describe(self):
            airlock_bundle.running()
            from wit_world.exports import resources as r

            t = _wit_types()

            def annotations(x):
                if not x.audience and x.priority is None and x.last_modified is None:
                    return None
                return r.Annotations([_role(t, a) for a in x.audience], x.priority, x.last_modified)

            return r.Catalog(
                resources=[
                    r.Resource(x.uri, x.name, x.title, x.description, x.mime_type, x.size,
                               annotations(x), _icons(t, x.icons),
                               None if x.meta is None else json.dumps(x.meta))
                    for x in offers.resources
                ],
                templates=[
                    r.ResourceTemplate(x.uri_template, x.name, x.title, x.description,
                                       x.mime_type, annotations(x), _icons(t, x.icons))
                    for x in offers.templates
                ],
                tool_meta=[r.ToolMeta(name, json.dumps(meta)) for name, meta in tool_meta],
            )

        def read(self, uri: str):
            airlock_bundle.running()
            from componentize_py_types import Err
            from wit_world.exports import resources as r

            t = _wit_types()
            try:
                contents = offers.read(uri)
            except NotFound as err:
                raise Err(r.ReadError_NotFound(str(err)))
            except Exception as err:  # the read's own failure: name it
                raise Err(r.ReadError_Failed(f"{type(err).__name__}: {err}"))
            return [
                r.Contents(
                    c.uri,
                    c.mime_type,
                    t.ResourceBody_Text(c.text) if c.text is not None
                    else t.ResourceBody_Blob(bytes(c.blob or b"")),
                    None if c.meta is None else json.dumps(c.meta),
                )
                for c in contents
            ]

    class Prompts:
        def describe(self):
            airlock_bundle.running()
            from wit_world.exports import prompts as p

            return [
                p.Prompt(x.name, x.title, x.description,
                         [p.Argument(a.name, None, a.description, a.required) for a in x.arguments],
                         _icons(_wit_types(), x.icons))
                for x in offers.prompts.values()
            ]

        def get(self, name: str, arguments):
            airlock_bundle.running()
            from componentize_py_types import Err
            from wit_world.exports import prompts as p

            t = _wit_types()
            try:
                messages = offers.get_prompt(name, dict(arguments))
                return p.PromptMessages(
                    None, [p.Message(_role(t, m.role), _wit_block(t, m.content)) for m in messages]
                )
            except InvalidArguments as err:
                raise Err(t.Error_InvalidArguments(str(err)))
            except ToolError as err:
                raise Err(t.Error_Failed(str(err)))
            except Err:
                raise
            except Exception as err:
                raise Err(t.Error_Failed(f"{type(err).__name__}: {err}"))

    class Completions:
        def complete(self, reference, argument: str, value: str, context):
            airlock_bundle.running()
            from componentize_py_types import Err
            from wit_world.exports import completions as c

            t = _wit_types()
            kind = "prompt" if isinstance(reference, c.Reference_Prompt) else "resource-template"
            try:
                got = offers.complete_value(kind, reference.value, argument, value, dict(context))
            except Exception as err:
                raise Err(t.Error_Failed(f"{type(err).__name__}: {err}"))
            return c.Completion(list(got.values), got.total, got.has_more)

    return Resources, Prompts, Completions
