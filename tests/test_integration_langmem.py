"""LangMem's memory tools, unchanged, inside a LangGraph agent whose store is MemvaultStore; the
chat model is scripted (no network): it calls the tools as a real model would."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("langmem")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langmem import create_manage_memory_tool, create_search_memory_tool

from memvault import Memory
from memvault.config import Settings
from memvault.integrations.langgraph import MemvaultStore


class ScriptedChatModel(GenericFakeChatModel):
    """Answers with the next scripted message; tools are bound by the agent, not used."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self


def _script(*messages: AIMessage) -> Iterator[AIMessage]:
    return iter(messages)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore:.*create_react_agent.*")
def test_langmem_tools_in_an_agent_write_and_read_memvault(
    make_settings: Callable[..., Settings],
) -> None:
    from langgraph.prebuilt import create_react_agent

    namespace = ("memories", "{langgraph_user_id}")
    tools = [create_manage_memory_tool(namespace), create_search_memory_tool(namespace)]
    model = ScriptedChatModel(
        messages=_script(
            AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "manage_memory",
                        "args": {"content": "User prefers dark mode", "action": "create"},
                        "id": "call-1",
                    }
                ],
            ),
            AIMessage("I'll remember that."),
            AIMessage(
                "",
                tool_calls=[
                    {"name": "search_memory", "args": {"query": "dark mode"}, "id": "call-2"}
                ],
            ),
            AIMessage("You prefer dark mode."),
        )
    )
    config = {"configurable": {"langgraph_user_id": "alice"}}
    with Memory(make_settings(embedding_provider="hash")) as memory:
        store = MemvaultStore(memory, user_id="agents")
        agent = create_react_agent(model, tools=tools, store=store)
        agent.invoke({"messages": [{"role": "user", "content": "I like dark mode."}]}, config)
        stored = store.search(("memories", "alice"))
        assert [item.value for item in stored] == [{"content": "User prefers dark mode"}]
        # Another user's namespace holds nothing.
        assert store.search(("memories", "bob")) == []

        answer = agent.invoke(
            {"messages": [{"role": "user", "content": "What do I like?"}]}, config
        )
        found = [m for m in answer["messages"] if isinstance(m, ToolMessage)]
        assert "User prefers dark mode" in str(found[-1].content)
        assert answer["messages"][-1].content == "You prefer dark mode."
        # The memory LangMem wrote is a memvault memory like any other, searchable natively.
        hits = memory.search("dark mode", user_id="agents", source="langgraph")
        assert [h.content for h in hits.results] == ['{"content":"User prefers dark mode"}']
