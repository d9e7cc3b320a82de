"""Framework adapters over the one service (``Memory``/``AsyncMemory`` in process,
``MemoryClient``/``AsyncMemoryClient`` over HTTP). Each module needs its framework installed
(``pip install memvault[langgraph]``, ``[openai-agents]``, ``[langchain]``)."""
