"""Building input models from keywords: bad input becomes ``InvalidInput`` that never echoes
the values (shared by the service and the subsystems it is made of)."""

from __future__ import annotations

from typing import Any, TypeVar

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
