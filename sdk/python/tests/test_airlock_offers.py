"""Unit tests of resources, templates, prompts, completions, tool UI links
and the ask functions outside a component (plain CPython).

Run: target/py/bin/python -m unittest discover -s sdk/python/tests
"""

import os
import sys
import unittest
from typing import Annotated, Optional

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import airlock_offers as ao  # noqa: E402
from airlock_tool import (  # noqa: E402
    AskUnavailable,
    Icon,
    Completion,
    Contents,
    EmbeddedResource,
    Image,
    InvalidArguments,
    Message,
    NotFound,
    complete,
    elicit,
    prompt,
    resource,
    resource_template,
    roots,
    sample,
    tool,
    toolbox,
)

NOTES = {"todo": "- ship it"}


@resource("file:///prices.csv", mime_type="text/csv", audience=["user"], priority=0.5)
def price_list() -> str:
    """Today's price list."""
    return "sku,price\n"


@resource("file:///logo.png", name="logo", mime_type="image/png")
def logo_png() -> bytes:
    return b"\x89PNG"


@resource("ui://stock/chart", mime_type="text/html;profile=mcp-app",
          meta={"ui": {"csp": {"connectDomains": []}}})
def chart() -> str:
    return "<html></html>"


@resource_template("file:///notes/{name}", mime_type="text/markdown")
def note(name: str) -> str:
    """One note."""
    return NOTES[name]


@resource_template("db://orders/{id}/lines/{line}")
def order_line(id: str, line: str) -> Contents:
    return Contents(f"db://orders/{id}/lines/{line}", text=f"{id}:{line}", mime_type="text/plain")


@prompt(title="Code review")
def review(code: Annotated[str, "The code"], language: Optional[str] = None) -> list:
    """Asks for a review."""
    return [Message.user(f"Review this {language or 'some'} code:\n{code}"),
            Message.assistant("Sure.")]


@prompt(name="show-logo")
def show_logo():
    """Shows the logo."""
    return [Message.user(Image(b"\x89PNG", "image/png")),
            Message.user(EmbeddedResource("file:///a", text="A", mime_type="text/plain"))]


@prompt
def plain() -> str:
    """One user message."""
    return "hello"


@complete(prompt=review, argument="language")
def languages(value: str) -> list:
    return [lang for lang in ("python", "perl", "rust") if lang.startswith(value)]


@complete(resource_template="file:///notes/{name}", argument="name")
def note_names(value: str, context: dict) -> Completion:
    return Completion([f"{value}-{context.get('other', 'none')}"], total=1)


@tool(read_only=True, ui="ui://stock/chart", meta={"ui": {"visibility": ["app"]}})
def stock() -> int:
    """Stock levels."""
    return 3


Tools = toolbox(price_list, logo_png, chart, note, order_line, review, show_logo, plain,
                languages, note_names, stock)
OFFERS = Tools.offers


class ResourceTests(unittest.TestCase):
    def test_described_with_their_keys(self):
        self.assertEqual([r.uri for r in OFFERS.resources],
                         ["file:///prices.csv", "file:///logo.png", "ui://stock/chart"])
        first = OFFERS.resources[0]
        self.assertEqual((first.name, first.description, first.mime_type),
                         ("price_list", "Today's price list.", "text/csv"))
        self.assertEqual((first.audience, first.priority), (["user"], 0.5))
        self.assertEqual(OFFERS.resources[1].name, "logo")
        self.assertEqual(OFFERS.resources[2].meta, {"ui": {"csp": {"connectDomains": []}}})
        self.assertEqual([t.uri_template for t in OFFERS.templates],
                         ["file:///notes/{name}", "db://orders/{id}/lines/{line}"])

    def test_reads_text_blobs_and_templates(self):
        self.assertEqual(OFFERS.read("file:///prices.csv"),
                         [Contents("file:///prices.csv", text="sku,price\n", mime_type="text/csv")])
        self.assertEqual(OFFERS.read("file:///logo.png"),
                         [Contents("file:///logo.png", blob=b"\x89PNG", mime_type="image/png")])
        self.assertEqual(OFFERS.read("file:///notes/todo"),
                         [Contents("file:///notes/todo", text="- ship it", mime_type="text/markdown")])
        self.assertEqual(OFFERS.read("db://orders/7/lines/2")[0].text, "7:2")
        self.assertEqual(OFFERS.read("file:///notes/to%64o")[0].text, "- ship it")

    def test_what_is_not_there_is_not_found(self):
        with self.assertRaisesRegex(NotFound, "'nope'"):
            OFFERS.read("file:///notes/nope")
        with self.assertRaisesRegex(NotFound, r"file:///prices.csv.*file:///notes/\{name\}"):
            OFFERS.read("file:///other")
        with self.assertRaises(NotFound):
            OFFERS.read("file:///notes/a/b")

    def test_annotations_and_icons(self):
        icon = Icon("https://example.com/i.png", "image/png", ["48x48"])
        r = resource("x://a", last_modified="2026-12-05T10:00:00Z", icons=[icon])(lambda: "a")
        t = resource_template("x://{a}", audience=["assistant"], priority=0.3)(lambda a: a)
        p = prompt(name="hi", icons=[icon])(lambda: "hi")
        self.assertEqual((r.last_modified, r.icons), ("2026-12-05T10:00:00Z", [icon]))
        self.assertEqual((t.audience, t.priority, t.icons), (["assistant"], 0.3, []))
        self.assertEqual(p.icons, [icon])

    def test_declarations_are_checked_at_import(self):
        with self.assertRaisesRegex(TypeError, "must be the variables"):
            resource_template("x://{a}")(lambda b: b)
        with self.assertRaisesRegex(TypeError, "takes no parameters"):
            resource("x://a")(lambda b: b)
        with self.assertRaisesRegex(ValueError, "no scheme"):
            resource("nothing")
        with self.assertRaisesRegex(ValueError, "no @resource of this component"):
            toolbox(stock)


class PromptTests(unittest.TestCase):
    def test_parameters_are_arguments(self):
        p = OFFERS.prompts["review"]
        self.assertEqual((p.title, p.description), ("Code review", "Asks for a review."))
        self.assertEqual([(a.name, a.description, a.required) for a in p.arguments],
                         [("code", "The code", True), ("language", None, False)])

    def test_get_returns_messages(self):
        got = OFFERS.get_prompt("review", {"code": "x = 1", "language": "python"})
        self.assertEqual(got, [Message("user", "Review this python code:\nx = 1"),
                               Message("assistant", "Sure.")])
        self.assertEqual(OFFERS.get_prompt("plain", {}), [Message("user", "hello")])
        blocks = [m.content for m in OFFERS.get_prompt("show-logo", {})]
        self.assertIsInstance(blocks[0], Image)
        self.assertIsInstance(blocks[1], EmbeddedResource)

    def test_wrong_arguments_are_invalid(self):
        with self.assertRaisesRegex(InvalidArguments, "missing required argument 'code'"):
            OFFERS.get_prompt("review", {})
        with self.assertRaisesRegex(InvalidArguments, "unknown arguments"):
            OFFERS.get_prompt("review", {"code": "x", "other": "y"})
        with self.assertRaisesRegex(InvalidArguments, "no prompt named"):
            OFFERS.get_prompt("nope", {})


class CompletionTests(unittest.TestCase):
    def test_found_by_reference_and_argument(self):
        self.assertEqual(OFFERS.complete_value("prompt", "review", "language", "p").values,
                         ["python", "perl"])
        got = OFFERS.complete_value("resource-template", "file:///notes/{name}", "name", "to",
                                    {"other": "x"})
        self.assertEqual((got.values, got.total), (["to-x"], 1))
        self.assertEqual(OFFERS.complete_value("prompt", "review", "code", "").values, [])

    def test_more_than_a_hundred_are_cut(self):
        many = complete(prompt="p", argument="a")(lambda v: [str(i) for i in range(150)])
        got = ao.Offers([many]).complete_value("prompt", "p", "a", "")
        self.assertEqual((len(got.values), got.total, got.has_more), (100, 150, True))


class ToolUi(unittest.TestCase):
    def test_ui_and_meta_merge(self):
        self.assertEqual(stock.info.meta,
                         {"ui": {"visibility": ["app"], "resourceUri": "ui://stock/chart"}})
        with self.assertRaisesRegex(ValueError, "ui://"):
            tool(name="x", description="x", ui="https://x")(lambda: 1)

    def test_toolbox_defines_the_other_exports(self):
        for name in ("Resources", "Prompts", "Completions"):
            self.assertEqual(globals()[name].__qualname__, f"export_classes.<locals>.{name}")


class Asks(unittest.TestCase):
    def test_outside_a_component_there_is_no_client(self):
        for ask in (lambda: elicit("?", {"type": "object"}), lambda: sample("hi", max_tokens=5),
                    roots):
            with self.assertRaises(AskUnavailable) as caught:
                ask()
            self.assertEqual(caught.exception.kind, "unavailable")


if __name__ == "__main__":
    unittest.main()
