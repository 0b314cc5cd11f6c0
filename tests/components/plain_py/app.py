"""Plain WIT functions in Python (world ``plain-py`` in wit/plain.wit), as a
wassette-style component exports them: no airlock SDK. airlock serves each
function as a tool (``add``, ``divide``, ``norm``, ``shout``).
``cargo xtask build`` builds it into target/test-components/plain_py.wasm.
"""

import math
from typing import List

import wit_world
from componentize_py_types import Err


class WitWorld(wit_world.WitWorld):
    def add(self, a: int, b: int) -> int:
        return a + b

    def divide(self, a: float, b: float) -> float:
        # An `err` of a `result` is raised as `Err(value)`.
        if b == 0:
            raise Err(f"cannot divide {a} by zero")
        return a / b

    def norm(self, p: wit_world.Point) -> float:
        return math.hypot(p.x, p.y)

    def shout(self, words: List[str]) -> List[str]:
        return [w.upper() for w in reversed(words)]
