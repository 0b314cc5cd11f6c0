"""`shipping`: an example airlock tool written in Python.

Quotes the price of sending parcels; uses one parameter of each common kind
(string, integer, number, boolean, list, Literal, Optional, dataclass) and
raises a tool error for an impossible request. It also offers its rates as
resources (all of them, and one region's through a template), a prompt that
asks for a shipping plan, and completions of the prompt's region; and
`book_pickup` asks the user for a date (an elicitation, where the operator
grants `ask = ["elicit"]`). Build it
with `cargo xtask build-examples` (the component lands in
`target/examples/shipping.wasm`).
"""

import json
from dataclasses import dataclass
from typing import Annotated, Literal, Optional

from airlock_tool import (
    AskError,
    Message,
    ToolError,
    arg,
    elicit,
    complete,
    log,
    prompt,
    resource,
    resource_template,
    tool,
    toolbox,
)

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


PICKUP_DATE = {
    "type": "object",
    "properties": {"date": {"type": "string", "format": "date", "description": "Pickup date"}},
    "required": ["date"],
}


@tool(title="Book a pickup")
def book_pickup(
    region: Annotated[
        Literal["domestic", "eu", "world"], arg(description="Where the parcels go", example="eu")
    ],
) -> str:
    """Books a pickup of parcels to a region, asking the user for the date
    (the next working day when no one can be asked)."""
    try:
        answer = elicit(f"When should the parcels to {region} be picked up?", PICKUP_DATE)
    except AskError as err:
        log.info(f"no date asked ({err.kind}): {err}")
        return f"pickup to {region} booked for the next working day"
    if not answer.accepted:
        return f"no pickup booked (the user chose {answer.action})"
    return f"pickup to {region} booked for {answer.content['date']}"


@resource("shipping://rates", title="Shipping rates", mime_type="application/json")
def rates() -> str:
    """The price per parcel of each region, before weight and express."""
    return json.dumps(RATES)


@resource_template("shipping://rates/{region}", mime_type="application/json")
def region_rate(region: str) -> str:
    """The price per parcel and the delivery days of one region."""
    return json.dumps({"region": region, "rate": RATES[region],  # KeyError: not found
                       "days": {"domestic": 2, "eu": 4, "world": 8}[region]})


@prompt(title="Plan a shipment")
def plan_shipment(
    region: Annotated[str, "Where the parcels go: domestic, eu or world"],
    weight_kg: Annotated[Optional[str], "Weight of one parcel in kilograms"] = None,
) -> list[Message]:
    """Asks for the cheapest way to ship parcels to a region."""
    weight = f" of {weight_kg} kg each" if weight_kg else ""
    return [
        Message.user(f"I need to ship parcels{weight} to the region {region}."),
        Message.user("Use shipping_quote to compare standard and express, and recommend one."),
    ]


@complete(prompt=plan_shipment, argument="region")
def regions(value: str) -> list[str]:
    return [r for r in RATES if r.startswith(value)]


Tools = toolbox(shipping_quote, book_pickup, rates, region_rate, plan_shipment, regions)
