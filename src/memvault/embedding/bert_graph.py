"""A BERT sentence encoder written as an ONNX graph from the model's own files, without torch.

What the graph computes is what sentence-transformers computes for a ``BertModel`` followed by
mean pooling and normalisation: word + position + token-type embeddings and their LayerNorm;
per layer self-attention (additive mask on padded keys, softmax over ``QK^T / sqrt(d)``),
the output projection and a residual LayerNorm, the feed-forward block with the model's GELU
and a second residual LayerNorm; then the mean of the unpadded tokens, L2-normalised. Batch and
sequence axes are dynamic. The weights are read with safetensors' numpy loader, and the graph
is written as ONNX protobuf messages (:mod:`memvault.embedding.onnx_proto`): nothing here
imports torch, transformers or the ``onnx`` package.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memvault.embedding import onnx_proto

# Part of the cache file's name: a change to what the graph computes must change it.
BUILDER_VERSION = 1
_OPSET = 17  # LayerNormalization is an operator from 17 on
_IR_VERSION = 8  # the IR that opset 17 came with, which every current ONNX Runtime reads
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_TANH_GELU = ("gelu_new", "gelu_pytorch_tanh", "gelu_fast")
Weights = dict[str, npt.NDArray[Any]]


class ExportUnsupported(Exception):
    """This model's graph cannot be built here; sentence-transformers on torch can run it."""


@dataclass(frozen=True)
class Bert:
    layers: int
    hidden: int
    heads: int
    eps: float
    activation: str

    @classmethod
    def read(cls, model_dir: Path) -> Bert:
        config = json.loads((model_dir / "config.json").read_text())
        if config.get("model_type") != "bert":
            raise ExportUnsupported(f"the model is {config.get('model_type')!r}, not BERT")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ExportUnsupported("the model's position embeddings are not absolute")
        activation = config.get("hidden_act", "gelu")
        if activation not in ("gelu", *_TANH_GELU):
            raise ExportUnsupported(f"the model's activation {activation!r} is not a GELU")
        return cls(
            layers=int(config["num_hidden_layers"]),
            hidden=int(config["hidden_size"]),
            heads=int(config["num_attention_heads"]),
            eps=float(config.get("layer_norm_eps", 1e-12)),
            activation=activation,
        )


def check(model_dir: Path) -> None:
    """Raise :class:`ExportUnsupported` unless :func:`build` reproduces this model."""
    pooling = model_dir / "1_Pooling" / "config.json"
    if not (model_dir / "tokenizer.json").exists() or not pooling.exists():
        raise ExportUnsupported("the model has no fast tokenizer or no pooling config")
    config = json.loads(pooling.read_text())
    others = ("cls_token", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens")
    if not config.get("pooling_mode_mean_tokens") or any(
        config.get(f"pooling_mode_{m}") for m in others
    ):
        raise ExportUnsupported("the model's pooling is not mean pooling")
    if not (model_dir / "model.safetensors").exists():
        raise ExportUnsupported("the model has no model.safetensors")
    Bert.read(model_dir)


def load_weights(model_dir: Path) -> Weights:
    from safetensors.numpy import load_file

    weights = load_file(str(model_dir / "model.safetensors"))
    # Saved from BertModel the names start at "embeddings."; from a task model, at "bert.".
    return {name.removeprefix("bert."): array for name, array in weights.items()}


class _Graph:
    """Nodes and initialisers, each output named after its operator and a counter."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []  # onnx_proto's NodeProto and TensorProto messages
        self.initializers: list[Any] = []
        self._count = 0

    def const(self, array: npt.NDArray[Any], name: str | None = None) -> str:
        self._count += 1
        name = name or f"const_{self._count}"
        self.initializers.append(onnx_proto.tensor(array, name))
        return name

    def op(self, op_type: str, *inputs: str, output: str = "", **attributes: Any) -> str:
        self._count += 1
        output = output or f"{op_type.lower()}_{self._count}"
        self.nodes.append(onnx_proto.node(op_type, inputs, [output], **attributes))
        return output

    def linear(self, x: str, weights: Weights, prefix: str) -> str:
        # torch's Linear keeps [out, in]; MatMul wants [in, out].
        matrix = self.const(weights[f"{prefix}.weight"].T, f"{prefix}.weight")
        return self.op("Add", self.op("MatMul", x, matrix), self.const(weights[f"{prefix}.bias"]))

    def layer_norm(self, x: str, weights: Weights, prefix: str, eps: float) -> str:
        scale = self.const(weights[f"{prefix}.weight"], f"{prefix}.weight")
        bias = self.const(weights[f"{prefix}.bias"], f"{prefix}.bias")
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=eps)

    def scalar(self, value: float) -> str:
        return self.const(np.array(value, dtype=np.float32))

    def ints(self, *values: int) -> str:
        return self.const(np.array(values, dtype=np.int64))


def build(model_dir: Path) -> Any:
    """The graph of the model in ``model_dir``: token ids in, one unit vector per text out
    (an ONNX ModelProto message)."""
    check(model_dir)
    bert, weights = Bert.read(model_dir), load_weights(model_dir)
    g = _Graph()
    hidden = _embeddings(g, weights, bert)
    mask = g.op("Cast", "attention_mask", to=onnx_proto.FLOAT)
    # Padded keys get the lowest float added to their score, so softmax gives them nothing.
    key_mask = g.op("Unsqueeze", mask, g.ints(1, 2))
    additive = g.op(
        "Mul",
        g.op("Sub", g.scalar(1.0), key_mask),
        g.scalar(float(np.finfo(np.float32).min)),
    )
    for layer in range(bert.layers):
        hidden = _layer(g, weights, bert, hidden, additive, f"encoder.layer.{layer}")
    embedding = _mean_pool_normalise(g, hidden, mask)
    return onnx_proto.model(
        g.nodes,
        "sentence-encoder",
        [onnx_proto.value_info(name, onnx_proto.INT64, ["batch", "sequence"]) for name in INPUTS],
        [onnx_proto.value_info(embedding, onnx_proto.FLOAT, ["batch", bert.hidden])],
        g.initializers,
        opset=_OPSET,
        ir_version=_IR_VERSION,
        producer_name="memvault",
        producer_version=str(BUILDER_VERSION),
    )


def _embeddings(g: _Graph, weights: Weights, bert: Bert) -> str:
    words = g.op("Gather", g.const(weights["embeddings.word_embeddings.weight"]), "input_ids")
    types = g.op(
        "Gather", g.const(weights["embeddings.token_type_embeddings.weight"]), "token_type_ids"
    )
    # Positions 0..S-1: the first S rows of the position table, broadcast over the batch.
    length = g.op("Shape", "input_ids", start=1, end=2)
    table = g.const(weights["embeddings.position_embeddings.weight"])
    positions = g.op("Slice", table, g.ints(0), length, g.ints(0))
    summed = g.op("Add", g.op("Add", words, types), positions)
    return g.layer_norm(summed, weights, "embeddings.LayerNorm", bert.eps)


def _layer(g: _Graph, weights: Weights, bert: Bert, x: str, additive: str, prefix: str) -> str:
    attended = g.linear(
        _attention(g, weights, bert, x, additive, prefix),
        weights,
        f"{prefix}.attention.output.dense",
    )
    x = g.layer_norm(
        g.op("Add", attended, x), weights, f"{prefix}.attention.output.LayerNorm", bert.eps
    )
    inner = _gelu(g, g.linear(x, weights, f"{prefix}.intermediate.dense"), bert.activation)
    out = g.linear(inner, weights, f"{prefix}.output.dense")
    return g.layer_norm(g.op("Add", out, x), weights, f"{prefix}.output.LayerNorm", bert.eps)


def _attention(g: _Graph, weights: Weights, bert: Bert, x: str, additive: str, prefix: str) -> str:
    size = bert.hidden // bert.heads
    split = g.ints(0, 0, bert.heads, size)  # [B, S, H] -> [B, S, heads, size]

    def heads(name: str, perm: list[int]) -> str:
        projected = g.linear(x, weights, f"{prefix}.attention.self.{name}")
        return g.op("Transpose", g.op("Reshape", projected, split), perm=perm)

    query = heads("query", [0, 2, 1, 3])  # [B, heads, S, size]
    key = heads("key", [0, 2, 3, 1])  # [B, heads, size, S]
    value = heads("value", [0, 2, 1, 3])
    scores = g.op("Div", g.op("MatMul", query, key), g.scalar(math.sqrt(size)))
    probabilities = g.op("Softmax", g.op("Add", scores, additive), axis=-1)
    context = g.op("Transpose", g.op("MatMul", probabilities, value), perm=[0, 2, 1, 3])
    return g.op("Reshape", context, g.ints(0, 0, bert.hidden))


def _gelu(g: _Graph, x: str, activation: str) -> str:
    half_x = g.op("Mul", x, g.scalar(0.5))
    if activation in _TANH_GELU:
        cubic = g.op("Mul", g.op("Mul", g.op("Mul", x, x), x), g.scalar(0.044715))
        inner = g.op("Mul", g.op("Add", x, cubic), g.scalar(math.sqrt(2.0 / math.pi)))
        return g.op("Mul", half_x, g.op("Add", g.op("Tanh", inner), g.scalar(1.0)))
    erf = g.op("Erf", g.op("Div", x, g.scalar(math.sqrt(2.0))))
    return g.op("Mul", half_x, g.op("Add", erf, g.scalar(1.0)))


def _mean_pool_normalise(g: _Graph, hidden: str, mask: str) -> str:
    token_mask = g.op("Unsqueeze", mask, g.ints(2))  # [B, S, 1]
    axis = g.ints(1)
    summed = g.op("ReduceSum", g.op("Mul", hidden, token_mask), axis, keepdims=0)
    counted = g.op("ReduceSum", token_mask, axis, keepdims=0)
    mean = g.op("Div", summed, g.op("Max", counted, g.scalar(1e-9)))
    norm = g.op("ReduceL2", mean, axes=[1], keepdims=1)
    return g.op("Div", mean, g.op("Max", norm, g.scalar(1e-12)), output="embedding")
