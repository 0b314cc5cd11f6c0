"""Unit tests of the batch of requests to the client (``ask``) outside a
component (plain CPython): what a tool sees of its answers, and that there
is no client to ask here. A batch in a component, against airlock, is
tests/clients/python/test_asks.py's (the conformance component) and was
checked by hand with a componentize-py tool.

Run: target/py/bin/python -m unittest discover -s sdk/python/tests
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from airlock_tool import (  # noqa: E402
    Answers,
    AskOverLimit,
    AskUnavailable,
    Elicit,
    Elicited,
    Roots,
    Sample,
    ask,
)


class Batch(unittest.TestCase):
    def test_outside_a_component_there_is_no_client(self):
        with self.assertRaises(AskUnavailable):
            ask({"user_name": Elicit("Name?", {"type": "object"}), "roots": Roots()})

    def test_a_sample_needs_max_tokens(self):
        with self.assertRaises(TypeError):
            Sample("hi")
        self.assertEqual(Sample("hi", max_tokens=5).options, {"max_tokens": 5})

    def test_an_answer_that_is_an_error_raises_it(self):
        answers = Answers()
        dict.__setitem__(answers, "name", Elicited("accept", {"name": "Ada"}))
        dict.__setitem__(answers, "greeting", AskOverLimit("limits.samplings"))
        self.assertEqual(answers["name"].content, {"name": "Ada"})
        self.assertIsNone(answers.error("name"))
        with self.assertRaises(AskOverLimit):
            answers["greeting"]
        self.assertEqual(answers.error("greeting").kind, "over-limit")
        self.assertEqual(list(answers), ["name", "greeting"])


if __name__ == "__main__":
    unittest.main()
