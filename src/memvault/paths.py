"""Identifiers with any character in a path: a conversation id or a working-memory key may hold
``/`` (``slack/C042/1712.5``), and the client sends it percent-encoded (``slack%2FC042%2F1712.5``).

The server decodes a path before routing, so ``%2F`` would become a separator and the id would
reach no route. :class:`EncodedSlashes` routes on the path as sent instead: each segment is
decoded, then only ``%`` and ``/`` are escaped back, so a ``/`` inside an id stays inside its
segment. Whatever reads a path value undoes that with :func:`path_value`; it is exact, since
nothing else is escaped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send


def path_segment(value: str) -> str:
    """``value`` as one path segment, every character kept: ``/`` and ``%`` encoded, and a
    segment of dots (``.``, ``..``) too, which HTTP clients would otherwise resolve away.
    ``memvault.client`` encodes its path values the same way."""
    encoded = quote(value, safe="")
    return encoded.replace(".", "%2E") if not encoded.strip(".") else encoded


def path_value(routed: str) -> str:
    """The identifier a path parameter holds, as the caller wrote it."""
    return unquote(routed)


def _escaped(segment: str) -> str:
    return unquote(segment).replace("%", "%25").replace("/", "%2F")


def routed_path(raw_path: bytes) -> str | None:
    """The path to route on, or ``None`` where the decoded one already is (nothing was
    percent-encoded) or the raw path is not ASCII (left to the server's own decoding)."""
    if b"%" not in raw_path:
        return None
    try:
        text = raw_path.decode("ascii")
    except UnicodeDecodeError:
        return None
    return "/".join(_escaped(segment) for segment in text.split("/"))


class EncodedSlashes:
    """ASGI middleware: route on the segments the client sent (see the module's docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] in ("http", "websocket") else None
        routed = routed_path(raw) if raw else None
        if routed is not None:
            scope = {**scope, "path": routed}
        await self.app(scope, receive, send)


__all__ = ["EncodedSlashes", "path_segment", "path_value", "routed_path"]
