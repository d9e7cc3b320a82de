"""The default install runs without torch: the server's import path, a stored memory embedded by
the bundled model, and a search that finds it, with torch, transformers, sentence-transformers,
scipy, scikit-learn, sympy, the onnx package and dateparser refused at import; what does need
torch says which extra to add. With tracing off, as by default, nothing of the OpenTelemetry
SDK is imported either."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memvault import Settings
from memvault.embedding.local import bundled_model_path

# onnx too: the encoder's graph is written on protobuf alone (embedding/onnx_proto.py); and
# dateparser, which the default install no longer has (dates are read by language/when.py).
REFUSED = (
    "torch",
    "transformers",
    "sentence_transformers",
    "scipy",
    "sklearn",
    "sympy",
    "onnx",
    "dateparser",
)

# Runs in a fresh interpreter: a finder ahead of every other one refuses the heavy packages as
# if they were not installed, then the server is built and used as `memvault serve` would.
SCRIPT = """
import asyncio, json, sys

REFUSED = set(json.loads(sys.argv[1]))

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in REFUSED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Refuse())

import memvault.cli  # the `memvault serve` entry point and everything it imports
from fastapi.testclient import TestClient
from memvault import Settings
from memvault.api import create_app
from memvault.embedding import LocalEmbedder, ProviderRejected

settings = Settings(**json.loads(sys.argv[2]))
out = {}
with TestClient(create_app(settings)) as client:
    user = {"user_id": "ana"}
    added = client.post(
        "/v1/memories", json={"content": "Ana is allergic to peanuts", "infer": False, **user}
    )
    client.post("/v1/memories", json={"content": "Ana moved to Lisbon", "infer": False, **user})
    found = client.post("/v1/memories/search", json={"query": "food allergy", **user}).json()
    out["added"] = added.status_code
    out["found"] = [hit["content"] for hit in found["results"]]
    out["model"], out["degraded"] = found["model"], found["degraded"]

embedder = LocalEmbedder(sys.argv[3], cache_dir=settings.data_dir / "models")
try:
    asyncio.run(embedder.embed_batch(["hello"]))
except ProviderRejected as exc:
    out["unsupported"] = exc.message
out["loaded"] = sorted({m.split(".")[0] for m in sys.modules} & REFUSED)
# Tracing off (the default): not a module of the SDK or an exporter was imported (FastAPI
# imports the OpenTelemetry API itself).
sdk = ("opentelemetry.sdk", "opentelemetry.exporter")
out["otel"] = sorted(m for m in sys.modules if m.startswith(sdk))
print(json.dumps(out))
"""


def _cls_pooled_model(tmp_path: Path) -> Path:
    """The bundled model with CLS pooling, which only sentence-transformers runs."""
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


def test_server_embeds_and_finds_with_torch_and_its_kin_refused(
    make_settings: Callable[..., Settings], database_url: str, tmp_path: Path
) -> None:
    settings = make_settings()
    assert settings.encryption_key is not None
    values: dict[str, Any] = {
        "database_url": database_url,
        "encryption_key": settings.encryption_key.get_secret_value(),
        "data_dir": str(settings.data_dir),
        "auth": "off",
        "rate_limit_per_s": 0,
    }
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            SCRIPT,
            json.dumps(REFUSED),
            json.dumps(values),
            str(_cls_pooled_model(tmp_path)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["added"] == 201
    assert out["found"][0] == "Ana is allergic to peanuts"
    assert out["model"] == "local/all-MiniLM-L6-v2" and out["degraded"] is False
    assert "memvault[torch]" in out["unsupported"] and "mean pooling" in out["unsupported"]
    assert out["loaded"] == []
    assert out["otel"] == []
    assert list((settings.data_dir / "models").glob("all-MiniLM-L6-v2-*.onnx"))
