"""An OpenAI Agents SDK session on memvault conversations: ``MemvaultSession(session_id,
memory, user_id=...)``.

A session is one memvault conversation, named by ``session_id``, of one user. Each item the SDK
adds is one turn, so a ``Runner`` run's history is kept verbatim, learned from at write and
searchable like any conversation:

* a plain message (``{"role": "user" | "assistant" | "system", "content": "<text>"}``, just
  those two keys) is a turn with that role and text, read back as an equal dict;
* any other item (a message with parts, a function call, its output, reasoning) is a turn whose
  text is the item as compact JSON, marked so ``get_items`` returns the item exactly as added
  (its role is ``tool`` for a tool's output, ``assistant`` otherwise). Search finds a message
  with parts by the words of its parts; any other item it never finds (its ``index_text`` is
  empty), so ``search`` never answers ``{"arguments":...}``.

``session_settings`` is the SDK's ``SessionSettings`` or a dict of its fields (default:
``SessionSettings()``); ``get_items()`` without a limit returns its ``limit`` newest items.

Turns pass through memvault's PII policy like every conversation: with the default ``redact``
an e-mail address in a message comes back redacted (``MEMVAULT_PII_POLICY=allow`` keeps the
history verbatim).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from agents.memory import SessionSettings
from agents.memory.session_settings import coerce_session_settings

from memvault.errors import NotFound
from memvault.integrations._faces import Bridge

# The marker in a turn's ``model`` field: the turn's text is an SDK item as JSON.
ITEM_MARK = "openai-agents-item"
_PLAIN_ROLES = ("user", "assistant", "system")


def _turn(item: dict[str, Any]) -> dict[str, Any]:
    content = item.get("content")
    if (
        set(item) == {"role", "content"}
        and item["role"] in _PLAIN_ROLES
        and isinstance(content, str)
        and content.strip()
        and content == content.strip()
    ):
        return {"role": item["role"], "content": content}
    kind = str(item.get("type", ""))
    role = "tool" if kind.endswith("_output") else "assistant"
    text = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
    return {"role": role, "content": text, "model": ITEM_MARK, "index_text": _words(item)}


def _words(item: dict[str, Any]) -> str:
    """What search finds an item by: a message's own words (a reply in output parts, say),
    never its JSON; nothing for any other item (a tool call, its output, reasoning), which is
    the SDK's bookkeeping, kept and read back with the session but never a search hit."""
    if item.get("role") not in _PLAIN_ROLES:
        return ""
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(
        p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


def _item(turn: Any) -> dict[str, Any]:
    if turn.model == ITEM_MARK:
        loaded: dict[str, Any] = json.loads(turn.content)
        return loaded
    return {"role": turn.role, "content": turn.content}


class MemvaultSession:
    """The SDK's ``Session`` protocol over one memvault conversation.

    ``memory`` is any of ``Memory``, ``AsyncMemory``, ``MemoryClient`` or
    ``AsyncMemoryClient``; ``user_id`` owns the conversation (default: the session id)."""

    session_settings: SessionSettings

    def __init__(
        self,
        session_id: str,
        memory: Any,
        *,
        user_id: str | None = None,
        app_id: str = "default",
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        self.session_id = session_id
        self.user_id = user_id or session_id
        self.app_id = app_id
        # As the SDK's own sessions: a dict is coerced (Runner reads ``.limit`` off it).
        self.session_settings = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )
        self._bridge = Bridge(memory)

    async def _turns(self) -> list[Any]:
        try:
            conversation = await self._bridge.service.get_conversation(
                self.session_id, user_id=self.user_id
            )
        except NotFound:
            return []
        return list(conversation.turns or [])

    async def get_items(self, limit: int | None = None) -> list[Any]:
        turns = await self._bridge.arun(self._turns())
        if limit is None:
            limit = self.session_settings.limit
        if limit is not None:
            turns = turns[-limit:] if limit > 0 else []
        return [_item(t) for t in turns]

    async def add_items(self, items: list[Any]) -> None:
        if not items:
            return
        await self._bridge.arun(
            self._bridge.service.add_messages(
                [_turn(dict(item)) for item in items],
                user_id=self.user_id,
                app_id=self.app_id,
                conversation_id=self.session_id,
            )
        )

    async def _pop(self) -> Any:
        while True:
            turns = await self._turns()
            if not turns:
                return None
            last = turns[-1]
            try:
                await self._bridge.service.delete(last.memory_id, user_id=self.user_id)
            except NotFound:
                # A concurrent pop took this one: the newest left is this pop's. Each retry
                # follows another pop's success, so this ends.
                continue
            return _item(last)

    async def pop_item(self) -> Any:
        return await self._bridge.arun(self._pop())

    async def _clear(self) -> None:
        # Clearing a session that holds nothing yet is not an error (as in the SDK's sessions).
        with contextlib.suppress(NotFound):
            await self._bridge.service.erase_conversation(self.session_id, user_id=self.user_id)

    async def clear_session(self) -> None:
        await self._bridge.arun(self._clear())

    def close(self) -> None:
        """Nothing to release: the session holds no connection of its own (the memory it was
        given does, and is its owner's to close). Here so code written for the SDK's
        ``SQLiteSession``, which ends with ``session.close()``, runs unchanged."""


__all__ = ["ITEM_MARK", "MemvaultSession"]
