"""Requests to the client during a call: ask the user (``elicit``,
``elicit_url``), ask the client's model (``sample``), learn the client's
roots (``roots``) — or several at once under keys the tool chooses
(``ask``). Each needs the operator's grant (``ask = ["elicit"]``,
``["sample"]``, ``["roots"]`` in the policy) and a client with the
capability; without them it raises an ``AskError`` the tool can handle::

    from airlock_tool import AskError, elicit, tool

    @tool
    def delete_report(name: str) -> str:
        \"\"\"Deletes a report after asking which copy to keep.\"\"\"
        try:
            answer = elicit("Keep a backup?", {
                "type": "object",
                "properties": {"backup": {"type": "boolean"}},
                "required": ["backup"],
            })
        except AskError as err:
            return f"not asked ({err.kind}): {err}"
        if not answer.accepted:
            return f"the user chose {answer.action}"
        return f"deleted {name}, backup={answer.content['backup']}"

Outside a component (plain CPython, unit tests) every request raises
``AskUnavailable``: there is no client to ask.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, List, Optional, Sequence, Union

from airlock_types import Message, _role, _wit_block, _wit_types

__all__ = [
    "AskError",
    "AskDenied",
    "AskUnavailable",
    "AskOverLimit",
    "AskFailed",
    "Elicited",
    "Sampled",
    "Root",
    "elicit",
    "elicit_url",
    "sample",
    "roots",
    "Elicit",
    "ElicitUrl",
    "Sample",
    "Roots",
    "Answers",
    "ask",
]


class AskError(Exception):
    """Why a request to the client has no answer; ``kind`` is ``denied``,
    ``unavailable``, ``over-limit`` or ``failed``. None of these ends the
    call: the tool decides what to do."""

    kind = "failed"


class AskDenied(AskError):
    """The operator did not grant this kind of request."""

    kind = "denied"


class AskUnavailable(AskError):
    """The client cannot answer: it lacks the capability, or no client can
    be asked (a CLI call, a native test)."""

    kind = "unavailable"


class AskOverLimit(AskError):
    """The call has used up what its grant allows."""

    kind = "over-limit"


class AskFailed(AskError):
    """The client answered with an error, or not within the call's time."""

    kind = "failed"


@dataclasses.dataclass
class Elicited:
    """The user's answer: ``action`` is ``accept``, ``decline`` or
    ``cancel``; ``content`` the form's values when accepted."""

    action: str
    content: Optional[Dict[str, Any]] = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


@dataclasses.dataclass
class Sampled:
    """The client model's answer (``text`` for a text answer, else the
    block as ``content``)."""

    role: str
    text: Optional[str]
    content: Any
    model: str
    stop_reason: Optional[str]


@dataclasses.dataclass
class Root:
    """A root the client exposes: information, never a folder to open."""

    uri: str
    name: Optional[str] = None


def _host():
    try:
        from wit_world.imports import host
    except ImportError:
        raise AskUnavailable("no client to ask outside a component") from None
    return host


def _call(fn, *args):
    from componentize_py_types import Err

    host = _host()
    try:
        return fn(*args)
    except Err as err:
        value = err.value
        cls = {
            host.AskError_Denied: AskDenied,
            host.AskError_Unavailable: AskUnavailable,
            host.AskError_OverLimit: AskOverLimit,
        }.get(type(value), AskFailed)
        raise cls(value.value) from None


def _answer(answer) -> Elicited:
    host = _host()
    if isinstance(answer, host.ElicitAnswer_Accept):
        return Elicited("accept", json.loads(answer.value) if answer.value else {})
    if isinstance(answer, host.ElicitAnswer_Decline):
        return Elicited("decline")
    return Elicited("cancel")


def elicit(message: str, schema: Dict[str, Any]) -> Elicited:
    """Asks the user to fill in a form: ``schema`` is a JSON Schema of a flat
    object (strings, numbers, booleans, enums)."""
    host = _host()
    return _answer(_call(host.elicit, message, json.dumps(schema)))


def elicit_url(message: str, url: str) -> Elicited:
    """Asks the user to open ``url`` (to sign in, to pay …) outside the
    client; the answer says whether they agreed."""
    host = _host()
    return _answer(_call(host.elicit_url, message, url))


def _sampling_request(host, t, messages, max_tokens, system_prompt=None, temperature=None,
                      stop_sequences=(), model_hints=(), cost_priority=None,
                      speed_priority=None, intelligence_priority=None):
    """The contract's ``sampling-request``."""
    if isinstance(messages, str):
        messages = [Message.user(messages)]
    wit_messages = [host.SamplingMessage(_role(t, m.role), _wit_block(t, m.content)) for m in messages]
    prefs = None
    if model_hints or cost_priority is not None or speed_priority is not None \
            or intelligence_priority is not None:
        prefs = host.ModelPreferences(list(model_hints), cost_priority, speed_priority,
                                      intelligence_priority)
    return host.SamplingRequest(wit_messages, system_prompt, int(max_tokens), temperature,
                                list(stop_sequences), prefs)


def _sampled(t, got) -> Sampled:
    text = got.content.value if isinstance(got.content, t.Content_Text) else None
    role = "user" if got.role == t.Role.USER else "assistant"
    return Sampled(role, text, got.content, got.model, got.stop_reason)


def sample(
    messages: Union[str, Sequence[Any]],
    *,
    max_tokens: int,
    system_prompt: Optional[str] = None,
    temperature: Optional[float] = None,
    stop_sequences: Sequence[str] = (),
    model_hints: Sequence[str] = (),
    cost_priority: Optional[float] = None,
    speed_priority: Optional[float] = None,
    intelligence_priority: Optional[float] = None,
) -> Sampled:
    """Asks the client's model for a completion. ``messages`` is a text (one
    user message) or a list of ``Message`` (``airlock_tool.Message``, text,
    image or audio); the grant caps ``max_tokens``."""
    host = _host()
    t = _wit_types()
    request = _sampling_request(host, t, messages, max_tokens, system_prompt, temperature,
                                stop_sequences, model_hints, cost_priority, speed_priority,
                                intelligence_priority)
    return _sampled(t, _call(host.sample, request))


def roots() -> List[Root]:
    """The client's roots (``file://`` URIs and names)."""
    host = _host()
    return [Root(r.uri, r.name) for r in _call(host.roots)]


# Several requests at once: ``ask({"key": Elicit(…), "other": Sample(…)})``.


@dataclasses.dataclass
class Elicit:
    """A form for the user, as ``elicit`` asks."""

    message: str
    schema: Dict[str, Any]


@dataclasses.dataclass
class ElicitUrl:
    """A URL for the user to open, as ``elicit_url`` asks."""

    message: str
    url: str


class Sample:
    """A completion by the client's model: the arguments of ``sample``."""

    def __init__(self, messages: Union[str, Sequence[Any]], **options: Any) -> None:
        if "max_tokens" not in options:
            raise TypeError("Sample needs max_tokens=…")
        self.messages, self.options = messages, options


class Roots:
    """The client's roots, as ``roots`` asks."""


class Answers(Dict[str, Any]):
    """The answers to a batch, by key, in its order: ``answers[key]`` is an
    ``Elicited``, a ``Sampled`` or a list of ``Root`` — or raises the
    ``AskError`` of a request that got none (``answers.error(key)`` gives it
    without raising)."""

    def __getitem__(self, key: str) -> Any:
        value = super().__getitem__(key)
        if isinstance(value, AskError):
            raise value
        return value

    def error(self, key: str) -> Optional[AskError]:
        value = super().__getitem__(key)
        return value if isinstance(value, AskError) else None


def _error(host, value) -> AskError:
    cls = {
        host.AskError_Denied: AskDenied,
        host.AskError_Unavailable: AskUnavailable,
        host.AskError_OverLimit: AskOverLimit,
    }.get(type(value), AskFailed)
    return cls(value.value)


def ask(requests: Dict[str, Union[Elicit, ElicitUrl, Sample, Roots]]) -> Answers:
    """Asks several things at once, each under a key the tool chooses (1 to
    64 characters of ``A-Z a-z 0-9 _ - .``): in revision 2026-07-28 they
    reach the client in one round, as ``inputRequests`` under these keys;
    with sessions one after another. Each request needs its grant and counts
    against the call's limits as alone. A batch that is empty, over 16
    requests or with a bad key raises ``AskFailed`` and asks nothing::

        answers = ask({
            "user_name": Elicit("What is your name?", {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            }),
            "greeting": Sample("Generate a greeting", max_tokens=50),
            "client_roots": Roots(),
        })
        name = answers["user_name"].content["name"]   # raises its AskError if it has none
    """
    host = _host()
    from componentize_py_types import Err, Ok

    t = _wit_types()
    wit_requests = []
    for key, request in requests.items():
        if isinstance(request, Elicit):
            wit = host.Request_Elicit(host.ElicitForm(request.message, json.dumps(request.schema)))
        elif isinstance(request, ElicitUrl):
            wit = host.Request_ElicitUrl(host.ElicitLink(request.message, request.url))
        elif isinstance(request, Sample):
            wit = host.Request_Sample(_sampling_request(host, t, request.messages, **request.options))
        elif isinstance(request, Roots) or request is Roots:
            wit = host.Request_Roots()
        else:
            raise TypeError(f"{key}: ask takes Elicit, ElicitUrl, Sample or Roots, not {request!r}")
        wit_requests.append((key, wit))
    try:
        results = host.ask(wit_requests)
    except Err as err:
        raise _error(host, err.value) from None
    answers = Answers()
    for (key, _), result in zip(wit_requests, results):
        if not isinstance(result, Ok):
            dict.__setitem__(answers, key, _error(host, result.value))
            continue
        got = result.value
        if isinstance(got, host.Answer_Elicited):
            value = _answer(got.value)
        elif isinstance(got, host.Answer_Sampled):
            value = _sampled(t, got.value)
        else:
            value = [Root(r.uri, r.name) for r in got.value]
        dict.__setitem__(answers, key, value)
    return answers
