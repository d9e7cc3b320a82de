"""The routes, made from the operation table (``memvault.operations``): one route per operation,
each parsing its path, query string and body by the declared models, calling the service method
the table names with them, and shaping the answer as declared. Summaries, descriptions and
examples in the OpenAPI document are the table's. The few operations that are more than one
service call name a hand-written handler (``handlers.py``); their route is made the same way."""

from __future__ import annotations

import functools
import inspect
import json
import types
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Header, Query, Response
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, create_model
from starlette.routing import BaseRoute

from memvault.api.deps import AdminMemory, ReadMemory, WriteMemory
from memvault.api.routes import handlers
from memvault.api.schemas import CONFLICT, V1_ERRORS
from memvault.errors import InvalidInput
from memvault.idempotency_key import HEADER as KEY_HEADER
from memvault.idempotency_key import MAX_LENGTH as KEY_MAX_LENGTH
from memvault.idempotency_key import REPLAYED_HEADER, fingerprint
from memvault.operations import OPERATIONS, Fields, Operation
from memvault.paths import path_value
from memvault.service import AsyncMemory

_MEMORY = {"read": ReadMemory, "write": WriteMemory, "admin": AdminMemory}
_KEYWORD = inspect.Parameter.KEYWORD_ONLY
SERVER = "http://127.0.0.1:8765"
_KEY_DESCRIPTION = (
    "A key the client makes for this write (a UUID): sending the same request again with it "
    "returns the first answer instead of writing twice, for a day (docs/api.md)."
)


def _is_object(annotation: Any) -> bool:
    """A ``dict`` field, possibly optional or annotated: it travels as JSON in a query string."""
    origin = typing.get_origin(annotation)
    if annotation is dict or origin is dict:
        return True
    if origin in (typing.Union, types.UnionType, Annotated):
        return any(_is_object(arg) for arg in typing.get_args(annotation))
    return False


def _keywords(op: Operation) -> set[str]:
    """The wire names of what the operation's service method takes."""
    assert op.service is not None
    taken = inspect.signature(getattr(AsyncMemory, op.service)).parameters
    return {op.renamed.get(name, name) for name in taken}


def _json_fields(op: Operation) -> set[str]:
    if op.query is None or op.service is None:
        return set()
    fields = op.query.model_fields
    return {name for name in _keywords(op) & set(fields) if _is_object(fields[name].annotation)}


def query_model(op: Operation) -> type[BaseModel] | None:
    """The query string's model: the table's, less the fields the service does not take (an
    unknown parameter is refused, not ignored), with object fields as JSON in a string."""
    if op.query is None:
        return None
    fields = op.query.model_fields
    taken, objects = _keywords(op) & set(fields), _json_fields(op)
    if taken == set(fields) and not objects:
        return op.query
    as_json = {
        name: (
            str | None,
            Field(
                default=None,
                description=f"{fields[name].description or name} "
                '(a JSON object, e.g. {"topic":"food"})',
            ),
        )
        for name in objects
    }
    if taken == set(fields):
        return create_model(f"{op.query.__name__}Params", __base__=op.query, **as_json)  # type: ignore[call-overload,no-any-return]
    kept: dict[str, Any] = {n: (fields[n].annotation, fields[n]) for n in fields if n in taken}
    return create_model(
        f"{op.query.__name__}Params",
        __config__=ConfigDict(extra="forbid"),
        **{**kept, **as_json},
    )


def _values(model: BaseModel, fields: Fields) -> dict[str, Any]:
    names = model.model_fields_set if fields == "set" else type(model).model_fields
    # Read from the instance's dict: a deprecated field still travels, without a warning.
    values = {name: vars(model)[name] for name in names}
    if fields == "not_none":
        return {name: value for name, value in values.items() if value is not None}
    return values


def _decoded(values: dict[str, Any], objects: set[str]) -> dict[str, Any]:
    for name in objects & {n for n, v in values.items() if v is not None}:
        try:
            values[name] = json.loads(values[name])
        except (ValueError, RecursionError):  # nested past the parser's depth too
            values[name] = None
        if not isinstance(values[name], dict):
            raise InvalidInput(f"{name} must be a JSON object.", details={"field": name})
    return values


def _answer(op: Operation, value: Any, path: Mapping[str, str]) -> Any:
    if op.response is None:
        return Response(status_code=op.status)
    if op.shape is not None:
        return op.shape(value)
    if op.returns is None:
        return value
    # An answer that names what was asked about says it (a context value's key).
    echoed = {name: path[name] for name in path if name in op.response.model_fields}
    return op.response(**{op.returns: value, **echoed})


def _endpoint(op: Operation) -> Callable[..., Awaitable[Any]]:
    """The route's function: the service call the table declares, with the signature FastAPI
    reads its parameters from."""
    assert op.service is not None and op.scope is not None, op.name
    service, query = op.service, query_model(op)
    objects = _json_fields(op)
    to_service = {wire: name for name, wire in op.renamed.items()}

    async def endpoint(**given: Any) -> Any:
        memory: AsyncMemory = given.pop("memory")
        key: str | None = given.pop("idempotency_key", None)
        path = {name: path_value(given.pop(name)) for name in op.path_names}
        arguments: dict[str, Any] = {**path}
        if query is not None:
            arguments |= _decoded(_values(given.pop("params"), op.fields), objects)
        if op.body is not None:
            body = given.pop("body")
            arguments |= {op.whole: body} if op.whole else _values(body, op.fields)
        arguments |= given  # the flags, by the service's names
        called = {to_service.get(name, name): value for name, value in arguments.items()}
        if key is None:
            return _answer(op, await getattr(memory, service)(**called), path)
        asked = jsonable_encoder(called)
        owner = called.get("user_id")
        async with memory.write_once(
            key,
            fingerprint=fingerprint(op.method, op.name, asked),
            user_id=owner if isinstance(owner, str) else None,
        ) as once:
            if once.replay is not None:
                return _replayed(once.replay.status, once.replay.body)
            answer = _answer(op, await getattr(memory, service)(**called), path)
            if isinstance(answer, Response):
                if not answer.body:  # an answer with no body (204): its status is the answer
                    once.keep(answer.status_code, None)
                return answer
            body = jsonable_encoder(answer)
            once.keep(op.status, body)
            return JSONResponse(body, status_code=op.status)

    parameters = [inspect.Parameter(name, _KEYWORD, annotation=str) for name in op.path_names]
    if query is not None:
        read = Annotated[query, Query()]  # type: ignore[valid-type]
        parameters.append(inspect.Parameter("params", _KEYWORD, annotation=read))
    if op.body is not None:
        parameters.append(inspect.Parameter("body", _KEYWORD, annotation=op.body))
    parameters.append(inspect.Parameter("memory", _KEYWORD, annotation=_MEMORY[op.scope]))
    if op.takes_idempotency_key:
        keyed = Annotated[
            str | None,
            Header(alias=KEY_HEADER, max_length=KEY_MAX_LENGTH, description=_KEY_DESCRIPTION),
        ]
        parameters.append(
            inspect.Parameter("idempotency_key", _KEYWORD, annotation=keyed, default=None)
        )
    for flag in op.flags:
        alias = flag.wire if flag.wire != flag.name else None
        flagged = Annotated[bool, Query(alias=alias, description=flag.description)]
        parameters.append(inspect.Parameter(flag.name, _KEYWORD, annotation=flagged, default=False))
    endpoint.__name__ = endpoint.__qualname__ = op.name
    endpoint.__doc__ = op.description
    endpoint.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    return endpoint


def _replayed(status: int, body: Any) -> Response:
    """The first answer of a keyed write, sent again to its retry."""
    headers = {REPLAYED_HEADER: "true"}
    if body is None:
        return Response(status_code=status, headers=headers)
    return JSONResponse(body, status_code=status, headers=headers)


def split_example(op: Operation) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The example's path values, query string and body."""
    query = query_model(op) if op.service is not None else None
    in_query = {f.wire for f in op.flags} | set(query.model_fields if query else ())
    path = {k: v for k, v in op.example.items() if k in op.path_names}
    params = {
        k: v
        for k, v in op.example.items()
        if k not in path and (k in in_query or (op.body is None and op.handler is not None))
    }
    body = {k: v for k, v in op.example.items() if k not in path and k not in params}
    return path, params, body


def curl(op: Operation) -> str:
    """The example as a curl command line."""
    path, params, body = split_example(op)
    sent = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in params.items()}
    sent = {k: str(v).lower() if isinstance(v, bool) else v for k, v in sent.items()}
    url = SERVER + op.path.format_map(path) + (f"?{urlencode(sent, doseq=True)}" if sent else "")
    line = f"curl -X {op.method} '{url}'"
    if op.scope is not None:
        line += ' -H "Authorization: Bearer $MEMVAULT_API_KEY"'
    if op.body is not None or body:
        data = json.dumps(body).replace("'", "'\\''")  # a quote closes, is escaped, reopens
        line += f" -H 'Content-Type: application/json' -d '{data}'"
    return line


def _openapi_extra(op: Operation) -> dict[str, Any]:
    sample = {"lang": "Shell", "label": "curl", "source": curl(op)}
    extra: dict[str, Any] = {"x-codeSamples": [sample]}
    _, _, body = split_example(op)
    if op.body is not None:
        extra["requestBody"] = {"content": {"application/json": {"example": body}}}
    return extra


def _route_options(op: Operation) -> dict[str, Any]:
    options = dict(handlers.ROUTE_OPTIONS.get(op.handler or "", {}))
    responses: dict[int | str, dict[str, Any]] = {}
    if op.path.startswith("/v1"):
        responses |= V1_ERRORS
    if op.conflict:
        responses |= CONFLICT
    options["responses"] = {**responses, **options.get("responses", {})}
    if op.handler is None:
        options["response_model"] = op.response
        options["status_code"] = op.status
    return options


@functools.cache
def api_routes() -> tuple[BaseRoute, ...]:
    """Every operation's route, built once per process. Building one is a pydantic schema per
    field it reads and answers (about a second for the table on the 2-core VM), and every app
    the process makes (a worker's, each test's) serves the same routes: they hold no app."""
    return tuple(build_router().routes)


def build_router() -> APIRouter:
    router = APIRouter()
    for op in OPERATIONS:
        if not op.routed:
            continue
        endpoint = getattr(handlers, op.handler) if op.handler else _endpoint(op)
        router.add_api_route(
            op.path,
            endpoint,
            methods=[op.method],
            name=op.name,
            summary=op.summary,
            description=op.description,
            tags=[op.tag],
            deprecated=op.deprecated or None,
            openapi_extra=_openapi_extra(op),
            **_route_options(op),
        )
    return router


__all__ = ["api_routes", "build_router", "curl", "query_model", "split_example"]
