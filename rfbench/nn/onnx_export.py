"""The demo's two models as ONNX files, built with the ``onnx`` package's helper API (no deep-learning framework).

- :func:`ridge_model`: ridge regression on standardised features — ``((f - mean) / scale) @ W + target_mean``
  (the demo's pose model, :func:`rfbench.demo.ridge_fit`);
- :func:`nearest_centroid_model`: nearest class centroid with Gaussian scores — ``softmax(-d² / (2F))`` over
  the classes present in training, 0 for the others (the demo's gesture model,
  :func:`rfbench.demo.nearest_centroid_scores`).

Both read a window ``x`` of shape ``(N, *row_shape)`` (float32, as ``X.npy`` stores it) and compute their
features from it inside the graph with a :class:`FeatureMap`: pick one index along some axes (``take``),
average over others (``mean_axes``), flatten in C order. The arithmetic runs in float64 by default
(``compute="float64"``: the input is cast first), like the NumPy originals, so the two agree to about 1e-12;
``"float32"`` keeps everything in single precision. :func:`fit_ridge` and :func:`fit_nearest_centroid` return
the fitted parameters with the demo's exact formulas.

The ``onnx`` package is needed (``pip install 'rfbench[onnx]'``); the models use opset 17 and IR version 8.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from rfbench.errors import MissingDependencyError, ValidationError

__all__ = ["OPSET", "IR_VERSION", "FeatureMap", "RidgeParameters", "CentroidParameters", "fit_ridge",
           "fit_nearest_centroid", "ridge_model", "nearest_centroid_model"]

OPSET = 17
IR_VERSION = 8
_DTYPES = {"float32": np.float32, "float64": np.float64}


def _onnx():
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError:
        raise MissingDependencyError("building ONNX models needs the onnx package, which is not installed: "
                                     "pip install 'rfbench[onnx]'") from None
    return onnx, helper, numpy_helper


@dataclass(frozen=True)
class FeatureMap:
    """How a model turns one window ``x[i]`` (shape ``row_shape``) into its feature vector.

    ``take`` maps row axes (0-based, without the batch axis) to the single index kept along them; then the
    ``mean_axes`` (row axes, same numbering) are averaged; what is left is flattened in C order.
    For an MM-Fi window ``(frame, feature[amp, phase], antenna, subcarrier, packet)`` of one frame,
    ``FeatureMap(take={0: 0, 1: 0}, mean_axes=(4,))`` gives the demo's mean amplitude per antenna and
    subcarrier (3 × 114 = 342 features).
    """

    row_shape: tuple
    take: Mapping[int, int] = field(default_factory=dict)
    mean_axes: tuple = ()

    def __post_init__(self):
        shape = tuple(int(d) for d in self.row_shape)
        if any(d < 1 for d in shape):
            raise ValidationError(f"row_shape must have every dimension >= 1, got {shape}")
        take = {int(a): int(i) for a, i in dict(self.take).items()}
        means = tuple(sorted(int(a) for a in self.mean_axes))
        for a, i in take.items():
            if not 0 <= a < len(shape) or not 0 <= i < shape[a]:
                raise ValidationError(f"take {a}: {i} is outside the row shape {shape}")
        if len(set(means)) != len(means) or any(not 0 <= a < len(shape) or a in take for a in means):
            raise ValidationError(f"mean_axes {means} must be distinct row axes of {shape} not in take")
        object.__setattr__(self, "row_shape", shape)
        object.__setattr__(self, "take", take)
        object.__setattr__(self, "mean_axes", means)

    @property
    def n_features(self) -> int:
        kept = [d for a, d in enumerate(self.row_shape) if a not in self.take and a not in self.mean_axes]
        return int(np.prod(kept, dtype=np.int64))

    def apply(self, x: np.ndarray) -> np.ndarray:
        """The same features with NumPy: ``(N, *row_shape)`` → ``(N, n_features)`` float64."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape[1:] != self.row_shape:
            raise ValidationError(f"x rows have shape {x.shape[1:]}, expected {self.row_shape}")
        index = tuple([slice(None)] + [self.take.get(a, slice(None)) for a in range(len(self.row_shape))])
        x = x[index]
        if self.mean_axes:
            x = x.mean(axis=tuple(1 + self._after_take(a) for a in self.mean_axes))
        return x.reshape(x.shape[0], -1)

    def _after_take(self, axis: int) -> int:
        return axis - sum(1 for a in self.take if a < axis)

    def _nodes(self, helper, numpy_helper, src: str, inits: list) -> tuple[list, str]:
        nodes = []
        name = src
        for a in sorted(self.take, reverse=True):  # from the last axis, so earlier numbers stay valid
            idx = f"take_{a}"
            inits.append(numpy_helper.from_array(np.array(self.take[a], dtype=np.int64), idx))
            nodes.append(helper.make_node("Gather", [name, idx], [f"{name}_t{a}"], axis=1 + a))
            name = f"{name}_t{a}"
        if self.mean_axes:
            axes = [1 + self._after_take(a) for a in self.mean_axes]
            nodes.append(helper.make_node("ReduceMean", [name], ["pooled"], axes=axes, keepdims=0))
            name = "pooled"
        nodes.append(helper.make_node("Flatten", [name], ["features"], axis=1))
        return nodes, "features"


@dataclass(frozen=True)
class RidgeParameters:
    """A fitted ridge regression: ``((f - mean) / scale) @ weights + target_mean``."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    target_mean: np.ndarray


@dataclass(frozen=True)
class CentroidParameters:
    """A fitted nearest-centroid classifier: standardisation, one centroid per class present in training."""

    mean: np.ndarray
    scale: np.ndarray
    centroids: np.ndarray  # (present classes, features), standardised
    classes: np.ndarray    # the class index of each centroid
    n_classes: int


def fit_ridge(x_train: np.ndarray, y_train: np.ndarray, penalty: float) -> RidgeParameters:
    """The parameters :func:`rfbench.demo.ridge_fit` fits: features standardised with the training mean and
    standard deviation (constant features scale 1), targets centred, ``(XᵀX + penalty·I) W = XᵀY``."""
    x = np.asarray(x_train, dtype=np.float64)
    y = np.asarray(y_train, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0] or x.shape[0] < 1:
        raise ValidationError(f"fit_ridge needs (rows, features) and (rows, targets) with the same rows >= 1, got "
                              f"{x.shape} and {y.shape}")
    mu = x.mean(axis=0)
    sd = x.std(axis=0)
    sd[sd == 0] = 1.0
    xs = (x - mu) / sd
    y_mu = y.mean(axis=0)
    w = np.linalg.solve(xs.T @ xs + penalty * np.eye(xs.shape[1]), xs.T @ (y - y_mu))
    return RidgeParameters(mu, sd, w, y_mu)


def fit_nearest_centroid(x_train: np.ndarray, y_train: np.ndarray, n_classes: int) -> CentroidParameters:
    """The parameters behind :func:`rfbench.demo.nearest_centroid_scores`: training standardisation and the
    mean standardised row of each class present."""
    x = np.asarray(x_train, dtype=np.float64)
    y = np.asarray(y_train, dtype=np.int64)
    if x.ndim != 2 or y.shape != (x.shape[0],) or x.shape[0] < 1:
        raise ValidationError(f"fit_nearest_centroid needs (rows, features) and (rows,) labels, got {x.shape} and "
                              f"{y.shape}")
    if y.min() < 0 or y.max() >= n_classes:
        raise ValidationError(f"labels must lie in 0..{n_classes - 1}")
    mu = x.mean(axis=0)
    sd = x.std(axis=0)
    sd[sd == 0] = 1.0
    a = (x - mu) / sd
    present = np.unique(y)
    centroids = np.stack([a[y == c].mean(axis=0) for c in present])
    return CentroidParameters(mu, sd, centroids, present, int(n_classes))


def ridge_apply(params: RidgeParameters, features: np.ndarray) -> np.ndarray:
    """What the ridge model computes, in NumPy (float64): ``((f - mean) / scale) @ weights + target_mean``."""
    return ((np.asarray(features, dtype=np.float64) - params.mean) / params.scale) @ params.weights + params.target_mean


def centroid_scores(params: CentroidParameters, features: np.ndarray) -> np.ndarray:
    """What the nearest-centroid model computes, in NumPy: class scores ``(rows, n_classes)``, the softmax of
    ``-d_c² / (2·F)`` over the classes present in training (d_c the distance to class c's centroid, F the number
    of features: a fixed temperature); classes absent from training score 0. The arg-max is the nearest
    centroid."""
    b = (np.asarray(features, dtype=np.float64) - params.mean) / params.scale
    d2 = ((b[:, None, :] - params.centroids[None]) ** 2).sum(axis=2)
    logits = -d2 / (2.0 * params.centroids.shape[1])
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    scores = np.zeros((b.shape[0], params.n_classes))
    scores[:, params.classes] = p
    return scores


def _check_features(features: FeatureMap, n: int, what: str) -> None:
    if not isinstance(features, FeatureMap):
        raise ValidationError(f"features must be a FeatureMap, got {type(features).__name__}")
    if features.n_features != n:
        raise ValidationError(f"{what} has {n} features but the feature map gives {features.n_features}")


def _model(helper, nodes, inits, features: FeatureMap, out_dims, out_dtype, input_name, output_name, name, onnx):
    x = helper.make_tensor_value_info(input_name, onnx.TensorProto.FLOAT, ["N", *features.row_shape])
    y = helper.make_tensor_value_info(output_name, helper.np_dtype_to_tensor_dtype(np.dtype(out_dtype)),
                                      ["N", *out_dims])
    graph = helper.make_graph(nodes, name, [x], [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="rfbench")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _front(helper, numpy_helper, features: FeatureMap, compute: str, input_name: str, inits: list):
    if compute not in _DTYPES:
        raise ValidationError(f"compute must be float32 or float64, got {compute!r}")
    nodes = []
    src = input_name
    if compute == "float64":
        nodes.append(helper.make_node("Cast", [input_name], ["x64"], to=helper.np_dtype_to_tensor_dtype(
            np.dtype(np.float64))))
        src = "x64"
    more, feats = features._nodes(helper, numpy_helper, src, inits)
    return nodes + more, feats


def ridge_model(params: RidgeParameters, features: FeatureMap, *, target_shape: Sequence[int] | None = None,
                compute: str = "float64", input_name: str = "x", output_name: str = "y") -> bytes:
    """An ONNX model of a fitted ridge regression, as serialised bytes (write them to ``model.onnx``).

    Parameters
    ----------
    params : RidgeParameters
        From :func:`fit_ridge`.
    features : FeatureMap
        How the features come from a window.
    target_shape : sequence of int, optional
        Reshape each output row to this (e.g. ``(17, 3)`` joints); default: flat ``(targets,)``.
    compute : {"float64", "float32"}
        Arithmetic (and output) precision.
    input_name, output_name : str
        Graph input and output names.
    """
    onnx, helper, numpy_helper = _onnx()
    w = np.asarray(params.weights, dtype=np.float64)
    if w.ndim != 2:
        raise ValidationError(f"ridge weights must be (features, targets), got {w.shape}")
    _check_features(features, w.shape[0], "the ridge model")
    dt = _DTYPES.get(compute, np.float64)
    inits: list = []
    nodes, feats = _front(helper, numpy_helper, features, compute, input_name, inits)
    for name, value in (("mean", params.mean), ("scale", params.scale), ("weights", w),
                        ("target_mean", params.target_mean)):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=dt), name))
    nodes += [helper.make_node("Sub", [feats, "mean"], ["centred"]),
              helper.make_node("Div", ["centred", "scale"], ["standardised"]),
              helper.make_node("MatMul", ["standardised", "weights"], ["product"])]
    out_dims = [w.shape[1]]
    if target_shape is None:
        nodes.append(helper.make_node("Add", ["product", "target_mean"], [output_name]))
    else:
        target_shape = tuple(int(d) for d in target_shape)
        if int(np.prod(target_shape, dtype=np.int64)) != w.shape[1]:
            raise ValidationError(f"target_shape {target_shape} does not hold {w.shape[1]} targets")
        inits.append(numpy_helper.from_array(np.array([0, *target_shape], dtype=np.int64), "out_shape"))
        nodes += [helper.make_node("Add", ["product", "target_mean"], ["flat"]),
                  helper.make_node("Reshape", ["flat", "out_shape"], [output_name])]
        out_dims = list(target_shape)
    return _model(helper, nodes, inits, features, out_dims, dt, input_name, output_name, "ridge", onnx)


def nearest_centroid_model(params: CentroidParameters, features: FeatureMap, *, compute: str = "float64",
                           input_name: str = "x", output_name: str = "scores") -> bytes:
    """An ONNX model of a fitted nearest-centroid classifier: ``(N, n_classes)`` scores, as serialised bytes.

    The score of a present class is ``softmax(-d² / (2F))`` over the present classes (d the distance of the
    standardised features to its centroid, F the feature count); absent classes score 0 (a 0/1 placement
    matrix maps present classes to their columns).
    """
    onnx, helper, numpy_helper = _onnx()
    c = np.asarray(params.centroids, dtype=np.float64)
    classes = np.asarray(params.classes, dtype=np.int64)
    if c.ndim != 2 or classes.shape != (c.shape[0],) or len(set(classes.tolist())) != len(classes):
        raise ValidationError("centroids must be (present classes, features) with one distinct class each")
    if classes.min() < 0 or classes.max() >= params.n_classes:
        raise ValidationError(f"classes must lie in 0..{params.n_classes - 1}")
    _check_features(features, c.shape[1], "the centroid model")
    dt = _DTYPES.get(compute, np.float64)
    place = np.zeros((c.shape[0], params.n_classes), dtype=dt)
    place[np.arange(c.shape[0]), classes] = 1.0
    inits: list = []
    nodes, feats = _front(helper, numpy_helper, features, compute, input_name, inits)
    for name, value in (("mean", params.mean), ("scale", params.scale), ("centroids", c), ("place", place),
                        ("two_f", np.array(2.0 * c.shape[1]))):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=dt), name))
    inits.append(numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"))
    nodes += [helper.make_node("Sub", [feats, "mean"], ["centred"]),
              helper.make_node("Div", ["centred", "scale"], ["standardised"]),
              helper.make_node("Unsqueeze", ["standardised", "axis1"], ["rows"]),          # (N, 1, F)
              helper.make_node("Sub", ["rows", "centroids"], ["diff"]),                    # (N, P, F)
              helper.make_node("ReduceSumSquare", ["diff"], ["d2"], axes=[2], keepdims=0),  # (N, P)
              helper.make_node("Div", ["d2", "two_f"], ["scaled"]),
              helper.make_node("Neg", ["scaled"], ["logits"]),
              helper.make_node("Softmax", ["logits"], ["p"], axis=1),
              helper.make_node("MatMul", ["p", "place"], [output_name])]
    return _model(helper, nodes, inits, features, [params.n_classes], dt, input_name, output_name,
                  "nearest_centroid", onnx)
