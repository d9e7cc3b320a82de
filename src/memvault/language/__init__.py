"""What the store reads in text, shared by the write path, retrieval and the graph:
times (``when``), keyword terms (``terms``), personal data and secrets (``pii``), topic
spellings (``categories``) and word forms (``words``)."""
