"""Every route's request, derived from the operation table, for the suites that walk all of
them (keys and scopes, fuzzing): an operation added to the table is walked with no list to
keep by hand. Each request is the operation's own documented example."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from memvault.api.routes import split_example
from memvault.operations import OPERATIONS, Operation

# They erase the calling tenant, its key included, so a walk over every route takes them last.
_ENDS_THE_TENANT = "/v1/admin/tenant"


@dataclass(frozen=True)
class Route:
    op: Operation
    path: str  # with the example's values in place of the path names
    request: dict[str, Any]  # keywords for httpx / TestClient ``request``

    @property
    def method(self) -> str:
        return self.op.method

    @property
    def template(self) -> tuple[str, str]:
        """(method, path template) as OpenAPI lists it."""
        return self.op.method, self.op.path

    @property
    def writes(self) -> bool:
        return self.op.scope == "write"

    @property
    def admin(self) -> bool:
        return self.op.scope == "admin"


def _query_value(value: Any) -> Any:
    # An object field travels as JSON in a string; a switch as true/false.
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, bool):
        return str(value).lower()
    return value


def _route(op: Operation) -> Route:
    path_values, params, body = split_example(op)
    # Switches such as ?wait=true change when an answer comes, not who may ask.
    switches = {flag.wire for flag in op.flags}
    query = {k: _query_value(v) for k, v in params.items() if k not in switches}
    request: dict[str, Any] = {}
    if query:
        request["params"] = query
    if op.body is not None:
        request["json"] = body
    return Route(op, op.path.format_map(path_values), request)


def _routed(prefix: str) -> list[Operation]:
    served = [op for op in OPERATIONS if op.routed and op.path.startswith(prefix)]
    # The plain erasure last of all: a shred is refused while the keys are not per tenant.
    return sorted(
        served, key=lambda op: (op.path.startswith(_ENDS_THE_TENANT), op.method == "DELETE")
    )


def v1_routes() -> list[Route]:
    """Every ``/v1`` route with its example request, those that erase the tenant last."""
    return [_route(op) for op in _routed("/v1")]


def served_operations() -> list[tuple[str, str]]:
    """Every route of the API as (method, path template), those that erase the tenant last."""
    return [(op.method, op.path) for op in _routed("/")]
