"""Cognitive memory: episodes, working memory, procedures, goals, profiles, channels and the
``remember()`` bundle that recalls across them."""
