"""Unit tests of airlock_http outside a component (plain CPython): what can
be checked without the network. The requests themselves are tested end to
end in runtime/tests/https.rs (examples/python/linkcheck).

Run: target/py/bin/python -m unittest discover -s sdk/python/tests
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import airlock_http as ah  # noqa: E402
from airlock_tool import ToolError  # noqa: E402


class Code:
    """Stands in for a binding's error class (`ErrorCode_…`)."""


class ErrorCode_HttpRequestDenied(Code):
    pass


class ErrorCode_ConnectionRefused(Code):
    pass


class FetchTest(unittest.TestCase):
    def test_outside_a_component_there_is_no_network(self):
        with self.assertRaises(ah.HttpError) as caught:
            ah.fetch("https://example.com/")
        self.assertEqual(caught.exception.code, "unavailable")
        self.assertIsInstance(caught.exception, ToolError)

    def test_urls_are_checked_before_anything_is_sent(self):
        for bad in ["example.com/x", "ftp://example.com/", "https:///x", "https://u:p@example.com/"]:
            with self.assertRaises(ah.HttpError) as caught:
                ah.fetch(bad)
            self.assertEqual(caught.exception.code, "invalid", bad)

    def test_error_codes_in_the_wits_spelling_with_their_meaning(self):
        self.assertEqual(ah._code(ErrorCode_HttpRequestDenied()), "HTTP-request-denied")
        self.assertEqual(ah._code(ErrorCode_ConnectionRefused()), "connection-refused")
        err = ah.HttpError("HTTP-request-denied")
        self.assertIn("only open-world tools", str(err))
        self.assertEqual(str(ah.HttpError("loop-detected")), "request failed: loop-detected")


class ResponseTest(unittest.TestCase):
    def test_headers_text_json_and_status(self):
        r = ah.Response(404, [("content-type", "application/json")], b'{"a": 1}')
        self.assertEqual(r.header("Content-Type"), "application/json")
        self.assertEqual(r.json(), {"a": 1})
        self.assertEqual(r.text(), '{"a": 1}')
        with self.assertRaises(ah.HttpError) as caught:
            r.raise_for_status()
        self.assertIn("404", str(caught.exception))
        ok = ah.Response(200, [], b"not json")
        self.assertIs(ok.raise_for_status(), ok)
        with self.assertRaises(ah.HttpError):
            ok.json()


if __name__ == "__main__":
    unittest.main()
