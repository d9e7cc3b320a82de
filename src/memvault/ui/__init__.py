"""The dashboard at ``/ui``: server-rendered pages over the same service as every other face.

``install(app)`` mounts it on the API's app; the pages use the app's store, admin and rate
limiter, and need nothing at build time (templates and vendored scripts ship in the package)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import Scope

from memvault.ui import auth_pages, curation, nowhere, pages, pages_more, webhook_pages
from memvault.ui.sessions import Sessions
from memvault.ui.web import HEADERS, error_page

STATIC = Path(__file__).parent / "static"


class _Static(StaticFiles):
    """The dashboard's files; a missing one answers the HTML error page with every page's
    headers, like any other /ui address."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        try:
            return await super().get_response(path, scope)
        except HTTPException as exc:
            # Links on the page start where the app does, not inside this mount.
            outer = {**scope, "root_path": scope.get("app_root_path", "")}
            response = error_page(Request(outer), exc.status_code, "There is no file here.")
            response.headers.update({**HEADERS, **(exc.headers or {})})
            return response


def install(app: FastAPI) -> None:
    app.state.ui_sessions = Sessions(lambda: app.state.admin.session_vault())
    app.mount("/ui/static", _Static(directory=STATIC), name="ui-static")
    # Curation before pages: its fixed paths (/memories/new) go before their {memory_id}.
    routers = [module.router for module in (auth_pages, curation, pages, pages_more, webhook_pages)]
    # Last: it answers every /ui path the pages do not, as an HTML page.
    for router in (*routers, nowhere.router_beside(routers)):
        app.include_router(router, prefix="/ui", include_in_schema=False)


__all__ = ["install"]
