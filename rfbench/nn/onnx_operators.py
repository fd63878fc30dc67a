"""The operators of the ONNX standard: every name the ``onnx`` package (1.23.2, constraints.txt) defines a schema
for in the default domain (``''``, alias ``ai.onnx``) and in ``ai.onnx.ml``, deprecated ones included.

onnxruntime also registers kernels of its own under the default domain (``SimplifiedLayerNormalization``,
``Affine``, ``Crop``, ``Scale``, ``ImageScaler``... : operators the standard never had or dropped long ago), whose
meaning is the runtime build's; :func:`rfbench.nn.onnx_file.load_model` runs a node of a standard domain only
when its operator is one of these. ``tests/test_onnx_untrusted.py`` compares the sets with the installed
``onnx``'s schemas.
"""

from __future__ import annotations

__all__ = ["ONNX_OPERATORS", "ONNX_ML_OPERATORS"]

#: ``''`` / ``ai.onnx``.
ONNX_OPERATORS = frozenset((
    "Abs", "Acos", "Acosh", "Add", "AffineGrid", "And", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan", "Atanh",
    "Attention", "AveragePool", "BatchNormalization", "Bernoulli", "BitCast", "BitShift", "BitwiseAnd",
    "BitwiseNot", "BitwiseOr", "BitwiseXor", "BlackmanWindow", "Cast", "CastLike", "CausalConvWithState",
    "Ceil", "Celu", "CenterCropPad", "Clip", "Col2Im", "Compress", "Concat", "ConcatFromSequence", "Constant",
    "ConstantOfShape", "Conv", "ConvInteger", "ConvTranspose", "Cos", "Cosh", "CumProd", "CumSum", "DFT",
    "DeformConv", "DepthToSpace", "DequantizeLinear", "Det", "Div", "Dropout", "DynamicQuantizeLinear",
    "Einsum", "Elu", "Equal", "Erf", "Exp", "Expand", "EyeLike", "Flatten", "Floor", "GRU", "Gather",
    "GatherElements", "GatherND", "Gelu", "Gemm", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool",
    "Greater", "GreaterOrEqual", "GridSample", "GroupNormalization", "HammingWindow", "HannWindow",
    "HardSigmoid", "HardSwish", "Hardmax", "Identity", "If", "ImageDecoder", "InstanceNormalization", "IsInf",
    "IsNaN", "LRN", "LSTM", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual", "LinearAttention", "Log",
    "LogSoftmax", "Loop", "LpNormalization", "LpPool", "MatMul", "MatMulInteger", "Max", "MaxPool",
    "MaxRoiPool", "MaxUnpool", "Mean", "MeanVarianceNormalization", "MelWeightMatrix", "Min", "Mish", "Mod",
    "Mul", "Multinomial", "Neg", "NegativeLogLikelihoodLoss", "NonMaxSuppression", "NonZero", "Not", "OneHot",
    "Optional", "OptionalGetElement", "OptionalHasElement", "Or", "PRelu", "Pad", "Pow", "QLinearConv",
    "QLinearMatMul", "QuantizeLinear", "RMSNormalization", "RNN", "RandomNormal", "RandomNormalLike",
    "RandomUniform", "RandomUniformLike", "Range", "Reciprocal", "ReduceL1", "ReduceL2", "ReduceLogSum",
    "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare",
    "RegexFullMatch", "Relu", "Reshape", "Resize", "ReverseSequence", "RoiAlign", "RotaryEmbedding", "Round",
    "STFT", "Scan", "Scatter", "ScatterElements", "ScatterND", "Selu", "SequenceAt", "SequenceConstruct",
    "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength", "SequenceMap", "Shape", "Shrink",
    "Sigmoid", "Sign", "Sin", "Sinh", "Size", "Slice", "Softmax", "SoftmaxCrossEntropyLoss", "Softplus",
    "Softsign", "SpaceToDepth", "Split", "SplitToSequence", "Sqrt", "Squeeze", "StringConcat",
    "StringNormalizer", "StringSplit", "Sub", "Sum", "SwiGLU", "Swish", "Tan", "Tanh", "TensorScatter",
    "TfIdfVectorizer", "ThresholdedRelu", "Tile", "TopK", "Transpose", "Trilu", "Unique", "Unsqueeze",
    "Upsample", "Where", "Xor"
))

#: ``ai.onnx.ml``.
ONNX_ML_OPERATORS = frozenset((
    "ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer", "FeatureVectorizer",
    "Imputer", "LabelEncoder", "LinearClassifier", "LinearRegressor", "Normalizer", "OneHotEncoder",
    "SVMClassifier", "SVMRegressor", "Scaler", "TreeEnsemble", "TreeEnsembleClassifier",
    "TreeEnsembleRegressor", "ZipMap"
))
