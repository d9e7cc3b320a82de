"""What every cognitive mixin of ``AsyncMemory`` stands on: the backend, the tenant, sealing
bound to a table and key, owner and channel checks, and the service methods it reuses."""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from memvault.backend import Backend
from memvault.cognitive.models import GLOBAL_CHANNEL
from memvault.cognitive.sealed import open_payload, seal_payload
from memvault.errors import InvalidInput, validation_problems
from memvault.models import AddResult, Identifier, SearchResult

if TYPE_CHECKING:
    from memvault.models import Message, MessagesRequest
    from memvault.pipeline.ingest import Within


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


class CognitiveBase:
    _backend: Backend
    tenant_id: str

    if TYPE_CHECKING:
        search: Callable[..., Awaitable[SearchResult]]

        async def add_messages(
            self,
            /,
            messages: builtins.list[Message | dict[str, Any]],
            *,
            wait: bool = False,
            **fields: Any,
        ) -> builtins.list[AddResult]: ...

        async def _store_turns(
            self,
            request: MessagesRequest,
            conversation_id: str,
            channel: str,
            first_turn: int,
            *,
            wait: bool,
            within: Within,
        ) -> builtins.list[AddResult]: ...

    def _seal_row(self, table: str, key: tuple[Any, ...], payload: Any) -> dict[str, Any]:
        return seal_payload(self._backend.keys, table, (self.tenant_id, *key), payload)

    def _open_row(self, table: str, key: tuple[Any, ...], row: Any) -> Any:
        return open_payload(self._backend.keys, table, (self.tenant_id, *key), row)

    def _count_tokens(self, text: str) -> int:
        return len(self._backend.embeddings.primary.tokenizer().spans(text))
