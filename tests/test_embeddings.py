"""Embedding providers, the fallback chain, the cache, and chunking."""

from __future__ import annotations

import itertools
import math
import uuid
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import InvalidInput, Settings
from memvault.embedding import (
    HashEmbedder,
    LocalEmbedder,
    OpenAIEmbedder,
    ProviderRejected,
    ProviderUnavailable,
)
from memvault.embedding.base import WhitespaceTokenizer
from memvault.embedding.cache import PostgresCache, RedisCache
from memvault.embedding.chunking import chunk, clean
from memvault.embedding.embedding_service import EmbeddingService
from memvault.service import AsyncMemory
from tests.conftest import REDIS_URL, backend_of
from tests.fakes import DIMS, closed_port_url, embedding_server, fake_vector


def openai(url: str) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        base_url=url, model="fake-embed", api_key="sk-test", dimensions=None, timeout_s=2.0
    )


def test_clean_strips_rejects_empty_and_truncates() -> None:
    assert clean("  hello  ", 100) == "hello"
    assert clean("x" * 50, 10) == "x" * 10
    with pytest.raises(InvalidInput):
        clean(" \n ", 100)


@given(
    words=st.integers(min_value=1, max_value=400),
    window=st.integers(min_value=8, max_value=64),
    overlap=st.integers(min_value=0, max_value=16),
)
def test_chunks_respect_window_and_overlap(words: int, window: int, overlap: int) -> None:
    text = " ".join(f"w{i}" for i in range(words))
    pieces = chunk(text, WhitespaceTokenizer(), window, overlap)
    size = window - 2
    tokens = [p.split() for p in pieces]
    assert all(len(t) <= size for t in tokens)
    assert tokens[0][0] == "w0" and tokens[-1][-1] == f"w{words - 1}"
    for before, after in itertools.pairwise(tokens):
        shared = min(overlap, size - 1)
        assert before[len(before) - shared :] == after[:shared]
    assert all(p in text for p in pieces)


def test_long_text_is_chunked_with_the_models_own_tokenizer() -> None:
    embedder = LocalEmbedder()
    text = "Memory systems store facts. " * 200
    pieces = chunk(text, embedder.tokenizer(), 256, 32)
    assert len(pieces) > 1
    lengths = [len(embedder.tokenizer().spans(p)) for p in pieces]
    assert max(lengths) <= 254


async def test_local_model_gives_normalised_384_vectors_that_track_meaning() -> None:
    embedder = LocalEmbedder()
    tea, coffee, tax = await embedder.embed_batch(
        ["I love green tea", "I enjoy drinking coffee", "The tax return is due in April"]
    )
    assert len(tea) == 384 and math.isclose(sum(v * v for v in tea), 1.0, rel_tol=1e-3)

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cos(tea, coffee) > cos(tea, tax)


async def test_hash_vectors_are_deterministic_and_normalised() -> None:
    embedder = HashEmbedder()
    first, again, other = await embedder.embed_batch(["a b c", "a b c", "x y z"])
    assert first == again and first != other
    assert math.isclose(sum(v * v for v in first), 1.0)
    assert embedder.model_id == "hash/384"


async def test_provider_is_retried_with_backoff_then_succeeds() -> None:
    with embedding_server() as (url, script):
        script.fail_next = 3
        service = EmbeddingService(openai(url), [HashEmbedder()], attempts=5, retry_base_s=0.01)
        result = await service.embed_batch(["one", "two"])
        assert len(script.requests) == 4
        assert result.model_id == "openai/fake-embed" and not result.fallback
        assert result.vectors == [fake_vector("one"), fake_vector("two")]
        await service.aclose()


async def test_down_provider_falls_back_to_local_then_hash() -> None:
    service = EmbeddingService(
        openai(closed_port_url()), [LocalEmbedder(), HashEmbedder()], attempts=2, retry_base_s=0.01
    )
    result = await service.embed_batch(["hello"])
    assert result.fallback and result.model_id == "local/all-MiniLM-L6-v2"
    only_hash = EmbeddingService(openai(closed_port_url()), [HashEmbedder()], attempts=1)
    assert (await only_hash.embed_batch(["hello"])).model_id == "hash/384"


async def test_bad_key_is_not_retried_and_says_so() -> None:
    with embedding_server() as (url, script):
        script.fail_next, script.fail_status = 10, 401
        service = EmbeddingService(openai(url), [], attempts=5, retry_base_s=0.01)
        with pytest.raises(ProviderRejected, match="API key"):
            await service.embed_batch(["x"])
        assert len(script.requests) == 1


async def test_without_fallback_an_outage_is_an_error() -> None:
    service = EmbeddingService(openai(closed_port_url()), [], attempts=2, retry_base_s=0.01)
    with pytest.raises(ProviderUnavailable):
        await service.embed_batch(["x"])


@pytest.mark.parametrize("backend", ["postgres", "redis"])
async def test_cache_hits_skip_the_provider(
    backend: str, make_settings: Callable[..., Settings]
) -> None:
    memory = await AsyncMemory.open(make_settings())
    cache = (
        PostgresCache(backend_of(memory).engine, 3600)
        if backend == "postgres"
        else RedisCache(REDIS_URL, 3600)
    )
    texts = [f"cached text {uuid.uuid4()}" for _ in range(3)]
    with embedding_server() as (url, script):
        service = EmbeddingService(openai(url), [], cache, attempts=1)
        first = await service.embed_batch(texts)
        second = await service.embed_batch(texts)
        fresh = f"a new one {uuid.uuid4()}"
        partly = await service.embed_batch([texts[0], fresh])
        assert script.requests == [texts, [fresh]]
        assert [pytest.approx(v, abs=1e-6) for v in first.vectors] == second.vectors
        assert len(partly.vectors) == 2 and len(partly.vectors[0]) == DIMS
        await service.aclose()
    await memory.close()


async def test_an_unreachable_cache_is_a_miss_not_a_failure() -> None:
    cache = RedisCache("redis://127.0.0.1:1/0", 3600)
    with embedding_server() as (url, _script):
        service = EmbeddingService(openai(url), [], cache, attempts=1)
        assert len((await service.embed_batch(["x"])).vectors) == 1
        await service.aclose()
