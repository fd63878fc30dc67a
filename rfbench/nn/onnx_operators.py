"""The operators of the ONNX standard: every name the ``onnx`` package (1.23.2, constraints.txt) defines a schema
for in the default domain (``''``, alias ``ai.onnx``) and in ``ai.onnx.ml``, deprecated ones included, and the
opset versions that define each: from the first schema's ``since_version`` on, except where a version deprecated
it (:func:`defined_at`). A node whose operator its domain's imported opset does not define (``LayerNormalization``
under opset 13; it is standard from 17) would run whatever kernel the runtime registers for that name.

onnxruntime also registers kernels of its own under the default domain (``SimplifiedLayerNormalization``,
``Affine``, ``Crop``, ``Scale``, ``ImageScaler``... : operators the standard never had or dropped long ago), whose
meaning is the runtime build's; :func:`rfbench.nn.onnx_file.load_model` runs a node of a standard domain only
when its operator is one of these. ``tests/test_onnx_untrusted.py`` compares the sets with the installed
``onnx``'s schemas
(names, versions, deprecations).
"""

from __future__ import annotations

__all__ = ["ONNX_OPERATORS", "ONNX_ML_OPERATORS", "defined_at"]

#: ``''`` / ``ai.onnx``: operator → the first opset version defining it (and every later one).
_SINCE = {
    "Abs": 1, "Acos": 7, "Acosh": 9, "Add": 1, "AffineGrid": 20, "And": 1, "ArgMax": 1, "ArgMin": 1, "Asin": 7,
    "Asinh": 9, "Atan": 7, "Atanh": 9, "Attention": 23, "AveragePool": 1, "BatchNormalization": 1, "Bernoulli": 15,
    "BitCast": 26, "BitShift": 11, "BitwiseAnd": 18, "BitwiseNot": 18, "BitwiseOr": 18, "BitwiseXor": 18,
    "BlackmanWindow": 17, "Cast": 1, "CastLike": 15, "CausalConvWithState": 27, "Ceil": 1, "Celu": 12,
    "CenterCropPad": 18, "Clip": 1, "Col2Im": 18, "Compress": 9, "Concat": 1, "ConcatFromSequence": 11,
    "Constant": 1, "ConstantOfShape": 9, "Conv": 1, "ConvInteger": 10, "ConvTranspose": 1, "Cos": 7, "Cosh": 9,
    "CumProd": 26, "CumSum": 11, "DFT": 17, "DeformConv": 19, "DepthToSpace": 1, "DequantizeLinear": 10, "Det": 11,
    "Div": 1, "Dropout": 1, "DynamicQuantizeLinear": 11, "Einsum": 12, "Elu": 1, "Equal": 1, "Erf": 9, "Exp": 1,
    "Expand": 8, "EyeLike": 9, "Flatten": 1, "Floor": 1, "GRU": 1, "Gather": 1, "GatherElements": 11, "GatherND": 11,
    "Gelu": 20, "Gemm": 1, "GlobalAveragePool": 1, "GlobalLpPool": 1, "GlobalMaxPool": 1, "Greater": 1,
    "GreaterOrEqual": 12, "GridSample": 16, "HammingWindow": 17, "HannWindow": 17, "HardSigmoid": 1, "HardSwish": 14,
    "Hardmax": 1, "Identity": 1, "If": 1, "ImageDecoder": 20, "InstanceNormalization": 1, "IsInf": 10, "IsNaN": 9,
    "LRN": 1, "LSTM": 1, "LayerNormalization": 17, "LeakyRelu": 1, "Less": 1, "LessOrEqual": 12,
    "LinearAttention": 27, "Log": 1, "LogSoftmax": 1, "Loop": 1, "LpNormalization": 1, "LpPool": 1, "MatMul": 1,
    "MatMulInteger": 10, "Max": 1, "MaxPool": 1, "MaxRoiPool": 1, "MaxUnpool": 9, "Mean": 1,
    "MeanVarianceNormalization": 9, "MelWeightMatrix": 17, "Min": 1, "Mish": 18, "Mod": 10, "Mul": 1,
    "Multinomial": 7, "Neg": 1, "NegativeLogLikelihoodLoss": 12, "NonMaxSuppression": 10, "NonZero": 9, "Not": 1,
    "OneHot": 9, "Optional": 15, "OptionalGetElement": 15, "OptionalHasElement": 15, "Or": 1, "PRelu": 1, "Pad": 1,
    "Pow": 1, "QLinearConv": 10, "QLinearMatMul": 10, "QuantizeLinear": 10, "RMSNormalization": 23, "RNN": 1,
    "RandomNormal": 1, "RandomNormalLike": 1, "RandomUniform": 1, "RandomUniformLike": 1, "Range": 11,
    "Reciprocal": 1, "ReduceL1": 1, "ReduceL2": 1, "ReduceLogSum": 1, "ReduceLogSumExp": 1, "ReduceMax": 1,
    "ReduceMean": 1, "ReduceMin": 1, "ReduceProd": 1, "ReduceSum": 1, "ReduceSumSquare": 1, "RegexFullMatch": 20,
    "Relu": 1, "Reshape": 1, "Resize": 10, "ReverseSequence": 10, "RoiAlign": 10, "RotaryEmbedding": 23, "Round": 11,
    "STFT": 17, "Scan": 8, "ScatterElements": 11, "ScatterND": 11, "Selu": 1, "SequenceAt": 11,
    "SequenceConstruct": 11, "SequenceEmpty": 11, "SequenceErase": 11, "SequenceInsert": 11, "SequenceLength": 11,
    "SequenceMap": 17, "Shape": 1, "Shrink": 9, "Sigmoid": 1, "Sign": 9, "Sin": 7, "Sinh": 9, "Size": 1, "Slice": 1,
    "Softmax": 1, "SoftmaxCrossEntropyLoss": 12, "Softplus": 1, "Softsign": 1, "SpaceToDepth": 1, "Split": 1,
    "SplitToSequence": 11, "Sqrt": 1, "Squeeze": 1, "StringConcat": 20, "StringNormalizer": 10, "StringSplit": 20,
    "Sub": 1, "Sum": 1, "SwiGLU": 28, "Swish": 24, "Tan": 7, "Tanh": 1, "TensorScatter": 24, "TfIdfVectorizer": 9,
    "ThresholdedRelu": 10, "Tile": 1, "TopK": 1, "Transpose": 1, "Trilu": 14, "Unique": 11, "Unsqueeze": 1,
    "Where": 9, "Xor": 1,
}
#: ``''`` / ``ai.onnx``: operators a version deprecated (or a deprecated version replaced): ``(version, deprecated)``
#: at each change, in version order.
_CHANGES = {
    "GroupNormalization": ((18, True), (21, False)), "Scatter": ((9, False), (11, True)),
    "Upsample": ((1, False), (10, True)),
}
#: ``ai.onnx.ml``: as :data:`_SINCE` and :data:`_CHANGES`.
_ML_SINCE = {
    "ArrayFeatureExtractor": 1, "Binarizer": 1, "CastMap": 1, "CategoryMapper": 1, "DictVectorizer": 1,
    "FeatureVectorizer": 1, "Imputer": 1, "LabelEncoder": 1, "LinearClassifier": 1, "LinearRegressor": 1,
    "Normalizer": 1, "OneHotEncoder": 1, "SVMClassifier": 1, "SVMRegressor": 1, "Scaler": 1, "TreeEnsemble": 5,
    "ZipMap": 1,
}
_ML_CHANGES = {
    "TreeEnsembleClassifier": ((1, False), (5, True)), "TreeEnsembleRegressor": ((1, False), (5, True)),
}

#: ``''`` / ``ai.onnx``.
ONNX_OPERATORS = frozenset(_SINCE) | frozenset(_CHANGES)
#: ``ai.onnx.ml``.
ONNX_ML_OPERATORS = frozenset(_ML_SINCE) | frozenset(_ML_CHANGES)


def defined_at(domain: str, op: str, version: int) -> bool:
    """Whether opset ``version`` of ``domain`` (``''``/``ai.onnx`` or ``ai.onnx.ml``) defines ``op``: a version at
    or after its first, and not one a deprecation holds."""
    ml = domain == "ai.onnx.ml"
    since = (_ML_SINCE if ml else _SINCE).get(op)
    changes = ((since, False),) if since is not None else (_ML_CHANGES if ml else _CHANGES).get(op, ())
    state = None
    for at, deprecated in changes:
        if at <= version:
            state = deprecated
    return state is False
