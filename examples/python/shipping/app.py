"""`shipping`: an example airlock tool written in Python.

Quotes the price of sending parcels; uses one parameter of each common kind
(string, integer, number, boolean, list, Literal, Optional, dataclass) and
raises a tool error for an impossible request. Build it with
`cargo xtask build-examples` (the component lands in
`target/examples/shipping.wasm`).
"""

from dataclasses import dataclass
from typing import Annotated, Literal, Optional

from airlock_tool import ToolError, arg, log, tool, toolbox

RATES = {"domestic": 4.5, "eu": 9.0, "world": 17.0}


@dataclass
class Quote:
    """The price of one shipment."""

    destination: str
    parcels: int
    total: float
    days: int
    notes: list[str]


@tool(read_only=True, idempotent=True, title="Shipping quote")
def shipping_quote(
    destination: Annotated[Literal["domestic", "eu", "world"], "Where the parcels go"],
    weight_kg: Annotated[
        float, arg(description="Weight of one parcel in kilograms (at most 30)", example=2.5)
    ],
    parcels: Annotated[int, "Number of parcels"] = 1,
    express: Annotated[bool, "Deliver in half the time, for twice the price"] = False,
    labels: Annotated[list[str], "Handling labels, e.g. fragile"] = [],
    reference: Annotated[Optional[str], "Your order reference, repeated in the notes"] = None,
) -> Quote:
    """Quotes the price and delivery time of sending parcels to a region."""
    if weight_kg <= 0 or weight_kg > 30:
        raise ToolError(f"a parcel must weigh more than 0 and at most 30 kg, not {weight_kg}")
    if parcels < 1:
        raise ToolError("parcels must be at least 1")
    total = RATES[destination] * parcels * (1 + weight_kg / 10)
    days = {"domestic": 2, "eu": 4, "world": 8}[destination]
    if express:
        total *= 2
        days = max(1, days // 2)
    notes = [f"label: {label}" for label in labels]
    if reference:
        notes.append(f"reference: {reference}")
    log.info(f"quoted {parcels} parcel(s) to {destination}")
    return Quote(destination, parcels, round(total, 2), days, notes)


Tools = toolbox(shipping_quote)
