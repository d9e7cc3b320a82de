"""The last /ui route: an address no page lives at answers an HTML 404, and a page asked with
a method it does not take (a GET on an action's URL) an HTML 405, both with every page's
security headers (``UIRoute``), rather than the API's JSON envelope without them."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute

from memvault.ui.web import UIRoute, error_page

_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def router_beside(pages: Sequence[APIRouter]) -> APIRouter:
    """A router answering every path under its prefix that ``pages`` do not."""
    router = APIRouter(route_class=UIRoute)

    @router.api_route("/{path:path}", methods=_METHODS, response_class=HTMLResponse)
    async def nowhere(request: Request, path: str) -> Response:
        allowed = _methods_at(pages, "/" + path)
        if not allowed:
            return error_page(request, 404, "There is no page at this address.")
        return _not_this_way(request, allowed)

    return router


def _methods_at(pages: Sequence[APIRouter], path: str) -> set[str]:
    """The methods the pages answer this path with (it reached here by another one)."""
    routes = [r for router in pages for r in router.routes if isinstance(r, APIRoute)]
    return {m for r in routes if r.path_regex.match(path) for m in r.methods or ()}


def _not_this_way(request: Request, allowed: set[str]) -> Response:
    if allowed == {"POST"}:
        message = "This address is an action: use its button on the page."
    else:
        message = f"This address does not answer {request.method}."
    response = error_page(request, 405, message)
    response.headers["Allow"] = ", ".join(sorted(allowed))
    return response
