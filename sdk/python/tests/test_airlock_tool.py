"""Unit tests of airlock_tool's schema generation and dispatch (plain CPython).

Run: target/py/bin/python -m unittest discover -s sdk/python/tests
"""

import datetime
import enum
import json
import os
import sys
import unittest
from dataclasses import dataclass, field
from typing import Annotated, Any, List, Literal, Optional, TypedDict

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import airlock_tool as at  # noqa: E402
from airlock_tool import arg, tool, toolbox  # noqa: E402


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclass
class Point:
    x: int
    y: int = 0
    label: Optional[str] = None


class Row(TypedDict):
    id: int
    name: str


class Partial(TypedDict, total=False):
    note: str


def props(t):
    return t.info.input_schema["properties"]


class ScalarTypes(unittest.TestCase):
    def test_scalars(self):
        @tool
        def f(a: int, b: float, c: bool, d: str, e: datetime.datetime) -> None:
            """Doc."""

        self.assertEqual(
            props(f),
            {
                "a": {"type": "integer"},
                "b": {"type": "number"},
                "c": {"type": "boolean"},
                "d": {"type": "string"},
                "e": {"type": "string", "format": "date-time"},
            },
        )
        self.assertEqual(f.info.input_schema["required"], ["a", "b", "c", "d", "e"])

    def test_lists_optional_and_defaults(self):
        @tool
        def f(
            tags: list[str],
            nums: List[int] = [1, 2],
            maybe: Optional[int] = None,
            new_style: str | None = None,
            count: int = 3,
        ) -> None:
            """Doc."""

        p = props(f)
        self.assertEqual(p["tags"], {"type": "array", "items": {"type": "string"}})
        self.assertEqual(p["nums"], {"type": "array", "items": {"type": "integer"}, "default": [1, 2]})
        self.assertEqual(p["maybe"], {"type": "integer"})
        self.assertEqual(p["new_style"], {"type": "string"})
        self.assertEqual(p["count"], {"type": "integer", "default": 3})
        self.assertEqual(f.info.input_schema["required"], ["tags"])

    def test_optional_without_default_is_not_required(self):
        @tool
        def f(x: Optional[str]) -> None:
            """Doc."""

        self.assertEqual(f.info.input_schema["required"], [])

    def test_literal_and_enum(self):
        @tool
        def f(
            mode: Literal["fast", "slow"] = "fast",
            level: Literal[1, 2, 3] = 1,
            color: Color = Color.RED,
        ) -> None:
            """Doc."""

        p = props(f)
        self.assertEqual(p["mode"], {"type": "string", "enum": ["fast", "slow"], "default": "fast"})
        self.assertEqual(p["level"], {"type": "integer", "enum": [1, 2, 3], "default": 1})
        self.assertEqual(p["color"], {"type": "string", "enum": ["red", "green"], "default": "red"})

    def test_dataclass_and_typeddict(self):
        @tool
        def f(p: Point, r: Row, q: Partial) -> None:
            """Doc."""

        s = props(f)
        self.assertEqual(
            s["p"],
            {
                "type": "object",
                "properties": {
                    "x": {"type": "integer"},
                    "y": {"type": "integer", "default": 0},
                    "label": {"type": "string"},
                },
                "required": ["x"],
            },
        )
        self.assertEqual(
            s["r"],
            {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
                "required": ["id", "name"],
            },
        )
        self.assertEqual(s["q"]["required"], [])

    def test_any_and_dict(self):
        @tool
        def f(a: Any, b: dict) -> None:
            """Doc."""

        self.assertEqual(props(f), {"a": {}, "b": {}})

    def test_annotated_descriptions(self):
        @tool
        def f(
            a: Annotated[int, "How many"],
            b: Annotated[float, arg(description="Ratio", minimum=0, maximum=1)] = 0.5,
            c: Annotated[str, arg(rename="the-c")] = "x",
        ) -> None:
            """Doc."""

        p = props(f)
        self.assertEqual(p["a"], {"type": "integer", "description": "How many"})
        self.assertEqual(
            p["b"], {"type": "number", "description": "Ratio", "minimum": 0, "maximum": 1, "default": 0.5}
        )
        self.assertIn("the-c", p)
        self.assertEqual(f.info.input_schema["required"], ["a"])

    def test_examples(self):
        @tool
        def f(
            sku: Annotated[str, arg(description="Article number", example="SKU-1001")],
            color: Annotated[Color, arg(example=Color.GREEN)],
            at: Annotated[Optional[Point], arg(example=Point(1, 2))] = None,
            note: Annotated[Optional[str], arg(example=None)] = None,
            plain: Annotated[int, arg(description="No example")] = 1,
        ) -> None:
            """Doc."""

        p = props(f)
        self.assertEqual(
            p["sku"], {"type": "string", "description": "Article number", "examples": ["SKU-1001"]}
        )
        self.assertEqual(p["color"]["examples"], ["green"])
        self.assertEqual(p["at"]["examples"], [{"x": 1, "y": 2}])
        # None is an example (the sentinel says "not given").
        self.assertEqual(p["note"]["examples"], [None])
        self.assertNotIn("examples", p["plain"])
        # An example makes nothing optional.
        self.assertEqual(f.info.input_schema["required"], ["sku", "color"])

    def test_header_mirrors_a_parameter(self):
        @tool
        def f(
            region: Annotated[str, arg(header="Region")],
            query: str,
        ) -> None:
            """Doc."""

        p = props(f)
        self.assertEqual(p["region"], {"type": "string", "x-mcp-header": "Region"})
        self.assertNotIn("x-mcp-header", p["query"])
        for bad in ["", "My Region", "Region:Primary", "R\u00e9gion"]:
            with self.assertRaises(at.SchemaError) as ctx:

                @tool
                def g(region: Annotated[str, arg(header=bad)]) -> None:
                    """Doc."""

            self.assertIn("is not an HTTP header name", str(ctx.exception))

    def test_an_example_that_is_not_json_is_refused(self):
        with self.assertRaises(at.SchemaError) as ctx:

            @tool
            def f(x: Annotated[Any, arg(example=object())]) -> None:
                """Doc."""

        self.assertIn("the example of parameter 'x' of 'f' is not JSON", str(ctx.exception))

    def test_unsupported_type_names_the_parameter(self):
        with self.assertRaises(at.SchemaError) as ctx:

            @tool
            def f(cb: complex) -> None:
                """Doc."""

        self.assertIn("parameter 'cb' of 'f'", str(ctx.exception))

    def test_missing_annotation_is_refused(self):
        with self.assertRaises(at.SchemaError):

            @tool
            def f(x) -> None:
                """Doc."""


class ToolInfo(unittest.TestCase):
    def test_name_description_hints(self):
        @tool(read_only=True, idempotent=True, title="Sum", task_support="optional")
        def add(a: int, b: int = 1) -> int:
            """Adds two integers.

            Second paragraph.
            """
            return a + b

        i = add.info
        self.assertEqual(i.name, "add")
        self.assertEqual(i.title, "Sum")
        self.assertEqual(i.description, "Adds two integers.\n\nSecond paragraph.")
        self.assertTrue(i.read_only and i.idempotent)
        self.assertFalse(i.destructive or i.open_world)
        self.assertEqual(i.task_support, "optional")
        self.assertEqual(
            i.output_schema,
            {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"],
             "x-airlock-wrapped": True},
        )
        self.assertEqual(add(2, 3), 5)

    def test_missing_description_is_refused(self):
        with self.assertRaises(ValueError) as ctx:

            @tool
            def nodoc(a: int) -> int:
                return a

        self.assertIn("no description", str(ctx.exception))

    def test_bad_name_is_refused(self):
        with self.assertRaises(ValueError):
            tool(name="no spaces please")(lambda: None)

    def test_object_results_are_not_wrapped(self):
        @tool
        def f() -> Point:
            """Doc."""
            return Point(1, 2)

        self.assertEqual(f.info.output_schema["type"], "object")
        self.assertIn("x", f.info.output_schema["properties"])
        out = at.run({"f": f}, "f", "{}")
        self.assertEqual(out.structured, {"x": 1, "y": 2})

    def test_none_result(self):
        @tool
        def f() -> None:
            """Doc."""

        self.assertEqual(f.info.output_schema["properties"]["result"], {"type": "boolean"})
        self.assertEqual(at.run({"f": f}, "f", "{}").structured, {"result": True})

    def test_duplicate_names_are_refused(self):
        @tool
        def f() -> None:
            """Doc."""

        with self.assertRaises(ValueError):
            toolbox(f, f)


class Dispatch(unittest.TestCase):
    def test_decodes_arguments_into_python_types(self):
        seen = {}

        @tool
        def f(p: Point, c: Color, pts: list[Point], when: datetime.datetime, ratio: float) -> str:
            """Doc."""
            seen.update(p=p, c=c, pts=pts, when=when, ratio=ratio)
            return "ok"

        out = at.run(
            {"f": f},
            "f",
            json.dumps(
                {
                    "p": {"x": 1},
                    "c": "green",
                    "pts": [{"x": 2, "y": 3}],
                    "when": "2025-01-02T03:04:05Z",
                    "ratio": 2,
                }
            ),
        )
        self.assertEqual(seen["p"], Point(1))
        self.assertIs(seen["c"], Color.GREEN)
        self.assertEqual(seen["pts"], [Point(2, 3)])
        self.assertEqual(seen["when"].year, 2025)
        self.assertIsInstance(seen["ratio"], float)
        self.assertEqual(out.structured, {"result": "ok"})
        self.assertEqual(out.content, [("text", "ok")])

    def test_errors(self):
        @tool
        def f(x: int) -> int:
            """Doc."""
            if x < 0:
                raise at.InvalidArguments("x must not be negative")
            raise at.ToolError("nope")

        with self.assertRaises(at.InvalidArguments):
            at.run({"f": f}, "f", '{"x": -1}')
        with self.assertRaises(at.ToolError):
            at.run({"f": f}, "f", '{"x": 1}')
        with self.assertRaises(at.InvalidArguments):
            at.run({"f": f}, "g", "{}")
        with self.assertRaises(at.InvalidArguments):
            at.run({"f": f}, "f", "[1]")


class PerCallWork(unittest.TestCase):
    """What a call needs of the types is worked out when the tool is
    declared (in a component: while componentize-py builds it), not on each
    call, which runs in a fresh instance of the build's snapshot."""

    def setUp(self):
        self.saved = (at._wraps, at.schema_of, at.decode)

    def tearDown(self):
        at._wraps, at.schema_of, at.decode = self.saved

    def refuse(self, *names):
        def refused(*_args, **_kwargs):
            raise AssertionError("worked out during the call")

        for name in names:
            setattr(at, name, refused)

    def test_a_call_works_out_no_result_schema(self):
        @tool
        def point() -> Point:
            """Doc."""
            return Point(1, 2)

        @tool
        def text() -> Optional[str]:
            """Doc."""
            return "ok"

        self.refuse("_wraps", "schema_of")
        self.assertEqual(at.run({"point": point}, "point", "{}").structured, {"x": 1, "y": 2})
        out = at.run({"text": text}, "text", "{}")
        self.assertEqual(out.structured, {"result": "ok"})
        self.assertEqual(out.content, [("text", "ok")])

    def test_json_values_that_are_python_values_skip_decode(self):
        seen = {}

        @tool
        def f(
            s: str,
            n: Annotated[int, "n"],
            b: bool,
            lit: Literal["a", "b"],
            anything: Any,
            d: dict,
            maybe: Optional[str] = None,
        ) -> str:
            """Doc."""
            seen.update(s=s, n=n, b=b, lit=lit, anything=anything, d=d, maybe=maybe)
            return "ok"

        self.refuse("decode")
        args = {"s": "x", "n": 2, "b": True, "lit": "b", "anything": [1], "d": {"k": 1}, "maybe": "m"}
        at.run({"f": f}, "f", json.dumps(args))
        self.assertEqual(seen, args)

    def test_other_types_are_still_decoded(self):
        seen = {}

        @tool
        def f(ratio: float, p: Optional[Point] = None) -> str:
            """Doc."""
            seen.update(ratio=ratio, p=p)
            return "ok"

        at.run({"f": f}, "f", '{"ratio": 2, "p": {"x": 1}}')
        self.assertIsInstance(seen["ratio"], float)
        self.assertEqual(seen["p"], Point(1))


if __name__ == "__main__":
    unittest.main()
