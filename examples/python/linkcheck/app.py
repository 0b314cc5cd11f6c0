"""`linkcheck`: an open-world example airlock tool written in Python.

Checks a link: fetches it with `airlock_http.fetch` and reports the status,
the content type, the size and (for an HTML page) its title. airlock lets
it reach only the hosts the operator lists in the policy's `network`.
Built with the world `toolbox-http` and without `-s` (see
docs/authoring.md); `cargo xtask build-examples` puts it in
`target/examples/linkcheck.wasm`.
"""

import re
from dataclasses import dataclass
from typing import Annotated, Optional

from airlock_http import fetch
from airlock_tool import arg, tool, toolbox

TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


@dataclass
class Link:
    """What the link answered."""

    url: str
    status: int
    ok: bool
    content_type: Optional[str]
    bytes: int
    title: Optional[str]


@tool(read_only=True, idempotent=True, open_world=True, title="Check a link")
def check_link(
    url: Annotated[str, arg(description="The http or https URL to check", example="https://example.com/")],
) -> Link:
    """Fetches a URL and reports its status, content type, size and, for
    an HTML page, its title. The operator must list the host in the
    policy's `network`."""
    response = fetch(url, headers={"accept": "text/html, */*"})
    match = TITLE.search(response.body)
    title = match.group(1).decode("utf-8", "replace").strip() if match else None
    return Link(
        url=url,
        status=response.status,
        ok=200 <= response.status < 300,
        content_type=response.header("content-type"),
        bytes=len(response.body),
        title=title,
    )


Tools = toolbox(check_link)
