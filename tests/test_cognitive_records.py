"""Cognitive rows leave db/ as records naming every column of their table."""

from __future__ import annotations

import dataclasses

import pytest
import sqlalchemy as sa

from memvault.db import tables
from memvault.db.cognitive_records import (
    ConversationRow,
    ProfileRow,
    StrategyRow,
    ToolInvocationRow,
    TurnRow,
    WorkingRow,
)


@pytest.mark.parametrize(
    ("record", "table"),
    [
        (ConversationRow, tables.conversations),
        (TurnRow, tables.conversation_turns),
        (WorkingRow, tables.working_memory),
        (ToolInvocationRow, tables.tool_invocations),
        (StrategyRow, tables.strategies),
        (ProfileRow, tables.user_profiles),
    ],
)
def test_a_record_names_every_column_of_its_table(record: type, table: sa.Table) -> None:
    """Every column but a vector, which only the database compares; then what the query
    computes (a conversation's turns present now)."""
    kept = [c.name for c in table.columns if c.name != "embedding"]
    computed = ["turns_present"] if record is ConversationRow else []
    assert [f.name for f in dataclasses.fields(record)] == kept + computed
