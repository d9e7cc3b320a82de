"""The API docs pages, /docs (Swagger UI) and /redoc, served with their scripts, styles and icon
from assets installed with memvault (the ``fastapi-offline`` wheel), so they work on a machine
with no internet and tell no CDN who is reading them."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from starlette.responses import HTMLResponse

ASSETS = "/static/docs"


def _assets_dir() -> Path:
    return Path(str(files("fastapi_offline") / "static"))


def install(app: FastAPI) -> None:
    """Serve the assets at ``ASSETS`` and the two pages from them (create the app with
    ``docs_url=None, redoc_url=None`` so FastAPI's CDN pages are not registered)."""
    app.mount(ASSETS, StaticFiles(directory=_assets_dir()), name="docs-assets")
    title = f"{app.title} API"
    spec = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{spec}",
            title=title,
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
            # The validator badge would send the spec to an outside service.
            swagger_ui_parameters={"validatorUrl": None},
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{spec}",
            title=title,
            redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS}/favicon.png",
            with_google_fonts=False,
        )
