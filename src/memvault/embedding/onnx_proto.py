"""The few ONNX messages the encoder's graph is written with, declared on protobuf alone.

The ``onnx`` package (27 MB with its test data) would be imported for five message types and
their field numbers; ONNX Runtime already depends on protobuf, so the messages are declared here
with the field numbers of ``onnx.proto`` (IR 8) and serialised by protobuf itself. Only what
:mod:`memvault.embedding.bert_graph` writes is declared: a model, its graph, nodes with
int/float/ints attributes, tensors as raw little-endian bytes, and inputs/outputs with symbolic
or fixed dimensions. ``tests/test_encoder.py`` checks a built model with ``onnx``'s own checker
(in the dev extras) and ONNX Runtime loads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

# TensorProto.DataType and AttributeProto.AttributeType values of onnx.proto.
FLOAT, INT64 = 1, 7
_ATTRIBUTE_FLOAT, _ATTRIBUTE_INT, _ATTRIBUTE_INTS = 1, 2, 7
_DTYPES = {np.dtype(np.float32): FLOAT, np.dtype(np.int64): INT64}

_OPTIONAL = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
_REPEATED = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
_T = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "int64": _T.TYPE_INT64,
    "int32": _T.TYPE_INT32,
    "float": _T.TYPE_FLOAT,
    "string": _T.TYPE_STRING,
    "bytes": _T.TYPE_BYTES,
}
# message → (field, number, type, repeated); a type that is not a scalar names a message.
_MESSAGES: dict[str, list[tuple[str, int, str, bool]]] = {
    "OperatorSetIdProto": [("domain", 1, "string", False), ("version", 2, "int64", False)],
    "TensorProto": [
        ("dims", 1, "int64", True),
        ("data_type", 2, "int32", False),
        ("name", 8, "string", False),
        ("raw_data", 9, "bytes", False),
    ],
    "AttributeProto": [
        ("name", 1, "string", False),
        ("f", 2, "float", False),
        ("i", 3, "int64", False),
        ("ints", 8, "int64", True),
        ("type", 20, "int32", False),
    ],
    "NodeProto": [
        ("input", 1, "string", True),
        ("output", 2, "string", True),
        ("name", 3, "string", False),
        ("op_type", 4, "string", False),
        ("attribute", 5, "AttributeProto", True),
        ("domain", 7, "string", False),
    ],
    "Dimension": [("dim_value", 1, "int64", False), ("dim_param", 2, "string", False)],
    "TensorShapeProto": [("dim", 1, "Dimension", True)],
    "TensorTypeProto": [("elem_type", 1, "int32", False), ("shape", 2, "TensorShapeProto", False)],
    "TypeProto": [("tensor_type", 1, "TensorTypeProto", False)],
    "ValueInfoProto": [("name", 1, "string", False), ("type", 2, "TypeProto", False)],
    "GraphProto": [
        ("node", 1, "NodeProto", True),
        ("name", 2, "string", False),
        ("initializer", 5, "TensorProto", True),
        ("input", 11, "ValueInfoProto", True),
        ("output", 12, "ValueInfoProto", True),
    ],
    "ModelProto": [
        ("ir_version", 1, "int64", False),
        ("producer_name", 2, "string", False),
        ("producer_version", 3, "string", False),
        ("graph", 7, "GraphProto", False),
        ("opset_import", 8, "OperatorSetIdProto", True),
    ],
}
_PACKAGE = "memvault.onnx_subset"


def _classes() -> dict[str, Any]:
    file = descriptor_pb2.FileDescriptorProto(
        name="memvault_onnx_subset.proto", package=_PACKAGE, syntax="proto2"
    )
    for message, fields in _MESSAGES.items():
        described = file.message_type.add(name=message)
        for name, number, kind, repeated in fields:
            field = described.field.add(
                name=name, number=number, label=_REPEATED if repeated else _OPTIONAL
            )
            if kind in _SCALARS:
                field.type = _SCALARS[kind]
            else:
                field.type = _T.TYPE_MESSAGE
                field.type_name = f".{_PACKAGE}.{kind}"
    # A pool of our own: the names never meet the onnx package's, should both be imported.
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
        for name in _MESSAGES
    }


_CLASS = _classes()


def tensor(array: npt.NDArray[Any], name: str) -> Any:
    """A TensorProto holding ``array`` (float32 or int64) as raw little-endian bytes."""
    data = np.ascontiguousarray(array)
    little = data.astype(data.dtype.newbyteorder("<"), copy=False)
    return _CLASS["TensorProto"](
        name=name, dims=list(data.shape), data_type=_DTYPES[data.dtype], raw_data=little.tobytes()
    )


def node(op_type: str, inputs: Sequence[str], outputs: Sequence[str], **attributes: Any) -> Any:
    """A NodeProto of the default domain; attributes are ints, floats or lists of ints."""
    made = _CLASS["NodeProto"](op_type=op_type, input=list(inputs), output=list(outputs))
    for name, value in sorted(attributes.items()):
        made.attribute.append(_attribute(name, value))
    return made


def _attribute(name: str, value: Any) -> Any:
    attribute = _CLASS["AttributeProto"]
    if isinstance(value, bool | int):
        return attribute(name=name, i=int(value), type=_ATTRIBUTE_INT)
    if isinstance(value, float):
        return attribute(name=name, f=value, type=_ATTRIBUTE_FLOAT)
    if isinstance(value, list | tuple) and all(isinstance(v, int) for v in value):
        return attribute(name=name, ints=list(value), type=_ATTRIBUTE_INTS)
    raise TypeError(f"attribute {name!r}: {value!r} is not an int, a float or a list of ints")


def value_info(name: str, elem_type: int, shape: Sequence[str | int]) -> Any:
    """An input or output: its element type and dimensions (a name is a symbolic axis)."""
    dims = [
        _CLASS["Dimension"](dim_param=d) if isinstance(d, str) else _CLASS["Dimension"](dim_value=d)
        for d in shape
    ]
    tensor_type = _CLASS["TensorTypeProto"](
        elem_type=elem_type, shape=_CLASS["TensorShapeProto"](dim=dims)
    )
    return _CLASS["ValueInfoProto"](name=name, type=_CLASS["TypeProto"](tensor_type=tensor_type))


def model(
    nodes: Sequence[Any],
    name: str,
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    initializers: Sequence[Any],
    *,
    opset: int,
    ir_version: int,
    producer_name: str,
    producer_version: str,
) -> Any:
    """A ModelProto of one graph on the default operator set at ``opset``."""
    graph = _CLASS["GraphProto"](
        node=list(nodes),
        name=name,
        input=list(inputs),
        output=list(outputs),
        initializer=list(initializers),
    )
    return _CLASS["ModelProto"](
        ir_version=ir_version,
        producer_name=producer_name,
        producer_version=producer_version,
        graph=graph,
        opset_import=[_CLASS["OperatorSetIdProto"](domain="", version=opset)],
    )
