"""GGUF files: load(path) -> name -> QTensor or array; write(path, tensors, metadata).

load() memory-maps the file read-only (gguf.GGUFReader, mode "r"): nothing is read until a
kernel or a copy touches it, and the source file is never modified. Shapes are in torch order
[N, K] (gguf-py reports ggml's [K, N]); quantized tensors become QTensors of the row whose GGUF
type matches, float tensors numpy arrays (bf16 as uint16 bit patterns, as elsewhere in qkgen).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import FormatError, QKGenValueError
from ..formats import QTensor, get, rows

# ggml float types and the numpy dtype their data has (bf16: its 16-bit patterns).
_FLOAT_TYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}


def supported_types() -> tuple[str, ...]:
    """GGUF type names load() takes: the float types and every registered row with a GGUF type."""
    import gguf

    quant = [gguf.GGMLQuantizationType(r.gguf_type).name for r in rows() if r.gguf_type is not None]
    return (*_FLOAT_TYPES, *quant)


class GGUFTensors(dict):
    """An ordered mapping name -> QTensor | numpy array, plus the file's metadata and path."""

    def __init__(self, items, metadata: dict, path: str):
        super().__init__(items)
        self.metadata = metadata
        self.path = path


def _check_path(path: Any) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise QKGenValueError(f"path: {path!r}; allowed: a path (str or os.PathLike) to a .gguf file")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise QKGenValueError(f"path: {path!r} is not a file; allowed: an existing .gguf file")
    return path


def _field_value(field) -> Any:
    try:
        return field.contents()
    except Exception:  # a value type this gguf-py cannot decode: keep its raw parts
        return [np.asarray(field.parts[i]) for i in field.data]


def read_metadata(reader) -> dict:
    return {k: _field_value(f) for k, f in reader.fields.items() if not k.startswith("GGUF.")}


def _tensor(t, path: str) -> QTensor | np.ndarray:
    import gguf

    gtype = gguf.GGMLQuantizationType(int(t.tensor_type))
    shape = tuple(int(s) for s in reversed(list(t.shape)))  # ggml [K, N] -> torch [N, K]
    if gtype.name in _FLOAT_TYPES:
        return np.asarray(t.data).view(_FLOAT_TYPES[gtype.name]).reshape(shape)
    try:
        fmt = get(int(gtype))
    except FormatError:
        raise QKGenValueError(f"tensor {t.name!r} in {path}: GGUF type {gtype.name} is not supported; allowed: "
                              f"{', '.join(supported_types())}") from None  # fmt: skip
    return QTensor.from_gguf(t.data, fmt, shape)


def load(path: Any) -> GGUFTensors:
    """Every tensor of a GGUF file, in file order, memory-mapped read-only. `.metadata` holds the
    key/value pairs (GGUF.* header fields left out). An unsupported tensor type raises
    QKGenValueError naming the tensor, its type and what is supported, before anything is used."""
    import gguf

    path = _check_path(path)
    try:
        reader = gguf.GGUFReader(path, "r")
    except (ValueError, OSError, EOFError) as e:
        raise QKGenValueError(f"path: {path!r} is not a readable GGUF file ({type(e).__name__}: {e})") from None
    tensors = [(t.name, _tensor(t, path)) for t in reader.tensors]
    return GGUFTensors(tensors, read_metadata(reader), path)


# ---- writing ----


def _value_type(key: str, value: Any):
    import gguf

    vt = gguf.GGUFValueType
    if isinstance(value, bool):
        return vt.BOOL, None
    if isinstance(value, (int, np.integer)):
        return (vt.UINT32 if 0 <= value < 2**32 else vt.INT64), None
    if isinstance(value, (float, np.floating)):
        return vt.FLOAT32, None
    if isinstance(value, str):
        return vt.STRING, None
    if isinstance(value, (list, tuple)) and value:
        return vt.ARRAY, _value_type(key, value[0])[0]
    raise QKGenValueError(f"metadata[{key!r}]: {type(value).__name__} {value!r}; allowed: bool, int, float, str, "
                          "a non-empty list of one of those, or a (value, gguf.GGUFValueType) pair")  # fmt: skip


def _tensor_payload(name: str, t: Any):
    """(numpy data, raw_dtype or None) that GGUFWriter.add_tensor takes for one tensor."""
    import gguf

    if isinstance(t, QTensor):
        if t.format.gguf_type is None:
            raise QKGenValueError(f"tensors[{name!r}]: {t.describe()} has no GGUF type; allowed: GGUF formats "
                                  f"({', '.join(supported_types()[len(_FLOAT_TYPES):])}) or float arrays")  # fmt: skip
        if t.cols % t.format.block:
            raise QKGenValueError(f"tensors[{name!r}]: {t.describe()}: rows of {t.cols} elements; GGUF stores whole "
                                  f"blocks a row: allowed: a last dimension that is a multiple of {t.format.block}")
        return np.ascontiguousarray(t.to_host().to_gguf()), gguf.GGMLQuantizationType(t.format.gguf_type)
    a = np.asarray(t)
    if a.dtype not in (np.float32, np.float16) or a.ndim == 0:
        raise QKGenValueError(f"tensors[{name!r}]: {a.dtype} array of shape {a.shape}; allowed: QTensor, or float32"
                              " / float16 arrays of at least one dimension")  # fmt: skip
    return np.ascontiguousarray(a), None


def write(path: Any, tensors: Mapping[str, Any], metadata: Mapping[str, Any] | None = None) -> None:
    """Write a GGUF file through gguf.GGUFWriter: tensors (name -> QTensor of a GGUF format, or a
    float32/float16 array, shapes in torch order) and metadata (key -> value, or (value,
    gguf.GGUFValueType)); "general.architecture" defaults to "llama". Everything is checked before
    the file is created."""
    import gguf

    if not isinstance(path, (str, os.PathLike)):
        raise QKGenValueError(f"path: {path!r}; allowed: a path (str or os.PathLike)")
    if not isinstance(tensors, Mapping) or not all(isinstance(k, str) for k in tensors):
        raise QKGenValueError("tensors: allowed: a mapping from str names to QTensors or float arrays")
    metadata = dict(metadata or {})
    arch = metadata.pop("general.architecture", "llama")
    arch = arch[0] if isinstance(arch, tuple) else arch
    kv = []
    for key, value in metadata.items():
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], gguf.GGUFValueType):
            value, vtype = value
            sub = _value_type(key, value[0])[0] if vtype == gguf.GGUFValueType.ARRAY else None
        else:
            vtype, sub = _value_type(key, value)
        kv.append((key, value, vtype, sub))
    payloads = [(name, *_tensor_payload(name, t)) for name, t in tensors.items()]
    w = gguf.GGUFWriter(os.fspath(path), arch)
    for key, value, vtype, sub in kv:
        w.add_key_value(key, value, vtype, sub_type=sub)
    for name, data, raw in payloads:
        w.add_tensor(name, data, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
