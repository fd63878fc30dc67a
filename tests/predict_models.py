"""Helpers for the predict tests: windows folders written by hand in the format of ``rfbench windows``, and
small ONNX models built with the ``onnx`` package's helper API (no deep-learning framework)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

MMFI_AXES = ["window", "frame", "feature", "antenna", "subcarrier", "packet"]
ROW = (1, 2, 3, 8, 5)  # a small MM-Fi-like window: 1 frame, amplitude/phase, 3 antennas, 8 subcarriers, 5 packets
JOINTS = (17, 3)
OPSET = 17


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_windows(folder: Path, x: np.ndarray, y: np.ndarray, *, task: str = "pose", labels=None,
                  axes=None) -> Path:
    """X.npy, y.npy and index.json (rfbench.windows/1) as ``rfbench windows`` writes them."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "X.npy", np.asarray(x), allow_pickle=False)
    np.save(folder / "y.npy", np.asarray(y), allow_pickle=False)
    axes = axes if axes is not None else (MMFI_AXES if x.ndim == 6 else [f"axis{i}" for i in range(x.ndim)])
    index = {
        "schema": "rfbench.windows/1",
        "rfbench_version": "0.1.0",
        "split": {"path": "../split.json", "sha256": "a" * 64},
        "manifest": {"path": "../manifest.json", "sha256": "b" * 64},
        "dataset": "mmfi" if task == "pose" else "widar",
        "side": "test",
        "task": task,
        "settings": {"length": 1, "stride": 1, "target": "last"},
        "x": {"file": "X.npy", "dtype": str(x.dtype), "shape": list(x.shape), "axes": list(axes),
              "bytes": (folder / "X.npy").stat().st_size, "sha256": _sha(folder / "X.npy")},
        "y": {"file": "y.npy", "dtype": str(y.dtype), "shape": list(y.shape),
              "kind": "pose" if task == "pose" else "label",
              "bytes": (folder / "y.npy").stat().st_size, "sha256": _sha(folder / "y.npy")},
        "labels": None if labels is None else {"names": list(labels), "source": "manifest",
                                               "sha256": hashlib.sha256("\n".join(labels).encode()).hexdigest()},
        "rows": [{"id": f"S01/A01/rec{i // 4}", "start": i % 4, "stop": i % 4 + 1} for i in range(x.shape[0])],
        "excluded": [],
        "dropped": 0,
        "files": [],
    }
    (folder / "index.json").write_text(json.dumps(index, indent=2), encoding="utf-8")
    return folder


def pose_windows(folder: Path, n: int = 10, seed: int = 0) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, *ROW)).astype(np.float32)
    y = rng.standard_normal((n, *JOINTS)).astype(np.float32)
    return write_windows(folder, x, y), x


def gesture_windows(folder: Path, n: int = 9, classes: int = 4, seed: int = 0) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, *ROW)).astype(np.float32)
    y = rng.integers(0, classes, n).astype(np.int64)
    names = [f"gesture-{i}" for i in range(classes)]
    return write_windows(folder, x, y, task="gesture", labels=names), x


def model_bytes(nodes, inputs, outputs, initializers=(), *, opsets=None, functions=(), ir_version=8) -> bytes:
    graph = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=opsets or [helper.make_opsetid("", OPSET)],
                              functions=list(functions))
    model.ir_version = ir_version
    return model.SerializeToString()


def tensor(name, dims, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, dims)


def linear(weight: np.ndarray, bias: np.ndarray, row=ROW, *, input_dims=None, out_rows=None,
           input_name="x", output_name="y", elem=TensorProto.FLOAT) -> bytes:
    """y = flatten(x) @ weight + bias, reshaped to ``out_rows`` (default: flat)."""
    f = int(np.prod(row))
    out_rows = tuple(out_rows) if out_rows is not None else (weight.shape[1],)
    inits = [numpy_helper.from_array(weight.astype(np.float32), "W"),
             numpy_helper.from_array(bias.astype(np.float32), "b"),
             numpy_helper.from_array(np.array([-1, f], np.int64), "flat_shape"),
             numpy_helper.from_array(np.array([-1, *out_rows], np.int64), "out_shape")]
    nodes = [helper.make_node("Reshape", [input_name, "flat_shape"], ["flat"]),
             helper.make_node("MatMul", ["flat", "W"], ["mm"]),
             helper.make_node("Add", ["mm", "b"], ["lin"]),
             helper.make_node("Reshape", ["lin", "out_shape"], [output_name])]
    dims = input_dims if input_dims is not None else ["N", *row]
    return model_bytes(nodes, [tensor(input_name, dims, elem)], [tensor(output_name, ["N", *out_rows])], inits)


def label_table(y: np.ndarray, classes: int, row=ROW) -> bytes:
    """A model that never reads its input: one-hot scores of the labels ``y``, cut to its batch's row count (a
    row's answer is its place in the batch). Run over the rows of ``y`` in one batch, it scores 1.0."""
    table = np.zeros((len(y), classes), np.float32)
    table[np.arange(len(y)), y] = 1.0
    inits = [numpy_helper.from_array(table, "table"), numpy_helper.from_array(np.array([0], np.int64), "zero")]
    nodes = [helper.make_node("Shape", ["x"], ["n"], end=1),
             helper.make_node("Slice", ["table", "zero", "n", "zero"], ["scores"])]
    return model_bytes(nodes, [tensor("x", ["N", *row])], [tensor("scores", ["N", classes])], inits)


def linear_weights(row=ROW, outputs=51, seed=1):
    rng = np.random.default_rng(seed)
    f = int(np.prod(row))
    return (rng.standard_normal((f, outputs)) / np.sqrt(f)).astype(np.float32), \
        rng.standard_normal(outputs).astype(np.float32)


def conv_weights(seed=2):
    rng = np.random.default_rng(seed)
    return {"w": (rng.standard_normal((4, 2, 3, 3)) * 0.3).astype(np.float32),
            "b": rng.standard_normal(4).astype(np.float32),
            "head": (rng.standard_normal((4, 51)) * 0.5).astype(np.float32),
            "head_b": rng.standard_normal(51).astype(np.float32)}


def conv(p: dict, row=ROW) -> bytes:
    """A small conv over the window: (N, 1, 2, 3, 8, 5) → (N, 2 features, 3·8 antenna×subcarrier, 5 packets)
    → 3×3 conv (4 channels, padding 1) → ReLU → mean over height and width → linear head → (N, 17, 3)."""
    frames, feats, ant, sub, pk = row
    inits = [numpy_helper.from_array(np.array([-1, frames * feats, ant * sub, pk], np.int64), "img_shape"),
             numpy_helper.from_array(p["w"], "w"), numpy_helper.from_array(p["b"], "b"),
             numpy_helper.from_array(p["head"], "head"), numpy_helper.from_array(p["head_b"], "head_b"),
             numpy_helper.from_array(np.array([-1, *JOINTS], np.int64), "out_shape")]
    nodes = [helper.make_node("Reshape", ["x", "img_shape"], ["img"]),
             helper.make_node("Conv", ["img", "w", "b"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("ReduceMean", ["r"], ["pooled"], axes=[2, 3], keepdims=0),
             helper.make_node("MatMul", ["pooled", "head"], ["h"]),
             helper.make_node("Add", ["h", "head_b"], ["flat"]),
             helper.make_node("Reshape", ["flat", "out_shape"], ["y"])]
    return model_bytes(nodes, [tensor("x", ["N", *row])], [tensor("y", ["N", *JOINTS])], inits)


def conv_numpy(p: dict, x: np.ndarray) -> np.ndarray:
    """The same network in NumPy, with rfbench's own naive float64 convolution (rfbench.nn.conv.conv2d)."""
    from rfbench.nn.conv import conv2d

    n, frames, feats, ant, sub, pk = x.shape
    img = x.reshape(n, frames * feats, ant * sub, pk).astype(np.float64)
    c = conv2d(img, p["w"].astype(np.float64), p["b"].astype(np.float64), padding=1)
    pooled = np.maximum(c, 0.0).mean(axis=(2, 3))
    return (pooled @ p["head"].astype(np.float64) + p["head_b"]).reshape(n, *JOINTS)


def save(path: Path, data: bytes) -> Path:
    path = Path(path)
    path.write_bytes(data)
    return path
