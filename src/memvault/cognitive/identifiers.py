"""Owner, channel and session names checked as every identifier is, and the channels a project
channel recalls from."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from memvault.cognitive.kinds import GLOBAL_CHANNEL
from memvault.errors import InvalidInput, validation_problems
from memvault.models import Identifier

if TYPE_CHECKING:
    pass


class _Checked(BaseModel):
    value: Identifier


def checked_id(value: str, field: str) -> str:
    """A user, channel or session name, checked as every identifier is."""
    try:
        return _Checked(value=value).value
    except ValidationError as exc:
        found = validation_problems(exc.errors(include_input=False, include_url=False))
        for problem in found:
            problem["field"] = field
        raise InvalidInput("The request is not valid.", details={"errors": found}) from None


def recall_channels(channel: str) -> builtins.list[str]:
    """A project channel recalls its own memories and the user's global ones."""
    channel = checked_id(channel, "channel")
    return [channel] if channel == GLOBAL_CHANNEL else [channel, GLOBAL_CHANNEL]
