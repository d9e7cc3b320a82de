"""Dashboard sessions: an API key exchanged for a random session id held server side.

The browser keeps only the id (HttpOnly, SameSite=Strict); the key stays on the server and is
verified again on every request, so revoking it signs the session out at once. Sessions live
where every server process finds them (``memvault.keys.session_vault``: Redis, else PostgreSQL),
so behind a load balancer a browser signed in on one process is signed in on all."""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass

from memvault.keys.session_vault import SessionVault

COOKIE = "memvault_ui"
IDLE_S = 8 * 3600.0


@dataclass
class Session:
    id: str
    csrf: str
    key: str | None = None
    user_id: str = "default"

    def csrf_ok(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token, self.csrf)


class Sessions:
    """The app's sessions, in the vault its store opens (made on first use: the store opens
    with the app, after the dashboard is installed)."""

    def __init__(self, vault: Callable[[], SessionVault]) -> None:
        self._make = vault
        self._vault: SessionVault | None = None

    @property
    def vault(self) -> SessionVault:
        if self._vault is None:
            self._vault = self._make()
        return self._vault

    async def get(self, session_id: str | None) -> Session | None:
        if not session_id or len(session_id) > 100:
            return None
        values = await self.vault.load(session_id, IDLE_S)
        if values is None:
            return None
        return Session(session_id, **values)

    async def start(self, *, key: str | None = None, user_id: str = "default") -> Session:
        """A fresh id at every sign-in, so an id planted before it is worth nothing after."""
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), key, user_id)
        await self.save(session)
        return session

    async def save(self, session: Session) -> None:
        values = {k: v for k, v in asdict(session).items() if k != "id"}
        await self.vault.save(session.id, values, IDLE_S)

    async def end(self, session_id: str) -> None:
        await self.vault.drop(session_id)

    async def aclose(self) -> None:
        if self._vault is not None:
            await self._vault.aclose()
