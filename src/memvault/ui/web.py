"""What every dashboard page shares: who is looking (the session and its API key), the tenant
view of the store they may use, the path prefix the pages live under, security headers, and
rendering."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.exceptions import HTTPException

from memvault.admin import AsyncAdmin
from memvault.auth import SCOPES, KeyRefused, Principal, Scope
from memvault.errors import Forbidden, MemvaultError, RateLimited
from memvault.paths import path_segment
from memvault.service import AsyncMemory
from memvault.ui import user_text
from memvault.ui.sessions import COOKIE, Session, Sessions

log = logging.getLogger("memvault.ui")
# No inline script or style anywhere: every script and sheet is a file under /ui/static.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_OPEN = Principal("default", frozenset(SCOPES), None)
# A proxy's prefix becomes part of every link: path segments of plain characters only.
_PREFIX = re.compile(r"(/[A-Za-z0-9._~-]+){0,8}")
TEMPLATES = Environment(
    loader=PackageLoader("memvault.ui", "templates"),
    autoescape=select_autoescape(default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
# An id as one path segment: Jinja's urlencode keeps "/", which would split it.
TEMPLATES.filters["segment"] = path_segment
# User text: `|bdi` where the page shows it, `|label` in attributes and labels (ui/user_text.py).
TEMPLATES.filters.update(bdi=user_text.bdi, label=user_text.label)


class SignInNeeded(Exception):
    """No signed-in session: the page answers with the sign-in form."""


def base_path(request: Request) -> str:
    """Where /ui lives as the browser sees it: under ``X-Forwarded-Prefix`` (a reverse proxy)
    or the server's root path (``uvicorn --root-path``)."""
    forwarded = request.headers.get("x-forwarded-prefix", "").rstrip("/")
    prefix = forwarded if _PREFIX.fullmatch(forwarded) else ""
    root = str(request.scope.get("root_path") or "").rstrip("/")
    return (prefix or (root if _PREFIX.fullmatch(root) else "")) + "/ui"


def sessions(request: Request) -> Sessions:
    held: Sessions = request.app.state.ui_sessions
    return held


@dataclass
class Viewer:
    """One page view: the session, the caller's key and the store as that key sees it."""

    request: Request
    session: Session
    principal: Principal
    memory: AsyncMemory
    base: str
    auth_on: bool
    new_session: bool = False

    @property
    def admin(self) -> AsyncAdmin:
        admin: AsyncAdmin = self.request.app.state.admin
        return admin

    @property
    def user_id(self) -> str:
        return self.session.user_id

    def can(self, scope: Scope) -> bool:
        return self.principal.allows(scope)

    def require(self, scope: Scope) -> None:
        if not self.can(scope):
            raise Forbidden(
                f"This API key lacks the '{scope}' scope.", details={"required_scope": scope}
            )

    async def form(self, scope: Scope = "write") -> Mapping[str, Any]:
        """An action's form, once its CSRF token and the key's scope are checked."""
        form = await self.request.form()
        token = form.get("csrf")
        if not self.session.csrf_ok(token if isinstance(token, str) else None):
            raise Forbidden("The form's security token is missing or stale; reload the page.")
        self.require(scope)
        return form

    def url(self, path: str = "") -> str:
        return self.base + path


async def viewer(request: Request) -> Viewer:
    admin: AsyncAdmin = request.app.state.admin
    held = sessions(request)
    session = await held.get(request.cookies.get(COOKIE))
    auth_on = admin.settings.auth != "off"
    new = session is None
    if session is None:
        if auth_on:
            raise SignInNeeded
        session = await held.start()
    principal = await _principal(admin, held, session, auth_on)
    await _take_rate_token(request, principal)
    store: AsyncMemory = request.app.state.memory
    memory = store.for_tenant(principal.tenant_id, actor=f"dashboard/{principal.actor}")
    view = Viewer(request, session, principal, memory, base_path(request), auth_on, new)
    request.state.ui_view = view
    return view


async def _principal(
    admin: AsyncAdmin, held: Sessions, session: Session, auth_on: bool
) -> Principal:
    if session.key is None:
        if auth_on:
            raise SignInNeeded
        return _OPEN
    try:
        # Every view checks the key again: a revoked key ends the session at once.
        return await admin.authenticate(f"Bearer {session.key}")
    except KeyRefused:
        await held.end(session.id)
        raise SignInNeeded from None


async def _take_rate_token(request: Request, principal: Principal) -> None:
    bucket = f"key:{principal.key_prefix}" if principal.key_prefix else "ui:local"
    wait = await request.app.state.rate_limiter.take(bucket)
    if wait > 0:
        raise RateLimited("Too many requests; wait a moment.", retry_after=wait)


def render(
    request: Request, name: str, context: Mapping[str, Any], *, status: int = 200
) -> HTMLResponse:
    html = TEMPLATES.get_template(name).render({"base": base_path(request), **context})
    return HTMLResponse(html, status_code=status)


def page(view: Viewer, name: str, *, http_status: int = 200, **context: Any) -> HTMLResponse:
    return render(view.request, name, {"view": view, **context}, status=http_status)


def set_cookie(request: Request, response: Response, session: Session) -> None:
    secure = request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"
    response.set_cookie(
        COOKIE,
        session.id,
        path=base_path(request),
        httponly=True,
        samesite="strict",
        secure=secure,
    )


def redirect(view_or_request: Viewer | Request, path: str) -> RedirectResponse:
    request = view_or_request.request if isinstance(view_or_request, Viewer) else view_or_request
    return RedirectResponse(base_path(request) + path, status_code=303)


@dataclass(frozen=True)
class Problem:
    """What an error page says: the status and one sentence, nothing from inside."""

    status_code: int
    message: str


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    return render(request, "error.html", {"error": Problem(status, message)}, status=status)


def _refused(request: Request, exc: Exception) -> Response:
    """The page for an exception a dashboard route raised: its message when it is one of ours
    (written for the caller), else only what kind of failure it was."""
    if isinstance(exc, MemvaultError):
        response = error_page(request, exc.status_code, exc.message)
        if exc.retry_after is not None:
            response.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
        return response
    if isinstance(exc, RequestValidationError):
        fields = sorted({str(e["loc"][-1]) for e in exc.errors() if e.get("loc")})
        return error_page(request, 422, f"Not a valid request: check {', '.join(fields)}.")
    if isinstance(exc, HTTPException):
        return error_page(request, exc.status_code, "That cannot be done here.")
    # The class name is enough to find the failure; the message may hold data.
    log.error("unhandled %s on %s %s", type(exc).__name__, request.method, request.url.path)
    return error_page(request, 500, "The server failed to show this page.")


class UIRoute(APIRoute):
    """Every dashboard answer carries the security headers; a missing session answers with
    the sign-in page and any failure with an HTML error page (never JSON or a stack trace)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                response = await handler(request)
            except SignInNeeded:
                response = redirect(request, "/login")
            except Exception as exc:  # every failure becomes a page: see _refused
                response = _refused(request, exc)
            view = getattr(request.state, "ui_view", None)
            if view is not None and view.new_session:
                set_cookie(request, response, view.session)
            response.headers.update(HEADERS)
            return response

        return handle
