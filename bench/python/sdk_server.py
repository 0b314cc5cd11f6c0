"""The unsandboxed peer of airlock's Python guest (`airlock-bench --only languages`).

The example guest's `shipping_quote` (examples/python/shipping/app.py), the
same body, served by the official MCP Python SDK (`mcp`, pinned in
tests/clients/requirements.txt) as its documentation sets a server up:
`MCPServer(...).streamable_http_app()` (Streamable HTTP, stateful sessions,
SSE answers) under uvicorn with its defaults, one process, no sandbox.
It prints "listening on http://ADDR/mcp" on stderr once it accepts
connections, as `airlock serve` does, so the bench starts both alike.
"""

import logging
import socket
import sys
from dataclasses import dataclass
from typing import Annotated, Literal, Optional

import uvicorn
from mcp.server.mcpserver import MCPServer

RATES = {"domestic": 4.5, "eu": 9.0, "world": 17.0}
log = logging.getLogger("shipping")


@dataclass
class Quote:
    """The price of one shipment."""

    destination: str
    parcels: int
    total: float
    days: int
    notes: list[str]


def shipping_quote(
    destination: Annotated[Literal["domestic", "eu", "world"], "Where the parcels go"],
    weight_kg: float,
    parcels: int = 1,
    express: bool = False,
    labels: list[str] = [],
    reference: Optional[str] = None,
) -> Quote:
    """Quotes the price and delivery time of sending parcels to a region."""
    if weight_kg <= 0 or weight_kg > 30:
        raise ValueError(f"a parcel must weigh more than 0 and at most 30 kg, not {weight_kg}")
    if parcels < 1:
        raise ValueError("parcels must be at least 1")
    total = RATES[destination] * parcels * (1 + weight_kg / 10)
    days = {"domestic": 2, "eu": 4, "world": 8}[destination]
    if express:
        total *= 2
        days = max(1, days // 2)
    notes = [f"label: {label}" for label in labels]
    if reference:
        notes.append(f"reference: {reference}")
    # The guest's log.info goes to a log the bench does not read; here too.
    log.info(f"quoted {parcels} parcel(s) to {destination}")
    return Quote(destination, parcels, round(total, 2), days, notes)


def main() -> None:
    server = MCPServer("shipping", log_level="WARNING")
    server.add_tool(shipping_quote)
    app = server.streamable_http_app()
    # IPPROTO_TCP named, as getaddrinfo would: asyncio sets TCP_NODELAY only
    # on sockets whose proto says TCP (with proto 0 every answer waited
    # ~40 ms for the client's delayed ACK between its SSE chunks).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    print(f"listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
