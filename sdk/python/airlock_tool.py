"""Write airlock tools as typed Python functions.

A tool is a function with type hints and a docstring; the ``@tool``
decorator turns it into a tool description (name, title, description, input
schema, output schema, hints) and ``toolbox(...)`` exports a set of tools as
the ``tools`` interface of the ``airlock:tool@0.1.2`` world ``server``
(with the component's resources, prompts and completions: see
``airlock_offers``; requests to the client: ``airlock_ask``)::

    from typing import Annotated
    from airlock_tool import tool, toolbox

    @tool(read_only=True, idempotent=True)
    def add(a: int, b: Annotated[int, "The second addend"] = 1) -> int:
        \"\"\"Adds two integers.\"\"\"
        return a + b

    Tools = toolbox(add)          # componentize-py looks for `Tools`

Build it with ``componentize-py -d wit -w server componentize app -o app.wasm``
(with this file on the module path, e.g. ``-p sdk/python``). A tool that
makes HTTP requests uses ``airlock_http`` and the world ``server-http``.
(The worlds ``toolbox`` and ``toolbox-http``, tools only, still build.)

The type table (parameter or result annotation -> JSON Schema):

=============================  ==========================================
``int``                        ``integer``
``float``                      ``number`` (an integer is accepted too)
``bool``                       ``boolean``
``str``                        ``string``
``datetime.datetime``          ``string`` with ``format: date-time``
``list[T]`` / ``List[T]``      ``array`` of ``T``
``Optional[T]`` / ``T | None`` ``T``, not required (``None`` when omitted)
``Literal["a", "b"]``          ``enum`` of the values (``string``/``integer``)
``enum.Enum`` subclass         ``enum`` of the members' values
``@dataclass`` / ``TypedDict`` ``object`` with ``properties``/``required``
``dict`` / ``Any``             any JSON value
``None`` (result only)         advertised as ``{"result": true}``
=============================  ==========================================

A parameter with a default in the signature is optional and the default is
advertised in the schema (the runtime fills it in before the call). Describe
a parameter with ``Annotated[T, "text"]`` or ``Annotated[T, arg(...)]``
(``arg(description=..., example="SKU-1001")``: an example is advertised as
``examples: [value]``).

This module works without the generated bindings (``wit_world``), so schema
generation can be unit-tested with plain CPython; in a component it finds
them when it is imported (at build time). The schemas themselves come from
``airlock_schema`` (``arg``, ``schema_of``, ``decode``), the errors, icons and
messages from ``airlock_types``: all re-exported here, with the names of
``airlock_offers`` and ``airlock_ask``.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
import typing
from typing import Any, Callable, Dict, List, Optional

import airlock_ask
import airlock_bundle
import airlock_offers
import airlock_skills
from airlock_ask import *  # noqa: F401,F403 - the requests to the client, re-exported
from airlock_offers import *  # noqa: F401,F403 - resources, prompts, completions, re-exported
from airlock_schema import (  # noqa: F401 - SchemaError, UNSET, decode: re-exported
    UNSET,
    SchemaError,
    _decodes_as_is,
    _jsonable,
    _split_annotated,
    _strip_optional,
    arg,
    decode,
    schema_of,
)
from airlock_types import Icon, InvalidArguments, ToolError, _icons, _wit_types

__all__ = [
    "tool",
    "toolbox",
    "arg",
    "Icon",
    "ToolError",
    "InvalidArguments",
    "Output",
    "log",
    "progress",
    "cancelled",
    "ToolInfo",
]
__all__ += airlock_offers.__all__ + airlock_ask.__all__

_NAME_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")


@dataclasses.dataclass
class Output:
    """Full control over a result: content blocks and structured JSON.

    ``content`` holds ``("text", str)``, ``("image", bytes, mime)`` and
    ``("audio", bytes, mime)`` tuples. A tool returning ``Output`` has no
    automatic output schema.
    """

    content: List[tuple] = dataclasses.field(default_factory=list)
    structured: Any = None

    def text(self, text: str) -> "Output":
        self.content.append(("text", text))
        return self

    def image(self, data: bytes, mime_type: str) -> "Output":
        self.content.append(("image", bytes(data), mime_type))
        return self

    def audio(self, data: bytes, mime_type: str) -> "Output":
        self.content.append(("audio", bytes(data), mime_type))
        return self


# ---------------------------------------------------------------------------
# Tools


@dataclasses.dataclass
class ToolInfo:
    """Everything ``describe`` reports about one tool, as plain Python data."""

    name: str
    title: Optional[str]
    description: str
    input_schema: Dict[str, Any]
    output_schema: Optional[Dict[str, Any]]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False
    icons: List[Icon] = dataclasses.field(default_factory=list)
    task_support: str = "forbidden"
    meta: Optional[Dict[str, Any]] = None


class Tool:
    """A decorated function: its ``ToolInfo`` and how to call it with JSON."""

    def __init__(self, func: Callable, info: ToolInfo, params: list, returns: Any):
        self.func = func
        self.info = info
        self._params = params  # (published name, python name, type)
        # What a call needs of the types, worked out once, here: componentize-py
        # keeps what importing the app computed, and every call runs in a
        # fresh instance of that snapshot, so per-call work is redone every
        # call (the result type's schema was half of a call's Python time).
        # A parameter whose JSON value is its Python value has no type here.
        self._decoders = [(p, name, None if _decodes_as_is(tp) else tp) for p, name, tp in params]
        self._published = frozenset(p for p, _, _ in params)
        self._returns = returns
        self._wrapped = _wraps_once(returns, info.output_schema)
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__

    def __call__(self, *args, **kwargs):
        """Calls the plain function (for native unit tests)."""
        return self.func(*args, **kwargs)

    def call_json(self, arguments: Dict[str, Any]) -> Output:
        """Runs the tool with checked JSON arguments; returns an ``Output``.

        Raises ``ToolError``/``InvalidArguments`` (and whatever the tool
        raises) unchanged.
        """
        kwargs = {}
        for published, pyname, tp in self._decoders:
            if published in arguments:
                value = arguments[published]
                kwargs[pyname] = value if tp is None else decode(tp, value)
        unknown = set(arguments) - self._published
        if unknown:
            raise InvalidArguments(f"unknown arguments: {sorted(unknown)}")
        try:
            result = self.func(**kwargs)
        except TypeError as err:
            # a missing argument the runtime should have caught (no schema)
            if "required positional argument" in str(err):
                raise InvalidArguments(str(err)) from err
            raise
        return self._output(result)

    def _output(self, result: Any) -> Output:
        if isinstance(result, Output):
            return result
        if self._returns is None or self._returns is type(None):
            return Output(structured={"result": True})
        value = _jsonable(result)
        if self.info.output_schema is None:
            return Output(structured=value if isinstance(value, dict) else {"result": value})
        wrapped = self._wrapped if self._wrapped is not None else _wraps(self._returns)
        if wrapped:
            out = Output(structured={} if value is None else {"result": value})
            if isinstance(value, str):
                out.content.append(("text", value))
            return out
        return Output(structured=value)


def _wraps(returns: Any) -> bool:
    """True when a result of this type is sent as ``{"result": value}``."""
    base, _ = _split_annotated(returns)
    inner, optional = _strip_optional(base)
    if optional:
        return True
    schema = schema_of(base, "the result")
    return schema.get("type") != "object"


def _wraps_once(returns: Any, output_schema: Optional[Dict[str, Any]]) -> Optional[bool]:
    """``_wraps(returns)`` where a call will ask it, else ``None`` (no output
    schema, no result type, or a type without a schema: the call asks and
    fails as it always did)."""
    if output_schema is None or returns is None or returns is type(None):
        return None
    try:
        return _wraps(returns)
    except SchemaError:
        return None


def _output_schema(returns: Any, func_name: str) -> Optional[Dict[str, Any]]:
    if returns is inspect.Signature.empty:
        return None
    if returns is None or returns is type(None):
        return _wrapped({"type": "boolean"}, optional=False)
    if returns is Output:
        return None
    schema = schema_of(returns, f"the result of {func_name}")
    if not _wraps(returns):
        return schema
    _, optional = _strip_optional(_split_annotated(returns)[0])
    return _wrapped(schema, optional)


def _wrapped(schema: Dict[str, Any], optional: bool) -> Dict[str, Any]:
    """The output schema of a result sent as ``{"result": value}``;
    ``x-airlock-wrapped`` tells the runtime (and ``/rpc``) that the tool's
    own value is the ``result`` member."""
    return {
        "type": "object",
        "properties": {"result": schema},
        "required": [] if optional else ["result"],
        "x-airlock-wrapped": True,
    }


def tool(
    func: Optional[Callable] = None,
    *,
    name: Optional[str] = None,
    title: Optional[str] = None,
    description: Optional[str] = None,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    open_world: bool = False,
    icons: Optional[List[Icon]] = None,
    task_support: str = "forbidden",
    output_schema: Optional[Dict[str, Any]] = None,
    ui: Optional[str] = None,
    meta: Optional[Dict[str, Any]] = None,
):
    """Declares a tool. Use as ``@tool`` or ``@tool(read_only=True, ...)``.

    ``ui="ui://…"`` links the tool to its MCP App (``_meta.ui.resourceUri``:
    a ``@resource`` of the same component); ``meta`` adds any other
    ``_meta`` (merged with ``ui``).

    The description is the docstring unless ``description`` is given; a tool
    without either is refused here, at import (and so at build time).
    Hints (``read_only``, ``destructive``, ``idempotent``, ``open_world``)
    are promises the runtime enforces: see docs/authoring.md.
    """

    def wrap(f: Callable) -> Tool:
        tool_name = name or f.__name__
        if not (1 <= len(tool_name) <= 64) or not set(tool_name) <= _NAME_CHARS:
            raise ValueError(
                f"tool name {tool_name!r} must be 1 to 64 characters of A-Z a-z 0-9 _ - ."
            )
        text = description or inspect.cleandoc(f.__doc__ or "")
        if not text:
            raise ValueError(f"tool {tool_name!r} has no description: give it a docstring")
        if task_support not in ("forbidden", "optional", "required"):
            raise ValueError(f"task_support must be forbidden, optional or required, not {task_support!r}")
        sig = inspect.signature(f)
        hints = typing.get_type_hints(f, include_extras=True)
        props: Dict[str, Any] = {}
        required: List[str] = []
        params = []
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise SchemaError(f"tool {tool_name!r}: *args and **kwargs cannot be parameters")
            if p.name not in hints:
                raise SchemaError(
                    f"tool {tool_name!r}: parameter {p.name!r} needs a type annotation"
                )
            tp = hints[p.name]
            published = p.name
            for m in _split_annotated(tp)[1]:
                if isinstance(m, arg) and m.rename:
                    published = m.rename
            schema = schema_of(tp, f"parameter {p.name!r} of {tool_name!r}")
            optional = _strip_optional(_split_annotated(tp)[0])[1]
            if p.default is not inspect.Parameter.empty:
                if p.default is not None:
                    schema["default"] = _jsonable(p.default)
            elif not optional:
                required.append(published)
            props[published] = schema
            params.append((published, p.name, tp))
        input_schema = {"type": "object", "properties": props, "required": required}
        returns = hints.get("return", sig.return_annotation)
        out_schema = output_schema if output_schema is not None else _output_schema(returns, tool_name)
        info = ToolInfo(
            name=tool_name,
            title=title,
            description=text,
            input_schema=input_schema,
            output_schema=out_schema,
            read_only=read_only,
            destructive=destructive,
            idempotent=idempotent,
            open_world=open_world,
            icons=list(icons or []),
            task_support=task_support,
            meta=_tool_meta(meta, ui),
        )
        return Tool(f, info, params, None if returns is inspect.Signature.empty else returns)

    return wrap(func) if func is not None else wrap


def _tool_meta(meta: Optional[Dict[str, Any]], ui: Optional[str]) -> Optional[Dict[str, Any]]:
    if ui is not None and not ui.startswith("ui://"):
        raise ValueError(f"ui names the tool's MCP App resource, a ui:// URI, not {ui!r}")
    if meta is None and ui is None:
        return None
    out = json.loads(json.dumps(meta or {}))
    if ui is not None:
        out.setdefault("ui", {})["resourceUri"] = ui
    return out


# ---------------------------------------------------------------------------
# The WIT exports


def _to_wit_output(out: Output):
    t = _wit_types()

    blocks = []
    for block in out.content:
        kind = block[0]
        if kind == "text":
            blocks.append(t.Content_Text(block[1]))
        elif kind == "image":
            blocks.append(t.Content_Image(t.Media(bytes(block[1]), block[2])))
        elif kind == "audio":
            blocks.append(t.Content_Audio(t.Media(bytes(block[1]), block[2])))
        else:
            raise ToolError(f"unknown content block kind {kind!r}")
    structured = None if out.structured is None else json.dumps(_jsonable(out.structured))
    return t.Output(content=blocks, structured=structured)


def _to_wit_tool(info: ToolInfo):
    t = _wit_types()

    hints = t.Hints(0)
    if info.read_only:
        hints |= t.Hints.READ_ONLY
    if info.destructive:
        hints |= t.Hints.DESTRUCTIVE
    if info.idempotent:
        hints |= t.Hints.IDEMPOTENT
    if info.open_world:
        hints |= t.Hints.OPEN_WORLD
    return t.Tool(
        name=info.name,
        title=info.title,
        description=info.description,
        input_schema=json.dumps(info.input_schema),
        output_schema=None if info.output_schema is None else json.dumps(info.output_schema),
        hints=hints,
        icons=_icons(t, info.icons),
        task_support=t.TaskSupport[info.task_support.upper()],
    )


def toolbox(*items):
    """The class implementing the WIT ``tools`` export for these tools.

    Assign it to ``Tools`` in the app module: ``Tools = toolbox(a, b)``.
    Its ``describe``/``call`` also work natively (``ToolInfo``/``Output``
    instead of the WIT records) when ``wit_world`` cannot be imported.

    ``items`` may also hold ``@resource``, ``@resource_template``,
    ``@prompt`` and ``@complete`` functions and ``skills("folder")``:
    ``toolbox`` defines the classes ``Resources``, ``Prompts``,
    ``Completions`` and ``Skills`` (the other exports of the world
    ``server``, empty when nothing is declared) in the calling module,
    unless it defines them itself. ``Tools.offers`` reads, gets prompts and
    completes natively, for unit tests.

    While componentize-py builds the component, it also builds in what
    calls import late: the app's ``requirements.txt``, whole, and the
    codecs (see ``airlock_bundle``).
    """
    caller = sys._getframe(1).f_globals
    airlock_bundle.prepare(caller.get("__file__"))
    tools = [i for i in items if isinstance(i, Tool)]
    skill_sets = [i for i in items if isinstance(i, airlock_skills.SkillSet)]
    offers = airlock_offers.Offers(
        [i for i in items if not isinstance(i, (Tool, airlock_skills.SkillSet))]
    )
    for i in items:
        if not isinstance(i, (Tool, airlock_offers.Resource, airlock_offers.Template,
                              airlock_offers.Prompt, airlock_offers.Completer,
                              airlock_skills.SkillSet)):
            raise TypeError(
                f"{i!r} is not a tool, resource, template, prompt, completion or skills: "
                "decorate it with @tool, @resource, @resource_template, @prompt or @complete, "
                "or bundle skills with skills(\"folder\")"
            )
    served = {r.uri for r in offers.resources}
    for t in tools:
        ui = (t.info.meta or {}).get("ui", {}).get("resourceUri")
        if ui is not None and ui not in served:
            raise ValueError(
                f"tool {t.info.name!r} names the UI {ui!r}, which no @resource of this component serves"
            )
    by_name: Dict[str, Tool] = {}
    for t in tools:
        if t.info.name in by_name:
            raise ValueError(f"two tools are named {t.info.name!r}")
        by_name[t.info.name] = t
    offers_of = offers

    class Tools:
        """The ``tools`` export: ``describe`` and ``call``."""

        registry = by_name
        offers = offers_of

        def describe(self):
            airlock_bundle.running()
            return [_to_wit_tool(t.info) for t in by_name.values()]

        def call(self, name: str, arguments: str):
            airlock_bundle.running()
            from componentize_py_types import Err

            wt = _wit_types()

            try:
                out = run(by_name, name, arguments)
                return _to_wit_output(out)
            except InvalidArguments as err:
                raise Err(wt.Error_InvalidArguments(str(err)))
            except ToolError as err:
                raise Err(wt.Error_Failed(str(err)))
            except Err:
                raise
            except Exception as err:  # the tool's own bug: name it
                raise Err(wt.Error_Failed(f"{type(err).__name__}: {err}"))

    tool_meta = [(t.info.name, t.info.meta) for t in by_name.values() if t.info.meta]
    classes = airlock_offers.export_classes(offers, tool_meta)
    for name, cls in zip(("Resources", "Prompts", "Completions"), classes):
        caller.setdefault(name, cls)
    caller.setdefault("Skills", airlock_skills.export_class(skill_sets))
    return Tools


def run(tools: Dict[str, Tool], name: str, arguments: str) -> Output:
    """Dispatches one call (no WIT types; used by ``Tools.call`` and tests)."""
    t = tools.get(name)
    if t is None:
        raise InvalidArguments(f"unknown tool {name!r}")
    try:
        args = json.loads(arguments) if arguments else {}
    except ValueError as err:
        raise InvalidArguments(f"the arguments are not JSON: {err}") from err
    if not isinstance(args, dict):
        raise InvalidArguments("the arguments must be a JSON object")
    return t.call_json(args)


# ---------------------------------------------------------------------------
# Host services


class _Log:
    """``log.info("...")`` etc.: messages to the client and the runtime's log."""

    _LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

    def __call__(self, level: str, message: str) -> None:
        if level not in self._LEVELS:
            raise ValueError(f"unknown log level {level!r}")
        try:
            from wit_world.imports import host
        except ImportError:  # native: unit tests
            print(f"[{level}] {message}", file=sys.stderr)
            return
        host.log(host.Level[level.upper()], str(message))

    def __getattr__(self, level: str):
        if level not in self._LEVELS:
            raise AttributeError(level)
        return lambda message: self(level, message)


log = _Log()


def progress(done: float, total: Optional[float] = None, message: Optional[str] = None) -> None:
    """Reports progress of the running call (values should grow)."""
    try:
        from wit_world.imports import host
    except ImportError:
        return
    host.progress(float(done), None if total is None else float(total), message)


def cancelled() -> bool:
    """True once the client has cancelled this call."""
    try:
        from wit_world.imports import host
    except ImportError:
        return False
    return bool(host.cancelled())
