"""``CognitiveFace``: the cognitive-memory methods ``AsyncMemory`` inherits."""

from __future__ import annotations

from memvault.cognitive.remember import RememberFace


class CognitiveFace(RememberFace):
    """Episodes, working memory, procedures, goals, profiles and ``remember()``."""


COGNITIVE_METHODS = (
    "start_conversation",
    "add_turns",
    "get_conversation",
    "list_conversations",
    "archive_conversation",
    "recent_turns",
    "search_turns",
    "set_context",
    "get_context_value",
    "delete_context_value",
    "get_context",
    "clear_session",
    "push_thought",
    "pop_thought",
    "set_active_goal",
    "record_tool_use",
    "tool_stats",
    "learn_strategy",
    "find_strategies",
    "reinforce_strategy",
    "add_goal",
    "get_goal",
    "list_goals",
    "complete_goal",
    "update_profile",
    "get_profile",
    "update_profile_from_facts",
    "remember",
)
