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

Every method is made from one entry of the operation table (``memvault.operations``): its name,
signature, annotations and docstring are the service method's (copied from the headers
``python -m memvault._stubs`` generates, so the client loads no store code), so the client
cannot drift from the library, and its request is the one the server's route for that entry
reads.

Read-your-writes whichever API process answers: the client keeps the highest consistency
token a server gave it (``Memvault-Written-Lsn``, see ``memvault.consistency``) and sends it
on every later request (``Memvault-Read-After``), so its searches, lists and ``remember()``
show what it wrote, even where reads go to a replica.

Not offered over HTTP: whole-store work (``Admin``), which runs where the store is (the
``memvault`` CLI), and ``for_tenant``: a client's tenant is the one its API key belongs to.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import random
import typing
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import quote
from uuid import UUID, uuid4

import httpx
from pydantic import BaseModel, ValidationError

from memvault._client_surface import ClientSurface
from memvault._sync import SyncFace, blocking
from memvault.consistency import READ_AFTER_HEADER, WRITTEN_HEADER, position
from memvault.errors import (
    ConfigurationError,
    Forbidden,
    InvalidInput,
    MemvaultError,
    PayloadTooLarge,
    RateLimited,
    ServerUnreachable,
    Unauthorized,
    for_code,
)
from memvault.idempotency_key import HEADER as IDEMPOTENCY_HEADER
from memvault.operations import Operation, client_operations
from memvault.tls import verified_context
from memvault.validation import parse_id, validated

if TYPE_CHECKING:
    # For type checkers the clients have the library's data methods with the library's types,
    # as generated into ``_client_surface`` (no resource views, no ``for_tenant``: what the
    # client has); at run time they get them from the operation table.
    from memvault._client_surface import BlockingClientSurface as _SyncSurface
    from memvault._client_surface import ClientSurface as _AsyncSurface
else:
    _AsyncSurface = _SyncSurface = object

# Reads wait longest: add(wait=True) may take the server's wait_timeout_s (30 s by default).
DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=5.0)

# Answers that ask to be asked again: rate limited (429), or the store unavailable (503). A
# read (a search too, though it is a POST) or an idempotent write (PUT, DELETE) is resent after
# any of them, and after a lost connection or a 502/504 from a proxy
# (``Operation.safe_to_repeat``). So is a write the table makes a route of (POST, PATCH):
# it carries an ``Idempotency-Key`` made for the call, and the server answers its retries with
# the first answer (``memvault.idempotency``), 409 ``request_in_progress`` while the first
# try still runs (asked again after its Retry-After), or 409 ``request_done_answer_lost`` when
# the first try wrote but its answer was not kept — also after a ``request_timeout``, since a
# write that committed as the deadline struck marked its key in the same transaction. A POST
# of a hand-written route is resent only after an answer that says nothing was done, never
# after a request that ran out of time on the server (it may have committed) or went
# unanswered.
RETRY_STATUSES = frozenset({429, 503})
NOTHING_DONE = frozenset({"rate_limited", "store_unavailable", "write_conflict"})
DEFAULT_MAX_RETRIES = 3
# The first backoff without a Retry-After, doubled each time (with jitter, so clients turned
# away together do not come back together), and the longest wait before any one retry.
RETRY_BASE_S = 0.25
RETRY_WAIT_MAX_S = 10.0

# An error answered without memvault's envelope (a proxy in front of the server, say).
ERROR_BY_STATUS: dict[int, type[MemvaultError]] = {
    401: Unauthorized,
    403: Forbidden,
    413: PayloadTooLarge,
    429: RateLimited,
    502: ServerUnreachable,
    503: ServerUnreachable,
    504: ServerUnreachable,
}


# --- requests and answers (the one place that knows the wire format) --------------------------


@dataclass(frozen=True)
class _Request:
    path: str
    params: dict[str, Any]
    body: dict[str, Any] | None
    # Whether a try may be sent again whatever became of the one before (a read, an idempotent
    # method, a keyed write).
    repeatable: bool = False
    # Made once per call of a write that takes one, and sent with every try of that call.
    idempotency_key: str | None = None


def _json(model: BaseModel) -> dict[str, Any]:
    """What the caller gave (after validation), as JSON; the server fills in its defaults."""
    return model.model_dump(mode="json", exclude_unset=True)


def _query(values: Mapping[str, Any]) -> dict[str, Any]:
    """Values as a query string carries them: lists repeat the key, an object is JSON."""
    return {k: json.dumps(v) if isinstance(v, dict) else v for k, v in values.items()}


def _path_value(name: str, value: Any, is_id: bool) -> str:
    """One path segment holding every character of ``value`` (as ``api.paths.path_segment``,
    which the client does not import: it would load the server's framework)."""
    if is_id:
        return str(parse_id(value, field=name))
    encoded = quote(str(value), safe="")
    # A segment of dots would be resolved away ("a/../b" is "b") by HTTP clients.
    return encoded.replace(".", "%2E") if not encoded.strip(".") else encoded


def _service(op: Operation) -> Callable[..., Coroutine[Any, Any, Any]]:
    """The library method's header (``AsyncMemory``'s signature, annotations and docstring,
    generated into ``_client_surface``): the service itself, and the store's drivers with it,
    are never loaded by the client."""
    assert op.service is not None
    method: Callable[..., Coroutine[Any, Any, Any]] = getattr(ClientSurface, op.service)
    return method


def _ids(op: Operation) -> frozenset[str]:
    """The arguments the service annotates as UUIDs that are required: in the path, or
    wherever they are sent."""
    hints = typing.get_type_hints(_service(op))
    parameters = inspect.signature(_service(op)).parameters
    required = {n for n, p in parameters.items() if p.default is inspect.Parameter.empty}
    return frozenset(
        name
        for name in {*op.path_names, *required}
        if hints.get(name) is UUID or UUID in typing.get_args(hints.get(name))
    )


def _spread(op: Operation, values: dict[str, Any]) -> dict[str, Any]:
    """The ``whole`` argument's fields in place of the argument."""
    if op.whole is None:
        return values
    request = values.pop(op.whole, None)
    if isinstance(request, BaseModel):
        request = request.model_dump(exclude_unset=True)
    if not isinstance(request, Mapping):
        raise InvalidInput("The request is not valid.", details={"field": op.whole})
    return {**values, **request}


def _request(op: Operation, given: dict[str, Any], ids: frozenset[str]) -> _Request:
    """Split the caller's arguments into path, query string and body, each validated by its
    model, as the operation declares."""
    for name in ids:
        value: Any = given.get(name)
        given[name] = parse_id(value, field=name)
    renamed = op.renamed
    values = _spread(op, {renamed.get(k, k): v for k, v in given.items() if v is not None})
    path = op.path.format_map(
        {name: _path_value(name, values.pop(name), name in ids) for name in op.path_names}
    )
    params = {f.wire: values.pop(f.wire) for f in op.flags if f.wire in values}
    if op.query is not None:
        fields = values if op.body is None else op.query.model_fields
        taken = {name: values.pop(name) for name in list(values) if name in fields}
        params |= _json(validated(op.query, **taken))
    key = str(uuid4()) if op.takes_idempotency_key else None
    repeatable = op.safe_to_repeat or key is not None
    if op.body is None:
        params.update(values)
        return _Request(path, _query(params), None, repeatable, key)
    body = _json(validated(op.body, **values))
    return _Request(path, _query(params), body, repeatable, key)


def _accepting(signature: inspect.Signature) -> inspect.Signature:
    """The signature calls are bound by: positional arguments as the service takes them, every
    keyword optional and unknown ones let through, so what is missing or extra is refused by
    the input models, as the library refuses it (``InvalidInput``, not ``TypeError``)."""
    kinds = inspect.Parameter
    parameters = [
        p.replace(default=None) if p.kind is kinds.KEYWORD_ONLY else p
        for p in signature.parameters.values()
        if p.kind is not kinds.VAR_KEYWORD
    ]
    parameters.append(inspect.Parameter("_unknown", kinds.VAR_KEYWORD))
    return signature.replace(parameters=parameters)


def _parse(model: type[BaseModel], payload: Any, status: int) -> BaseModel:
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
        known = ERROR_BY_STATUS.get(status)
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


class AsyncMemoryClient(_AsyncSurface):
    """``AsyncMemory``'s data methods over HTTP. Use ``async with``, or ``await close()``.

    ``base_url`` is the server's root (``/v1/...`` is added). ``api_key`` is sent as
    ``Authorization: Bearer …``. ``timeout`` is in seconds (or an ``httpx.Timeout``); the
    default waits 5 s to connect and 60 s for an answer. ``transport`` takes any httpx async
    transport, e.g. ``httpx.AsyncHTTPTransport(retries=2, verify=...)``. A 429 or 503 answer
    is retried up to ``max_retries`` times (0: never), after the answer's ``Retry-After``
    (at most ``RETRY_WAIT_MAX_S``) or a jittered exponential backoff; then it is raised.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        if max_retries < 0:
            raise ConfigurationError(
                "max_retries must be 0 or more.", details={"field": "max_retries"}
            )
        self._http = httpx.AsyncClient(
            base_url=_root(base_url),
            headers=_headers(api_key, headers),
            timeout=timeout,
            transport=transport,
            verify=verified_context(),
        )
        self._max_retries = max_retries
        # The highest consistency token a server gave (its number, and as it was written).
        self._written: tuple[int, str] | None = None

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _send(self, method: str, request: _Request) -> tuple[Any, int]:
        """One request; the decoded JSON answer (None for 204) and its status, or a typed error."""
        for attempt in range(self._max_retries + 1):
            last = attempt == self._max_retries
            try:
                response = await self._answer(method, request)
            except ServerUnreachable:
                if last or not request.repeatable:
                    raise
                await asyncio.sleep(_backoff(attempt, None))
                continue
            if last or not _resend(request, response):
                break
            await asyncio.sleep(_backoff(attempt, response.headers.get("retry-after")))
        if response.is_error:
            raise _error(response)
        if response.status_code == 204:
            return None, 204
        try:
            return response.json(), response.status_code
        except ValueError:
            raise _unexpected(response.status_code) from None

    async def _answer(self, method: str, request: _Request) -> httpx.Response:
        """The server's answer to one try of ``request``; a typed error when none came."""
        sent = {READ_AFTER_HEADER: self._written[1]} if self._written is not None else {}
        if request.idempotency_key is not None:
            sent[IDEMPOTENCY_HEADER] = request.idempotency_key
        try:
            response = await self._http.request(
                method, request.path, params=request.params, json=request.body, headers=sent
            )
        except httpx.TransportError as exc:
            raise _unreachable(self._http.base_url, exc) from exc
        except httpx.HTTPError as exc:  # an answer httpx could not decode, too many redirects
            raise _unexpected(502) from exc
        self._note_written(response.headers.get(WRITTEN_HEADER))
        return response

    def _note_written(self, token: str | None) -> None:
        """Keep the highest token: answers from several processes may come back out of order."""
        if token is None:
            return
        try:
            value = position(token)
        except InvalidInput:
            return  # not a memvault server's token (a proxy's header, say): not ours to send
        if self._written is None or value > self._written[0]:
            self._written = (value, token.strip())


def _resend(request: _Request, response: httpx.Response) -> bool:
    """Whether an answer is one to ask again (see ``RETRY_STATUSES``)."""
    status = response.status_code
    if status == 429:
        return True
    envelope = _envelope(response)
    code = envelope[0] if envelope is not None else None
    if status == 409:  # the same keyed write still running (another host took the first try)
        return code == "request_in_progress"
    if status in (502, 504) or status in RETRY_STATUSES:
        if request.repeatable:
            return True
        return status in RETRY_STATUSES and code in NOTHING_DONE
    return False


def _backoff(attempt: int, retry_after: str | None) -> float:
    """Seconds before retry ``attempt`` (0 first): what the server asked and up to a fifth
    more (clients turned away together, told the same time, would come back together), else
    a jittered exponential backoff; never more than ``RETRY_WAIT_MAX_S``."""
    asked = _retry_after(retry_after)
    if asked is None:
        return min(RETRY_BASE_S * 2.0**attempt * random.uniform(0.5, 1.0), RETRY_WAIT_MAX_S)
    return min(asked * random.uniform(1.0, 1.2), RETRY_WAIT_MAX_S)


def _async_method(op: Operation) -> Callable[..., Coroutine[Any, Any, Any]]:
    """The client method for one operation, with the service method's signature."""
    service = _service(op)
    signature = inspect.signature(service)
    accepting = _accepting(signature)
    ids = _ids(op)
    fields = {
        *(f.wire for f in op.flags),
        *(op.query.model_fields if op.query is not None else ()),
        *(op.body.model_fields if op.body is not None else ()),
    }
    name = service.__name__

    async def call(self: AsyncMemoryClient, /, *args: Any, **kwargs: Any) -> Any:
        bound = accepting.bind(self, *args, **kwargs).arguments
        given = {k: v for k, v in bound.items() if k not in ("self", "_unknown")}
        unknown: dict[str, Any] = bound.get("_unknown", {})
        if taken := sorted(fields & set(unknown)):
            raise InvalidInput(f"{name} takes no {', '.join(taken)}.", details={"field": taken[0]})
        request = _request(op, {**given, **unknown}, ids)
        payload, status = await self._send(op.method, request)
        if op.response is None:
            return None
        answer = _parse(op.response, payload, status)
        return answer if op.returns is None else getattr(answer, op.returns)

    call.__name__ = name
    call.__qualname__ = f"AsyncMemoryClient.{name}"
    call.__doc__ = service.__doc__
    call.__signature__ = signature  # type: ignore[attr-defined]
    call.__annotations__ = typing.get_type_hints(service)
    return call


class MemoryClient(SyncFace, _SyncSurface):
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
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        async def opening() -> AsyncMemoryClient:  # made on the loop that will use it
            return AsyncMemoryClient(
                base_url,
                api_key,
                timeout=timeout,
                headers=headers,
                transport=transport,
                max_retries=max_retries,
            )

        SyncFace.__init__(self, opening())


# The methods are set from the operation table rather than written in the class bodies, so an
# entry there is all a new one takes.
for _op in client_operations():
    _method = _async_method(_op)
    setattr(AsyncMemoryClient, _method.__name__, _method)
    setattr(MemoryClient, _method.__name__, blocking(_method))
del _op, _method


__all__ = ["DEFAULT_MAX_RETRIES", "DEFAULT_TIMEOUT", "AsyncMemoryClient", "MemoryClient"]
