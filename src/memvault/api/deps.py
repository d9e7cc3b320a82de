"""Who is calling and what they may do: the API key (or, with auth off, the one implicit
tenant), the caller's rate limit, and the tenant view of the store every route works on.

With auth off a request that still sends a key is served as that key's tenant and scopes, so
data written with a key stays in view when the server's auth setting changes; a key that does
not verify is refused (401) rather than quietly served as ``default``."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memvault.admin import AsyncAdmin
from memvault.auth import SCOPES, KeyRefused, Principal, Scope
from memvault.errors import Forbidden, RateLimited
from memvault.metrics import AUTH_FAILURES, RATE_LIMITED
from memvault.service import AsyncMemory

log = logging.getLogger("memvault.api")
# Declares the scheme in the OpenAPI spec; the check itself is ours (one error envelope).
_bearer = HTTPBearer(auto_error=False, description="an API key from `memvault api-keys create`")
_OPEN = Principal("default", frozenset(SCOPES), None)


async def get_principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    admin: AsyncAdmin = request.app.state.admin
    authorization = request.headers.get("authorization")
    if admin.settings.auth == "off" and not authorization:
        principal = _OPEN
        bucket = f"ip:{request.client.host if request.client else 'unknown'}"
    else:
        principal = await _verified(admin, authorization)
        bucket = f"key:{principal.key_prefix}"
    wait = await request.app.state.rate_limiter.take(bucket)
    if wait > 0:
        RATE_LIMITED.inc()
        raise RateLimited(
            "Too many requests for this API key; retry after the time in Retry-After.",
            details={"retry_after_s": round(wait, 3)},
            retry_after=wait,
        )
    return principal


async def _verified(admin: AsyncAdmin, authorization: str | None) -> Principal:
    try:
        return await admin.authenticate(authorization)
    except KeyRefused as exc:
        AUTH_FAILURES.labels(exc.reason).inc()
        log.info("api key refused", extra={"reason": exc.reason})
        raise


def _memory_for(scope: Scope) -> Callable[..., Awaitable[AsyncMemory]]:
    async def memory_for(
        request: Request, principal: Annotated[Principal, Depends(get_principal)]
    ) -> AsyncMemory:
        if not principal.allows(scope):
            raise Forbidden(
                f"This API key lacks the '{scope}' scope.", details={"required_scope": scope}
            )
        memory: AsyncMemory = request.app.state.memory
        return memory.for_tenant(principal.tenant_id, actor=principal.actor)

    return memory_for


ReadMemory = Annotated[AsyncMemory, Depends(_memory_for("read"))]
WriteMemory = Annotated[AsyncMemory, Depends(_memory_for("write"))]
AdminMemory = Annotated[AsyncMemory, Depends(_memory_for("admin"))]
