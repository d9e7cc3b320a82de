"""Sign-in and sign-out: an API key becomes a server-side session.

Sign-in is throttled per client address and per key prefix: each attempt takes a token from
both buckets before the key is checked (so guesses sent in parallel cannot all get past), and a
right key gives its tokens back, so only wrong keys count (``ui_sign_in_failures_per_min``)."""

from __future__ import annotations

import math
import re

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse

from memvault.admin import AsyncAdmin
from memvault.auth import KeyRefused
from memvault.errors import Forbidden, RateLimited
from memvault.ui.sessions import COOKIE
from memvault.ui.web import UIRoute, base_path, redirect, render, sessions, set_cookie

router = APIRouter(route_class=UIRoute)
MAX_KEY = 200
_PREFIX = re.compile(r"mv_([0-9a-f]{12})_")


@router.get("/login", response_class=HTMLResponse)
async def login_form(request: Request) -> Response:
    admin: AsyncAdmin = request.app.state.admin
    if admin.settings.auth == "off":
        return redirect(request, "/")
    # A session before sign-in only carries the form's CSRF token; it gets no key. A reload
    # keeps the one the browser holds rather than storing another.
    held = sessions(request)
    pending = await held.get(request.cookies.get(COOKIE))
    if pending is not None and pending.key is not None:
        # Signing in again while signed in: the session held so far ends now, so its id (the
        # browser is about to forget it) opens nothing afterwards.
        await held.end(pending.id)
        pending = None
    if pending is None:
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
    buckets = _buckets(request, key)
    await _admit(request, buckets)
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
    await _forgive(request, buckets)
    await held.end(pending.id)
    # Whose memory to look at is the first choice: the users page, not the "default" user.
    response = redirect(request, "/users")
    set_cookie(request, response, await held.start(key=key))
    return response


def _buckets(request: Request, key: str) -> list[str]:
    """The sign-in buckets an attempt counts against: its client's address, and the prefix
    of the key it names (one key guessed at from many addresses)."""
    client = request.client.host if request.client else "unknown"
    found = [f"ui-sign-in:ip:{client}"]
    if match := _PREFIX.match(key):
        found.append(f"ui-sign-in:key:{match[1]}")
    return found


async def _admit(request: Request, buckets: list[str]) -> None:
    limiter = request.app.state.sign_in_limiter
    wait = max([await limiter.take(bucket) for bucket in buckets])
    if wait > 0:
        raise RateLimited(
            f"Too many sign-in attempts with a wrong key; try again in {math.ceil(wait)} s.",
            retry_after=wait,
        )


async def _forgive(request: Request, buckets: list[str]) -> None:
    """A right key gives back the tokens its attempt took: only failures are throttled."""
    for bucket in buckets:
        await request.app.state.sign_in_limiter.take(bucket, -1)


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
