"""The local model's two encoders: ONNX Runtime (exported once, cached) and torch (fallback)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memvault.embedding import LocalEmbedder, ProviderRejected
from memvault.embedding.local import bundled_model_path
from memvault.embedding.onnx import OnnxEncoder, cache_file

SENTENCES = [
    "Caroline went to an LGBTQ support group yesterday and found it powerful.",
    "Melanie is planning a camping trip with her kids next month.",
    "what does Caroline like to eat?",
    "Where did Melanie travel last summer?",
    "I prefer window seats on long flights.",
    "My sister's birthday is on the 14th of March.",
    "The quarterly report is due on Friday; Bob owns the revenue section.",
    "Allergic to peanuts and shellfish.",
    "He switched from Python 2 to Python 3 in 2019.",
    "The dog knocked over the vase while we were at the cinema.",
    "Remind me to call the dentist after lunch.",
    "She adopted two cats from the shelter in April.",
    "We are moving to Lisbon in the autumn.",
    "The meeting was rescheduled because the CEO was sick.",
    "I've been reading a lot of science fiction lately, mostly Le Guin.",
    "Our deployment pipeline runs the migrations before the new pods start.",
    "The recipe needs two cups of flour and a pinch of salt.",
    "He ran his first marathon in under four hours.",
    "Use PostgreSQL 16 with pgvector for the vector index.",
    "Tomorrow's forecast says heavy rain in the afternoon.",
    "Ich trinke morgens lieber Tee als Kaffee.",
    "Je voudrais réserver une table pour deux personnes.",
    "东京的春天樱花很美。",
    "🎉 congrats on the new job!!!",
    "ok",
    "a",
    "The user asked for vegetarian options only.",
    "Error 503: the embedding service is unavailable, retry later.",
    "Her favourite band is Radiohead and she saw them live in 2016.",
    "Grandma's lasagna recipe is in the blue notebook on the kitchen shelf.",
    "The API key was rotated on Monday; the old one stops working next week.",
    "They painted a sunrise over the lake during the art class.",
    "Jon lost his job as a banker and decided to open a dance studio.",
    "Gina launched an online clothing store after getting laid off.",
    "what time does the pharmacy close on Sundays?",
    " ".join(f"word{n} is part of a long note that goes past the model's limit" for n in range(60)),
]


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One export for the module; what each test reads from it is the behaviour under test."""
    yield tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def first_load(export_dir: Path) -> OnnxEncoder:
    model_dir = bundled_model_path()
    assert model_dir is not None
    return OnnxEncoder.load(model_dir, export_dir, "all-MiniLM-L6-v2")


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


async def test_onnx_vectors_match_torch(first_load: OnnxEncoder, export_dir: Path) -> None:
    onnx = LocalEmbedder(backend="onnx", cache_dir=export_dir)
    torch = LocalEmbedder(backend="torch")
    assert onnx.model_id == torch.model_id  # stored vectors stay valid across encoders
    a = np.array(await onnx.embed_batch(SENTENCES))
    b = np.array(await torch.embed_batch(SENTENCES))
    assert onnx.load().encoder.backend == "onnx"
    assert torch.load().encoder.backend == "torch"
    similarity = cosines(a, b)
    assert similarity.mean() >= 0.99
    assert similarity.min() >= 0.98
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-4)


async def test_onnx_and_torch_tokenize_the_same_spans(
    first_load: OnnxEncoder, export_dir: Path
) -> None:
    text = "Caroline's café, in Zürich — opened 2019!"
    onnx = LocalEmbedder(backend="onnx", cache_dir=export_dir).tokenizer().spans(text)
    torch = LocalEmbedder(backend="torch").tokenizer().spans(text)
    assert onnx == torch


def test_export_is_cached_and_reused(first_load: OnnxEncoder, export_dir: Path) -> None:
    model_dir = bundled_model_path()
    assert model_dir is not None
    assert first_load.source == "exported"
    target = cache_file(model_dir, export_dir, "all-MiniLM-L6-v2")
    assert target.name.startswith("all-MiniLM-L6-v2-") and target.suffix == ".onnx"
    assert first_load.onnx_file == target and target.exists()
    before = target.stat()
    second = OnnxEncoder.load(model_dir, export_dir, "all-MiniLM-L6-v2")
    assert second.source == "cached"
    after = target.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not [p for p in export_dir.iterdir() if p.name.endswith(".partial")]  # none half-written
    np.testing.assert_allclose(second.encode(["same"]), first_load.encode(["same"]), atol=1e-6)


def _cls_pooled_copy(tmp_path: Path) -> Path:
    """The bundled model with CLS pooling: a model the ONNX graph does not reproduce."""
    source = bundled_model_path()
    assert source is not None
    copy = tmp_path / "cls-model"
    shutil.copytree(source, copy, symlinks=True, ignore=shutil.ignore_patterns("*.safetensors"))
    for weights in source.glob("*.safetensors"):
        (copy / weights.name).symlink_to(weights)
    pooling = copy / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(config))
    return copy


async def test_auto_falls_back_to_torch_and_says_why(tmp_path: Path) -> None:
    embedder = LocalEmbedder(str(_cls_pooled_copy(tmp_path)), cache_dir=tmp_path / "models")
    vectors = await embedder.embed_batch(["hello"])
    loaded = embedder.load()
    assert loaded.encoder.backend == "torch"
    assert "ONNX is unavailable" in loaded.reason and "mean pooling" in loaded.reason
    assert len(vectors[0]) == 384
    assert not (tmp_path / "models").exists()  # nothing exported for a model it cannot run


async def test_forced_onnx_refuses_instead_of_falling_back(tmp_path: Path) -> None:
    embedder = LocalEmbedder(
        str(_cls_pooled_copy(tmp_path)), backend="onnx", cache_dir=tmp_path / "models"
    )
    with pytest.raises(ProviderRejected, match="MEMVAULT_EMBEDDING_BACKEND=torch"):
        await embedder.embed_batch(["hello"])


def test_the_setting_chooses_torch(tmp_path: Path) -> None:
    loaded = LocalEmbedder(backend="torch", cache_dir=tmp_path).load()
    assert loaded.encoder.backend == "torch"
    assert "MEMVAULT_EMBEDDING_BACKEND" in loaded.reason
    assert list(tmp_path.iterdir()) == []


def test_without_a_cache_directory_auto_runs_torch() -> None:
    loaded = LocalEmbedder().load()
    assert loaded.encoder.backend == "torch"
    assert "no data directory" in loaded.reason
