"""``AsyncMemoryClient`` and ``MemoryClient``: the data methods of ``AsyncMemory`` / ``Memory``,
answered by a memvault server over HTTP (``/v1``).

Moving between embedded and served mode is one line::

    memory = Memory(settings)                                        # embedded
    memory = MemoryClient("http://127.0.0.1:8765", api_key=API_KEY)  # served

Both take the same arguments and return the same models. Arguments are checked by the same input
models before anything is sent, so bad input fails the same way, without a round trip; limits
that are the server's settings (content length, batch size, page size) are checked there. An
error answered by the server is raised as the class its envelope's ``code`` names
(``memvault.errors``); a server that cannot be reached, or does not answer in time, is
``ServerUnreachable`` (a ``StoreUnavailable``). No httpx exception escapes.

Not offered over HTTP: whole-store work (``Admin``), which runs where the store is (the
``memvault`` CLI), and ``for_tenant``: a client's tenant is the one its API key belongs to.
"""

from __future__ import annotations

import builtins
import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Self, TypeVar
from uuid import UUID

import httpx
from pydantic import BaseModel, ValidationError

from memvault._sync import SyncFace, blocking, takes
from memvault.errors import (
    ConfigurationError,
    Forbidden,
    MemvaultError,
    PayloadTooLarge,
    RateLimited,
    ServerUnreachable,
    Unauthorized,
    for_code,
)
from memvault.models import (
    AddResult,
    BatchRequest,
    BatchResult,
    DeleteResult,
    HistoryEntry,
    MemoryInput,
    MemoryPage,
    MemoryQuery,
    MemoryRecord,
    MemoryUpdate,
    Message,
    MessagesRequest,
    SearchRequest,
    SearchResult,
)
from memvault.service import parse_id, validated

M = TypeVar("M", bound=BaseModel)

# Reads wait longest: add(wait=True) may take the server's wait_timeout_s (30 s by default).
DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=5.0)

# An error answered without memvault's envelope (a proxy in front of the server, say).
_BY_STATUS: dict[int, type[MemvaultError]] = {
    401: Unauthorized,
    403: Forbidden,
    413: PayloadTooLarge,
    429: RateLimited,
    502: ServerUnreachable,
    503: ServerUnreachable,
    504: ServerUnreachable,
}


class _HistoryPage(BaseModel):
    results: list[HistoryEntry]


# --- requests and answers (the one place that knows the wire format) --------------------------


def _body(model: BaseModel) -> dict[str, Any]:
    """What the caller gave (after validation), as JSON; the server fills in its defaults."""
    return model.model_dump(mode="json", exclude_unset=True)


def _query(model: BaseModel) -> dict[str, Any]:
    """A filter model as a query string: lists repeat the key, metadata is a JSON object."""
    params = _body(model)
    if "metadata" in params:
        params["metadata"] = json.dumps(params["metadata"])
    return params


def _owner(user_id: str) -> dict[str, str]:
    return {"user_id": user_id}


def _memory_path(memory_id: UUID | str, suffix: str = "") -> str:
    return f"/v1/memories/{parse_id(memory_id)}{suffix}"


def _flags(*, wait: bool, background: bool = False) -> dict[str, bool]:
    return {"wait": wait, "async": background}


def _parse(model: type[M], payload: Any, status: int) -> M:
    try:
        return model.model_validate(payload)
    except ValidationError:
        # The validation error would quote the payload, which holds content.
        raise _unexpected(status) from None


def _unexpected(status: int) -> MemvaultError:
    return _with_status(
        MemvaultError(
            "The server's answer is not one this client understands; is the base URL a "
            "memvault server of a matching version?"
        ),
        status,
        "unexpected_response",
    )


def _with_status(error: MemvaultError, status: int, code: str) -> MemvaultError:
    error.status_code = status
    error.code = code
    return error


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header: a number of seconds or an HTTP date."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _envelope(response: httpx.Response) -> tuple[str, str, dict[str, Any]] | None:
    try:
        error = response.json()["error"]
        code, message, details = error["code"], error["message"], error.get("details") or {}
    except (ValueError, TypeError, KeyError):
        return None
    if not (isinstance(code, str) and isinstance(message, str) and isinstance(details, dict)):
        return None
    return code, message, details


def _error(response: httpx.Response) -> MemvaultError:
    """The typed error for an error answer: by the envelope's code, else by the status."""
    status = response.status_code
    envelope = _envelope(response)
    details: dict[str, Any] = {}
    if envelope is None:
        message = f"The server answered HTTP {status} without a memvault error body."
        known = _BY_STATUS.get(status)
        if known is None:
            return _with_status(MemvaultError(message), status, "http_error")
    else:
        code, message, details = envelope
        known = for_code(code)
        if known is None:
            return _with_status(MemvaultError(message, details=details), status, code)
    retry_after = _retry_after(response.headers.get("retry-after"))
    return known(message, details=details, retry_after=retry_after)


def _origin(url: httpx.URL) -> str:
    """Scheme, host and port: never credentials a URL might carry."""
    return f"{url.scheme}://{url.netloc.decode('ascii')}"


def _unreachable(url: httpx.URL, exc: httpx.TransportError) -> ServerUnreachable:
    reason = type(exc).__name__
    where = _origin(url)
    if isinstance(exc, httpx.TimeoutException):
        message = (
            f"The memvault server at {where} did not answer in time ({reason}); a write may "
            "or may not have been applied."
        )
    else:
        message = f"Could not reach the memvault server at {where} ({reason}); is it running?"
    return ServerUnreachable(message, details={"reason": reason})


def _root(base_url: str) -> httpx.URL:
    url = httpx.URL(base_url)
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigurationError(
            "base_url must be an http:// or https:// URL, e.g. http://127.0.0.1:8765.",
            details={"field": "base_url"},
        )
    return url


def _headers(api_key: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    sent = dict(extra or {})
    if api_key is not None:
        if not api_key.isascii():
            raise ConfigurationError("api_key must be ASCII.", details={"field": "api_key"})
        sent["authorization"] = f"Bearer {api_key}"
    return sent


# --- the clients --------------------------------------------------------------------------------


class AsyncMemoryClient:
    """``AsyncMemory``'s data methods over HTTP. Use ``async with``, or ``await close()``.

    ``base_url`` is the server's root (``/v1/...`` is added). ``api_key`` is sent as
    ``Authorization: Bearer …``. ``timeout`` is in seconds (or an ``httpx.Timeout``); the
    default waits 5 s to connect and 60 s for an answer. ``transport`` takes any httpx async
    transport, e.g. ``httpx.AsyncHTTPTransport(retries=2, verify=...)``.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=_root(base_url),
            headers=_headers(api_key, headers),
            timeout=timeout,
            transport=transport,
        )

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
    ) -> tuple[Any, int]:
        """One request; the decoded JSON answer (None for 204) and its status, or a typed error."""
        try:
            response = await self._http.request(method, path, params=params, json=body)
        except httpx.TransportError as exc:
            raise _unreachable(self._http.base_url, exc) from exc
        except httpx.HTTPError as exc:  # an answer httpx could not decode, too many redirects
            raise _unexpected(502) from exc
        if response.is_error:
            raise _error(response)
        if response.status_code == 204:
            return None, 204
        try:
            return response.json(), response.status_code
        except ValueError:
            raise _unexpected(response.status_code) from None

    async def _call(
        self,
        model: type[M],
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
    ) -> M:
        payload, status = await self._send(method, path, params=params, body=body)
        return _parse(model, payload, status)

    # --- the data methods of AsyncMemory, same signatures ---------------------------------------

    @takes(MemoryInput, positional=("content",))
    async def add(
        self, /, content: str, *, wait: bool = False, background: bool = False, **fields: Any
    ) -> AddResult:
        """Store one memory through the server's write pipeline (see ``AsyncMemory.add``)."""
        item = validated(MemoryInput, content=content, **fields)
        params = _flags(wait=wait, background=background)
        return await self._call(AddResult, "POST", "/v1/memories", params=params, body=_body(item))

    async def add_many(
        self,
        items: builtins.list[MemoryInput | dict[str, Any]],
        *,
        wait: bool = False,
        background: bool = False,
    ) -> builtins.list[AddResult]:
        """Store a batch in one request, one transaction; results in order."""
        checked = [i if isinstance(i, MemoryInput) else validated(MemoryInput, **i) for i in items]
        batch = validated(BatchRequest, memories=checked)
        params = _flags(wait=wait, background=background)
        page = await self._call(
            BatchResult, "POST", "/v1/memories/batch", params=params, body=_body(batch)
        )
        return page.results

    @takes(MessagesRequest, positional=("messages",))
    async def add_messages(
        self,
        /,
        messages: builtins.list[Message | dict[str, Any]],
        *,
        wait: bool = False,
        **fields: Any,
    ) -> builtins.list[AddResult]:
        """Store a conversation turn by turn (see ``AsyncMemory.add_messages``)."""
        request = validated(MessagesRequest, messages=messages, **fields)
        page = await self._call(
            BatchResult, "POST", "/v1/messages", params=_flags(wait=wait), body=_body(request)
        )
        return page.results

    async def get(self, memory_id: UUID | str, *, user_id: str) -> MemoryRecord:
        return await self._call(
            MemoryRecord, "GET", _memory_path(memory_id), params=_owner(user_id)
        )

    @takes(MemoryQuery)
    async def list(self, /, **query: Any) -> MemoryPage:
        """One page of memories, newest first; pass ``next_cursor`` back for the next page."""
        page_query = validated(MemoryQuery, **query)
        return await self._call(MemoryPage, "GET", "/v1/memories", params=_query(page_query))

    async def update(
        self,
        memory_id: UUID | str,
        *,
        user_id: str,
        content: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> MemoryRecord:
        """Replace the content and/or merge metadata (a key set to None is removed)."""
        path = _memory_path(memory_id)
        change = validated(MemoryUpdate, content=content, metadata=metadata)
        return await self._call(
            MemoryRecord, "PATCH", path, params=_owner(user_id), body=_body(change)
        )

    async def delete(self, memory_id: UUID | str, *, user_id: str) -> None:
        await self._send("DELETE", _memory_path(memory_id), params=_owner(user_id))

    async def delete_all(self, *, user_id: str, app_id: str | None = None) -> int:
        """Delete every memory of a user (in one app, if given); returns how many."""
        scope = validated(MemoryQuery, user_id=user_id, app_id=app_id)
        result = await self._call(DeleteResult, "DELETE", "/v1/memories", params=_query(scope))
        return result.deleted

    async def history(self, memory_id: UUID | str, *, user_id: str) -> builtins.list[HistoryEntry]:
        """Every ADD, UPDATE and DELETE of a memory, oldest first (kept after deletion)."""
        path = _memory_path(memory_id, "/history")
        page = await self._call(_HistoryPage, "GET", path, params=_owner(user_id))
        return page.results

    @takes(SearchRequest, positional=("query",))
    async def search(self, /, query: str, **options: Any) -> SearchResult:
        """This user's memories most relevant to ``query`` (see ``AsyncMemory.search``)."""
        request = validated(SearchRequest, query=query, **options)
        return await self._call(SearchResult, "POST", "/v1/memories/search", body=_body(request))


class MemoryClient(SyncFace):
    """The synchronous face of :class:`AsyncMemoryClient`, as ``Memory`` is of ``AsyncMemory``:
    same methods, same arguments. Use ``with``, or call ``close()``."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        async def opening() -> AsyncMemoryClient:  # made on the loop that will use it
            return AsyncMemoryClient(
                base_url, api_key, timeout=timeout, headers=headers, transport=transport
            )

        super().__init__(opening())

    add = blocking(AsyncMemoryClient.add)
    add_many = blocking(AsyncMemoryClient.add_many)
    add_messages = blocking(AsyncMemoryClient.add_messages)
    get = blocking(AsyncMemoryClient.get)
    list = blocking(AsyncMemoryClient.list)
    update = blocking(AsyncMemoryClient.update)
    delete = blocking(AsyncMemoryClient.delete)
    delete_all = blocking(AsyncMemoryClient.delete_all)
    history = blocking(AsyncMemoryClient.history)
    search = blocking(AsyncMemoryClient.search)


__all__ = ["DEFAULT_TIMEOUT", "AsyncMemoryClient", "MemoryClient"]
