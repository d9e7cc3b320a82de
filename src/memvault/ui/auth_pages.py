"""Sign-in and sign-out: an API key becomes a server-side session."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse

from memvault.admin import AsyncAdmin
from memvault.auth import KeyRefused
from memvault.errors import Forbidden
from memvault.ui.sessions import COOKIE
from memvault.ui.web import UIRoute, base_path, redirect, render, sessions, set_cookie

router = APIRouter(route_class=UIRoute)
MAX_KEY = 200


@router.get("/login", response_class=HTMLResponse)
async def login_form(request: Request) -> Response:
    admin: AsyncAdmin = request.app.state.admin
    if admin.settings.auth == "off":
        return redirect(request, "/")
    # A session before sign-in only carries the form's CSRF token; it gets no key. A reload
    # keeps the one the browser holds rather than storing another.
    held = sessions(request)
    pending = await held.get(request.cookies.get(COOKIE))
    if pending is None or pending.key is not None:
        pending = await held.start()
    response = render(request, "login.html", {"csrf": pending.csrf, "view": None})
    set_cookie(request, response, pending)
    return response


@router.post("/login")
async def login(request: Request) -> Response:
    held = sessions(request)
    pending = await held.get(request.cookies.get(COOKIE))
    form = await request.form()
    token, key = form.get("csrf"), form.get("api_key")
    if pending is None or not pending.csrf_ok(token if isinstance(token, str) else None):
        raise Forbidden("The form's security token is missing or stale; reload the page.")
    key = key.strip() if isinstance(key, str) else ""
    admin: AsyncAdmin = request.app.state.admin
    try:
        if len(key) > MAX_KEY:
            raise KeyRefused("malformed")
        await admin.authenticate(f"Bearer {key}")
    except KeyRefused:
        await held.end(pending.id)
        again = await held.start()
        refused: Response = render(
            request,
            "login.html",
            {"csrf": again.csrf, "view": None, "refused": True},
            status=401,
        )
        set_cookie(request, refused, again)
        return refused
    await held.end(pending.id)
    response = redirect(request, "/")
    set_cookie(request, response, await held.start(key=key))
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    held = sessions(request)
    session = await held.get(request.cookies.get(COOKIE))
    form = await request.form()
    token = form.get("csrf")
    if session is None or not session.csrf_ok(token if isinstance(token, str) else None):
        raise Forbidden("The form's security token is missing or stale; reload the page.")
    await held.end(session.id)
    response = redirect(request, "/login")
    response.delete_cookie(COOKIE, path=base_path(request))
    return response
