"""One verified TLS context for every outbound HTTPS client of a process.

httpx builds a context for each client it makes, and with it loads the CA bundle again: about
29 ms of CPU on the 2-core VM (`time.process_time` over 20 clients), on every webhook delivery
attempt, every `MemoryClient` an application makes per request, every LLM or embedding client.
A context holds no connection state and is safe to share between clients and threads, so it is
made once: httpx's own default (certifi's bundle, or the environment's `SSL_CERT_FILE` /
`SSL_CERT_DIR` where the client trusts the environment), read when first needed.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def verified_context(*, trust_env: bool = True) -> ssl.SSLContext:
    """The shared context; ``trust_env=False`` for clients that take nothing from the
    environment (webhook deliveries)."""
    return httpx.create_ssl_context(trust_env=trust_env)
