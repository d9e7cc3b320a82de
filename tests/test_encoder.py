"""The local model's encoders: ONNX Runtime over a graph built from the weights without torch
(cached under a fingerprint of the weights), and sentence-transformers on torch (the extra)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memvault.embedding import LocalEmbedder, ProviderRejected
from memvault.embedding.local import bundled_model_path
from memvault.embedding.onnx import OnnxEncoder, cache_file

LOCOMO_DEV = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo_dev.json"
# The test runs a fixed spread of the dev set's turns, evenly over their lengths (the shortest
# and the longest included): every text runs through the same operators, and what differs
# from one to the next is its length (padding within a batch, the window's truncation) and its
# characters, which SENTENCES covers at the edges (other scripts, emoji, one letter, past the
# window). 160 of 2,760 turns, where every 4th in order cost ~50 s of CPU across the two
# encoders; bench/encoder.py compares every one of them.
DEV_TURNS = 160

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
def graph_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One graph for the module; what each test reads from it is the behaviour under test."""
    yield tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def first_load(graph_dir: Path) -> OnnxEncoder:
    model_dir = bundled_model_path()
    assert model_dir is not None
    return OnnxEncoder.load(model_dir, graph_dir, "all-MiniLM-L6-v2")


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def dev_texts() -> list[str]:
    """The dev conversations' turns as bench/locomo.py stores them: "speaker: text"."""
    if not LOCOMO_DEV.exists():
        # The dev set is shared benchmark data, not part of the repository (DESIGN.md).
        pytest.skip(f"{LOCOMO_DEV} is absent: the encoder comparison needs LoCoMo's dev set")
    texts = sorted(
        (
            f"{turn['speaker']}: {turn['text']}"
            for sample in json.loads(LOCOMO_DEV.read_text())
            for key, session in sample["conversation"].items()
            if re.fullmatch(r"session_\d+", key)
            for turn in session
        ),
        key=len,
    )
    spread = np.linspace(0, len(texts) - 1, min(DEV_TURNS, len(texts))).round().astype(int)
    return [texts[i] for i in dict.fromkeys(spread.tolist())] + SENTENCES


@pytest.mark.slow
async def test_built_graph_gives_sentence_transformers_vectors(
    first_load: OnnxEncoder, graph_dir: Path
) -> None:
    pytest.importorskip("sentence_transformers", reason="the torch extra is not installed")
    onnx = LocalEmbedder(backend="onnx", cache_dir=graph_dir)
    torch = LocalEmbedder(backend="torch")
    assert onnx.model_id == torch.model_id  # stored vectors stay valid across encoders
    texts = dev_texts()
    a = np.array(await onnx.embed_batch(texts))
    b = np.array(await torch.embed_batch(texts))
    assert onnx.load().encoder.backend == "onnx"
    assert torch.load().encoder.backend == "torch"
    similarity = cosines(a, b)
    worst = int(similarity.argmin())
    assert similarity[worst] >= 0.99999, texts[worst]
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
async def test_onnx_and_torch_tokenize_the_same_spans(
    first_load: OnnxEncoder, graph_dir: Path
) -> None:
    pytest.importorskip("sentence_transformers", reason="the torch extra is not installed")
    text = "Caroline's café, in Zürich — opened 2019!"
    onnx = LocalEmbedder(backend="onnx", cache_dir=graph_dir).tokenizer().spans(text)
    torch = LocalEmbedder(backend="torch").tokenizer().spans(text)
    assert onnx == torch


def test_graph_is_built_once_then_cached(first_load: OnnxEncoder, graph_dir: Path) -> None:
    model_dir = bundled_model_path()
    assert model_dir is not None
    assert first_load.source == "built"
    target = cache_file(model_dir, graph_dir, "all-MiniLM-L6-v2")
    assert target.name.startswith("all-MiniLM-L6-v2-") and target.suffix == ".onnx"
    assert first_load.onnx_file == target and target.exists()
    before = target.stat()
    second = OnnxEncoder.load(model_dir, graph_dir, "all-MiniLM-L6-v2")
    assert second.source == "cached"
    after = target.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not [p for p in graph_dir.iterdir() if p.name.endswith(".partial")]  # none half-written
    np.testing.assert_allclose(second.encode(["same"]), first_load.encode(["same"]), atol=1e-6)


def test_built_graph_is_a_valid_onnx_model(first_load: OnnxEncoder) -> None:
    """Written on protobuf alone, the graph is still what ONNX's own checker accepts (full
    check: types and shapes inferred through every node), with dynamic batch and sequence."""
    import onnx

    model = onnx.load(str(first_load.onnx_file))
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask", "token_type_ids"]
    dims = [d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", "sequence"]
    assert model.opset_import[0].version == 17 and model.ir_version == 8


def _model_copy(tmp_path: Path, name: str) -> Path:
    """The bundled model's files, the weights linked rather than copied."""
    source = bundled_model_path()
    assert source is not None
    copy = tmp_path / name
    shutil.copytree(source, copy, symlinks=True, ignore=shutil.ignore_patterns("*.safetensors"))
    for weights in source.glob("*.safetensors"):
        (copy / weights.name).symlink_to(weights)
    return copy


@pytest.mark.slow
async def test_changed_weights_get_a_graph_of_their_own(
    first_load: OnnxEncoder, graph_dir: Path, tmp_path: Path
) -> None:
    from safetensors.numpy import load_file, save_file

    copy = _model_copy(tmp_path, "all-MiniLM-L6-v2")
    weights = load_file(str(copy / "model.safetensors"))
    bias = "encoder.layer.5.output.dense.bias"
    weights[bias] = np.random.default_rng(0).normal(size=weights[bias].shape).astype(np.float32)
    (copy / "model.safetensors").unlink()
    save_file(weights, str(copy / "model.safetensors"))
    changed = OnnxEncoder.load(copy, graph_dir, "all-MiniLM-L6-v2")
    assert changed.source == "built" and changed.onnx_file != first_load.onnx_file
    assert len(list(graph_dir.glob("*.onnx"))) == 2
    drift = cosines(changed.encode(["a cup of tea"]), first_load.encode(["a cup of tea"]))
    assert drift[0] < 0.999  # the new weights are what runs, not the cached graph


def _cls_pooled_copy(tmp_path: Path) -> Path:
    """The bundled model with CLS pooling: a model the graph builder does not reproduce."""
    copy = _model_copy(tmp_path, "cls-model")
    pooling = copy / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(config))
    return copy


@pytest.mark.slow
async def test_auto_runs_an_unsupported_model_on_torch_and_says_why(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="the torch extra is not installed")
    embedder = LocalEmbedder(str(_cls_pooled_copy(tmp_path)), cache_dir=tmp_path / "models")
    vectors = await embedder.embed_batch(["hello"])
    loaded = embedder.load()
    assert loaded.encoder.backend == "torch"
    assert "ONNX is unavailable" in loaded.reason and "mean pooling" in loaded.reason
    assert len(vectors[0]) == 384
    assert not (tmp_path / "models").exists()  # nothing built for a model it cannot run


async def test_forced_onnx_refuses_instead_of_falling_back(tmp_path: Path) -> None:
    embedder = LocalEmbedder(
        str(_cls_pooled_copy(tmp_path)), backend="onnx", cache_dir=tmp_path / "models"
    )
    with pytest.raises(ProviderRejected, match="MEMVAULT_EMBEDDING_BACKEND=torch"):
        await embedder.embed_batch(["hello"])


@pytest.mark.slow
def test_the_setting_chooses_torch(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="the torch extra is not installed")
    loaded = LocalEmbedder(backend="torch", cache_dir=tmp_path).load()
    assert loaded.encoder.backend == "torch"
    assert "MEMVAULT_EMBEDDING_BACKEND" in loaded.reason
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_without_a_cache_directory_the_graph_is_built_in_memory(tmp_path: Path) -> None:
    loaded = LocalEmbedder(str(_model_copy(tmp_path, "all-MiniLM-L6-v2"))).load()
    assert loaded.encoder.backend == "onnx"
    assert "in memory" in loaded.reason and "no data directory" in loaded.reason
    assert not list(tmp_path.rglob("*.onnx"))
