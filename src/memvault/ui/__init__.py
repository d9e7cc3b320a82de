"""The dashboard at ``/ui``: server-rendered pages over the same service as every other face.

``install(app)`` mounts it on the API's app; the pages use the app's store, admin and rate
limiter, and need nothing at build time (templates and vendored scripts ship in the package)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from memvault.ui import auth_pages, pages, pages_more
from memvault.ui.sessions import Sessions

STATIC = Path(__file__).parent / "static"


def install(app: FastAPI) -> None:
    app.state.ui_sessions = Sessions(lambda: app.state.admin.session_vault())
    app.mount("/ui/static", StaticFiles(directory=STATIC), name="ui-static")
    for module in (auth_pages, pages, pages_more):
        app.include_router(module.router, prefix="/ui", include_in_schema=False)


__all__ = ["install"]
