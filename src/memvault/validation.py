"""Building input models from keywords: bad input becomes ``InvalidInput`` that never echoes
the values (shared by the service and the subsystems it is made of)."""

from __future__ import annotations

from typing import Any, TypeVar
from uuid import UUID

from pydantic import BaseModel, ValidationError

from memvault.errors import InvalidInput, validation_problems

M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], **fields: Any) -> M:
    """Build an input model; bad input becomes ``InvalidInput`` that never echoes the values."""
    try:
        return model.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        found = validation_problems(exc.errors(include_input=False, include_url=False))
        raise InvalidInput("The request is not valid.", details={"errors": found}) from None


def parse_id(memory_id: UUID | str, *, field: str = "memory_id") -> UUID:
    """An id the caller gave, as a UUID; anything else is ``InvalidInput`` naming ``field``."""
    if isinstance(memory_id, UUID):
        return memory_id
    try:
        return UUID(memory_id)
    except (ValueError, TypeError, AttributeError):
        noun = field.removesuffix("_id").replace("_", " ")
        article = "An" if noun[:1] in "aeiou" else "A"
        raise InvalidInput(
            f"{article} {noun} id must be a UUID.", details={"field": field}
        ) from None
