"""Plain functions for WASI 0.3 in Python: an async export awaiting the
0.3 monotonic clock beside a synchronous one (componentize-py's 0.3
bindings; `cargo xtask build` builds it into target/test-components)."""

import wit_world
from wit_world.imports import monotonic_clock


class WitWorld(wit_world.WitWorld):
    def twice(self, n: int) -> int:
        return n * 2

    async def pause(self, ms: int) -> str:
        started = monotonic_clock.now()
        await monotonic_clock.wait_for(ms * 1_000_000)
        return f"paused {(monotonic_clock.now() - started) // 1_000_000} ms"
