"""Unit tests of airlock_types, the types the SDK's modules share, outside a
component (plain CPython): it stands alone, and every module hands on the
same classes.

Run: target/py/bin/python -m unittest discover -s sdk/python/tests
"""

import os
import subprocess
import sys
import unittest

HERE = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, HERE)

import airlock_ask  # noqa: E402
import airlock_http  # noqa: E402
import airlock_offers  # noqa: E402
import airlock_tool  # noqa: E402
import airlock_types  # noqa: E402


class Shared(unittest.TestCase):
    def test_it_imports_no_other_module_of_the_sdk(self):
        # A fresh interpreter: what importing it alone brings in.
        out = subprocess.run(
            [sys.executable, "-c",
             "import sys, airlock_types; "
             "print(sorted(m for m in sys.modules if m.startswith('airlock_')))"],
            cwd=HERE, capture_output=True, text=True, check=True,
        )
        self.assertEqual(out.stdout.strip(), "['airlock_types']")

    def test_every_module_hands_on_the_same_classes(self):
        for name in airlock_types.__all__:
            self.assertIs(getattr(airlock_tool, name), getattr(airlock_types, name), name)
            self.assertIn(name, airlock_tool.__all__)
        for name in ("Message", "Image", "Audio", "EmbeddedResource"):
            self.assertIs(getattr(airlock_offers, name), getattr(airlock_types, name), name)
        self.assertIs(airlock_ask.Message, airlock_types.Message)
        self.assertIs(airlock_http.ToolError, airlock_tool.ToolError)
        self.assertTrue(issubclass(airlock_tool.InvalidArguments, airlock_tool.ToolError))

    def test_a_prompt_raising_invalid_arguments_is_refused_as_such(self):
        # airlock_offers raises the class a tool catches from airlock_tool.
        offers = airlock_offers.Offers([])
        with self.assertRaises(airlock_tool.InvalidArguments):
            offers.get_prompt("missing", {})

    def test_outside_a_component_there_are_no_wit_types(self):
        with self.assertRaises(ImportError):
            airlock_types._wit_types()


if __name__ == "__main__":
    unittest.main()
