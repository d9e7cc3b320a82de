"""Encryption primitives: keys and keyrings, sealing under AES-256-GCM, keyed hashes.
Nothing here reads a table; what keeps keys in the store is in ``keys/``."""
