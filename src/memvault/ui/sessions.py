"""Dashboard sessions: an API key exchanged for a random session id held server side.

The browser keeps only the id (HttpOnly, SameSite=Strict); the key stays in this process and
is verified again on every request, so revoking it signs the session out at once. Sessions live
in the serving process: behind several processes a load balancer must keep a browser on one
(sticky sessions), or the browser signs in again where it lands."""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

COOKIE = "memvault_ui"
IDLE_S = 8 * 3600.0
# A bound, so a flood of sign-in pages cannot grow the process without limit.
MAX_SESSIONS = 10_000


@dataclass
class Session:
    id: str
    csrf: str
    key: str | None = None
    user_id: str = "default"
    seen: float = field(default_factory=time.monotonic)

    def csrf_ok(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token, self.csrf)


class Sessions:
    def __init__(self) -> None:
        self._held: OrderedDict[str, Session] = OrderedDict()

    def get(self, session_id: str | None) -> Session | None:
        found = self._held.get(session_id or "")
        if found is None or time.monotonic() - found.seen > IDLE_S:
            self._held.pop(session_id or "", None)
            return None
        found.seen = time.monotonic()
        self._held.move_to_end(found.id)
        return found

    def start(self, *, key: str | None = None, user_id: str = "default") -> Session:
        """A fresh id at every sign-in, so an id planted before it is worth nothing after."""
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), key, user_id)
        self._held[session.id] = session
        while len(self._held) > MAX_SESSIONS:
            self._held.popitem(last=False)
        return session

    def end(self, session_id: str) -> None:
        self._held.pop(session_id, None)
