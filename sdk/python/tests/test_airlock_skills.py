"""skills("folder"): every skill folder is read at import (build) time, each
file once with its path inside the skill, and toolbox() defines the
``Skills`` export for them."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import airlock_skills  # noqa: E402
from airlock_skills import skills  # noqa: E402
from airlock_tool import toolbox  # noqa: E402


def _write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)


class SkillsTest(unittest.TestCase):
    def test_a_folder_of_skills_is_read_file_by_file(self):
        with tempfile.TemporaryDirectory() as root:
            _write(root, "order-help/SKILL.md", "---\nname: order-help\ndescription: x\n---\n")
            _write(root, "order-help/references/steps.md", "1. Look")
            _write(root, "order-help/.hidden", "no")
            found = skills(".", base=root)
        self.assertEqual(
            found.items,
            [("order-help", [("SKILL.md", b"---\nname: order-help\ndescription: x\n---\n"),
                             ("references/steps.md", b"1. Look")])],
        )

    def test_a_skill_without_skill_md_or_with_a_bad_name_is_refused(self):
        with tempfile.TemporaryDirectory() as root:
            _write(root, "order-help/README.md", "x")
            with self.assertRaisesRegex(ValueError, "no SKILL.md at its root"):
                skills(".", base=root)
        with tempfile.TemporaryDirectory() as root:
            _write(root, "Order_Help/SKILL.md", "x")
            with self.assertRaisesRegex(ValueError, "lowercase letters, digits"):
                skills(".", base=root)

    def test_toolbox_defines_the_skills_export(self):
        with tempfile.TemporaryDirectory() as root:
            _write(root, "order-help/SKILL.md", "---\nname: order-help\ndescription: x\n---\n")
            found = skills(".", base=root)
        toolbox(found)
        exported = globals()["Skills"]
        self.assertEqual(exported.bundle, found.items)
        self.assertIsNot(airlock_skills.export_class([]).bundle, found.items)


if __name__ == "__main__":
    unittest.main()
