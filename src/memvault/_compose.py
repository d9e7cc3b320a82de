"""How ``AsyncMemory`` stands in front of its resources.

The everyday verbs are written on ``AsyncMemory`` (``verb`` gives each its resource method's
documentation and signature); every other operation keeps its flat name (``complete_goal``)
as a method made by ``derive_delegates`` from the operation table, which names the resource
each one is a method of. Nothing here knows a resource by name: ``AsyncMemory``'s annotations
say which attribute holds which resource class.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
# Set on a derived method: the resource attribute it calls through.
DELEGATE = "__delegate_of__"
# Set on a method one resource offers the others and not the door (see ``between_resources``).
BETWEEN_RESOURCES = "__between_resources__"


def between_resources(method: F) -> F:
    """Mark a resource's coroutine method as one that other resources call (``conversations``
    stores its turns through ``memories``): public, so no resource reaches into another's
    private methods, yet no verb of the door, the faces or the operation table, which derive
    their verbs from the public coroutine methods that carry no such mark."""
    setattr(method, BETWEEN_RESOURCES, True)
    return method


def verb(implementation: Callable[..., Any]) -> Callable[[F], F]:
    """Give a method of the door that calls ``implementation`` its documentation and the
    signature its callers see (a model's fields included), so help(), the client and the
    sync face read the same thing on both."""

    def decorate(method: F) -> F:
        method.__doc__ = implementation.__doc__
        for name, value in vars(implementation).items():
            if name in {"__signature__", "__declared_signature__", "__takes__"}:
                setattr(method, name, value)
        return method

    return decorate


def _delegate(
    resource: str, method: Callable[..., Coroutine[Any, Any, Any]]
) -> Callable[..., Coroutine[Any, Any, Any]]:
    name = method.__name__

    @functools.wraps(method)
    async def call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        return await getattr(getattr(self, resource), name)(*args, **kwargs)

    call.__qualname__ = name
    setattr(call, DELEGATE, resource)
    return call


def is_resource(kind: object) -> bool:
    """A resource is a class whose constructor takes the tenant's ``context`` first."""
    if not isinstance(kind, type) or "__init__" not in vars(kind):
        return False
    parameters = list(inspect.signature(kind).parameters)
    return parameters[:1] == ["context"]


def resources(door: type) -> dict[str, type]:
    """The door's resources: each attribute its class annotates with a resource class."""
    hints = typing.get_type_hints(door)
    return {attribute: kind for attribute, kind in hints.items() if is_resource(kind)}


def derive_delegates(door: type, calls: Iterable[tuple[str, str]]) -> None:
    """For each ``(name, resource)`` give ``door`` a coroutine method ``name`` that is the
    resource's method of that name (the door's own methods, the everyday verbs, stay)."""
    held = resources(door)
    for name, resource in calls:
        if name in vars(door):
            continue
        method = getattr(held[resource], name)
        setattr(door, name, _delegate(resource, method))


__all__ = ["DELEGATE", "derive_delegates", "is_resource", "resources", "verb"]
