"""Checking an ONNX model against the data it will run on, before onnxruntime opens it: the input it feeds
(name, dtype, rank, fixed dimensions against ``X``) and the output it writes (a real-number tensor whose rows
are ``y``'s row shape, its flattening, or one score per class). :func:`_check_model` returns the plan
:func:`rfbench.nn.predict.predict` runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from rfbench.errors import ValidationError
from rfbench.nn.onnx_file import ModelFile, TensorInfo
from rfbench.nn.predict_settings import PredictSettings

# --- checking the model against the data -------------------------------------------------------------------

@dataclass(frozen=True)
class _Plan:
    input: TensorInfo
    output: TensorInfo
    batch_rows: int          # rows per call
    fixed_batch: bool        # the model's batch dimension is static
    allowed: dict            # output row shape -> mode
    out_dtype: np.dtype


def _axis_name(axes, i) -> str:
    return f"axis {i} ({axes[i]})" if axes and i < len(axes) else f"axis {i}"


def _pick(kind: str, items: Sequence[TensorInfo], name: str | None, where: str, feeds: bool) -> TensorInfo:
    names = [t.name for t in items]
    if name is not None:
        if name not in names:
            raise ValidationError(f"{where}: has no {kind} {name!r}; its {kind}s are {', '.join(map(repr, names))}")
        chosen = items[names.index(name)]
    elif len(items) > 1:
        setting_name = "`input_name`" if feeds else "`output_name`"
        hint = ""
        if not feeds and any(t.kind != "tensor" for t in items):
            hint = (" (a scikit-learn classifier exported with skl2onnx has a label and a probability output: "
                    "the scores are the probability tensor, exported with zipmap=False)")
        raise ValidationError(f"{where}: has {len(items)} {kind}s ({', '.join(map(repr, names))}); name the one "
                              f"{'X feeds' if feeds else 'to write as predictions'} with {setting_name} NAME{hint}")
    else:
        chosen = items[0]
    if feeds and len(items) > 1:
        rest = [n for n in names if n != chosen.name]
        raise ValidationError(f"{where}: {kind}s {', '.join(map(repr, rest))} would get no data: rfbench feeds X to "
                              "one input; give the others initializers or export a one-input model")
    return chosen


def _float_kind(dtype: np.dtype) -> bool:
    return np.issubdtype(dtype, np.floating)


def _check_model(model: ModelFile, x_shape: tuple, x_dtype: np.dtype, axes, settings: PredictSettings,
                 target_shape: tuple | None, target_kind: str | None, n_classes: int | None) -> _Plan:
    where = f"model {model.path}"
    inp = _pick("input", model.inputs, settings.input_name, where, feeds=True)
    out = _pick("output", model.outputs, settings.output_name, where, feeds=False)
    for role, t in (("input", inp), ("output", out)):
        if t.kind != "tensor":
            fix = ""
            if t.kind in ("sequence", "map") and role == "output":
                fix = ("; a scikit-learn classifier's probabilities are a ZipMap sequence of maps by default: "
                       "export with zipmap=False (skl2onnx: options={id(model): {'zipmap': False}}) to get a "
                       "(N, classes) tensor, and name it with `output_name`")
            raise ValidationError(f"{where}: {role} {t.name!r} is a {t.kind}, not a tensor{fix}")
    if not x_dtype.isnative and x_dtype.kind in "fiuc":  # ONNX tensors have no byte order: no model takes it
        raise ValidationError(f"{where}: X is {x_dtype.newbyteorder('=').name} stored big-endian ({x_dtype.str}), "
                              "which no ONNX model takes and rfbench windows never writes; write X again with "
                              "rfbench windows (or numpy.save of X.astype(X.dtype.newbyteorder('=')))")
    if inp.dtype != str(x_dtype):
        raise ValidationError(f"{where}: input {inp.name!r} is {inp.type_name} but X is {x_dtype}; export the model "
                              f"with a {x_dtype} input")
    fixed_batch = False
    batch_rows = settings.batch_size
    if inp.dims is not None:
        if len(inp.dims) != len(x_shape):
            fix = ""
            if len(inp.dims) == 2 and len(x_shape) > 2 and not settings.flatten:
                fix = (f"; a model of flat feature vectors (scikit-learn's, through skl2onnx) reads each row "
                       f"flattened to {int(np.prod(x_shape[1:], dtype=np.int64))} values: pass `flatten`")
            raise ValidationError(f"{where}: input {inp.name!r} has rank {len(inp.dims)} {inp.shape_text()} but X "
                                  f"has rank {len(x_shape)} {list(x_shape)}{fix}")
        for i, d in enumerate(inp.dims):
            if not isinstance(d, int):
                continue
            if d <= 0:
                raise ValidationError(f"{where}: input {inp.name!r} declares dimension {d} on "
                                      f"{_axis_name(axes, i)} {inp.shape_text()}; a fixed dimension must be >= 1 "
                                      "(a dynamic one is named or left unset)")
            if i == 0:
                if d != settings.batch_size:
                    raise ValidationError(f"{where}: input {inp.name!r} has a fixed batch of {d} rows "
                                          f"{inp.shape_text()}; run it with `batch_size` {d}, or export it "
                                          "with a dynamic batch axis (torch.onnx.export: dynamic_shapes or "
                                          "dynamic_axes on axis 0)")
                fixed_batch = True
            elif d != x_shape[i]:
                raise ValidationError(f"{where}: input {inp.name!r} expects {d} on {_axis_name(axes, i)} "
                                      f"{inp.shape_text()} but X has {x_shape[i]} {list(x_shape)}")
    if out.dtype is None or out.dtype in ("bool", "complex64", "complex128"):
        raise ValidationError(f"{where}: output {out.name!r} is {out.type_name}; predictions must be real numbers")
    out_dtype = np.dtype(out.dtype)

    allowed: dict = {}
    if n_classes is not None:
        allowed[(n_classes,)] = "scores"
    if target_shape is not None:
        allowed.setdefault(tuple(target_shape), "target")
        allowed.setdefault((int(np.prod(target_shape, dtype=np.int64)),), "flattened")
    if out.dims is not None:
        for i, d in enumerate(out.dims):
            if isinstance(d, int) and d <= 0:
                raise ValidationError(f"{where}: output {out.name!r} declares dimension {d} on axis {i} "
                                      f"{out.shape_text()}; a fixed dimension must be >= 1")
        if not out.dims:
            raise ValidationError(f"{where}: output {out.name!r} is a scalar; predictions need one row per window")
        if allowed and not any(_fits(out.dims[1:], shape) for shape in allowed):
            raise ValidationError(f"{where}: output {out.name!r} has rows of shape {_row_text(out.dims[1:])}, "
                                  f"expected {_expected_text(allowed, target_kind)}")
    for shape, mode in list(allowed.items()):
        if not _dtype_fits(mode, target_kind, out_dtype):
            del allowed[shape]
    if target_shape is not None or n_classes is not None:
        if not allowed or (out.dims is not None and not any(_fits(out.dims[1:], s) for s in allowed)):
            want = "integer class labels or float scores" if target_kind == "label" else "floating-point joints"
            raise ValidationError(f"{where}: output {out.name!r} is {out.type_name}; expected {want}")
    return _Plan(inp, out, batch_rows, fixed_batch, allowed, out_dtype)


def _dtype_fits(mode: str, target_kind: str | None, dtype: np.dtype) -> bool:
    if mode == "scores" or target_kind == "pose":
        return _float_kind(dtype)
    if target_kind == "label":
        return np.issubdtype(dtype, np.integer)
    return True


def _fits(dims: Sequence, shape: tuple) -> bool:
    return len(dims) == len(shape) and all(not isinstance(d, int) or d == s for d, s in zip(dims, shape))


def _row_text(dims) -> str:
    inner = ", ".join("?" if not isinstance(d, int) else str(d) for d in dims)
    return "(" + inner + ("," if len(dims) == 1 else "") + ")"


def _expected_text(allowed: dict, target_kind: str | None) -> str:
    words = {"target": "y's row shape", "flattened": "its flattening", "scores": "the class count"}
    return ", ".join(f"{_row_text(s)} ({words[m]})" for s, m in allowed.items())
