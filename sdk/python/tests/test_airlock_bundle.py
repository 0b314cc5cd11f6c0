"""Unit tests of airlock_bundle: requirements, dist-info reading, the import
guard (plain CPython; the build-time imports run under componentize-py,
tested end to end by `runtime/tests/languages.rs`).

Run: target/py/bin/python -m unittest discover -s sdk/python/tests
"""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import airlock_bundle as ab  # noqa: E402


class Requirements(unittest.TestCase):
    def test_names_without_comments_options_and_build_tools(self):
        text = """
# the tool's dependencies
componentize-py==0.25.1
tabulate==0.9.0  # tables
-r other.txt
--index-url https://example.org/simple
python-dateutil>=2.8; python_version >= "3.8"
requests[socks] @ https://example.org/requests.whl
Pip==24.0
"""
        self.assertEqual(
            ab.requirement_names(text), ["tabulate", "python-dateutil", "requests"]
        )


class DistInfo(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        sys.path.insert(0, self.root)

    def tearDown(self):
        sys.path.remove(self.root)
        self.dir.cleanup()

    def dist(self, folder, metadata, record="", top_level=None):
        path = os.path.join(self.root, folder)
        os.mkdir(path)
        with open(os.path.join(path, "METADATA"), "w") as f:
            f.write(metadata)
        with open(os.path.join(path, "RECORD"), "w") as f:
            f.write(record)
        if top_level is not None:
            with open(os.path.join(path, "top_level.txt"), "w") as f:
                f.write(top_level)

    def test_requirements_are_followed_and_extras_left_out(self):
        self.dist(
            "Some_Lib-1.0.dist-info",
            "Metadata-Version: 2.1\nName: Some.Lib\nRequires-Dist: helper-dist (>=1)\n"
            'Requires-Dist: fancy ; extra == "fancy"\nRequires-Dist: absent ; sys_platform == "win32"\n'
            "\nRequires-Dist: not-a-header\n",
            "some_lib/__init__.py,sha256=x,1\nsome_lib/part.py,,\n"
            "some_lib-1.0.dist-info/RECORD,,\n../../bin/some-cli,,\n",
        )
        self.dist(
            "helper_dist-2.0.dist-info",
            "Name: helper-dist\n",
            '"helper_mod.py",,\n',
            top_level="helper_mod\n",
        )
        self.dist("fancy-1.0.dist-info", "Name: fancy\n")
        dists = ab._distributions(["some-lib"])
        self.assertEqual([d.name for d in dists], ["Some.Lib", "helper-dist"])
        self.assertEqual(dists[0].top_level(), ["some_lib"])
        self.assertEqual(dists[1].top_level(), ["helper_mod"])

    def test_a_listed_requirement_that_is_not_installed_says_what_to_do(self):
        with self.assertRaises(ab.BundleError) as err:
            ab._distributions(["surely-not-installed-here"])
        self.assertIn("python3 build.py", str(err.exception))

    def test_a_distribution_none_of_whose_modules_imports_is_refused(self):
        self.dist(
            "native_only-1.0.dist-info",
            "Name: native-only\n",
            "native_only_ext.cpython-311-x86_64-linux-gnu.so,,\nnative_only/__init__.py,,\n",
        )
        os.mkdir(os.path.join(self.root, "native_only"))
        with open(os.path.join(self.root, "native_only", "__init__.py"), "w") as f:
            f.write("raise ImportError('needs its extension module')\n")
        (dist,) = ab._distributions(["native-only"])
        with self.assertRaises(ab.BundleError) as err:
            ab._bundle_distribution(dist)
        self.assertIn("pure-Python", str(err.exception))
        self.assertIn("needs its extension module", str(err.exception))

    def test_a_package_is_imported_whole_except_its_tests(self):
        pkg = os.path.join(self.root, "wholepkg")
        os.makedirs(os.path.join(pkg, "sub"))
        os.makedirs(os.path.join(pkg, "tests"))
        for rel, text in [
            ("__init__.py", ""),
            ("lazy.py", ""),
            ("broken.py", "raise RuntimeError('optional backend')\n"),
            ("__main__.py", "raise SystemExit('not run')\n"),
            ("sub/__init__.py", ""),
            ("sub/deep.py", ""),
            ("tests/__init__.py", ""),
        ]:
            with open(os.path.join(pkg, rel), "w") as f:
                f.write(text)
        self.dist("wholepkg-1.0.dist-info", "Name: wholepkg\n", "wholepkg/__init__.py,,\n")
        try:
            for dist in ab._distributions(["wholepkg"]):
                ab._bundle_distribution(dist)
            for name in ["wholepkg", "wholepkg.lazy", "wholepkg.sub", "wholepkg.sub.deep"]:
                self.assertIn(name, sys.modules)
            for name in ["wholepkg.broken", "wholepkg.__main__", "wholepkg.tests"]:
                self.assertNotIn(name, sys.modules)
        finally:
            for name in [m for m in sys.modules if m.split(".")[0] == "wholepkg"]:
                del sys.modules[name]


class Guard(unittest.TestCase):
    def test_refuses_missing_modules_only_once_running(self):
        guard = ab.ImportGuard()
        saved = list(sys.meta_path)
        try:
            guard.install()
            guard.install()
            self.assertEqual(sys.meta_path.count(guard), 1)
            import importlib
            import importlib.machinery

            self.assertLess(
                sys.meta_path.index(guard), sys.meta_path.index(importlib.machinery.PathFinder)
            )
            # Not running yet (building): the path finder still answers.
            import colorsys  # noqa: F401

            del sys.modules["colorsys"]
            guard.active = True
            with self.assertRaises(ModuleNotFoundError) as err:
                import colorsys  # noqa: F401,F811
            self.assertEqual(err.exception.name, "colorsys")
            self.assertIn("Import it at the top of app.py", str(err.exception))
            self.assertIn("requirements.txt", str(err.exception))
            # Built-in modules need no file and still import.
            builtin = next(n for n in sys.builtin_module_names if n not in sys.modules)
            importlib.import_module(builtin)
        finally:
            sys.meta_path[:] = saved

    def test_prepare_does_nothing_natively(self):
        saved = list(sys.meta_path)
        ab.prepare(__file__)
        self.assertEqual(sys.meta_path, saved)


if __name__ == "__main__":
    unittest.main()
