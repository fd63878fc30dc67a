"""A model is untrusted code: every graph, function and tensor of it is walked before anything runs (external
data, operators that shadow the runtime's, random operators), and what does run runs in a child process with
address-space, CPU-time and wall-clock limits. Each hostile model is built here with the ``onnx`` package's
helper API."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import predict_models as pm
from predict_models import TensorProto, helper, numpy_helper
from rfbench.errors import FormatError, ValidationError
from rfbench.nn import onnx_file
from rfbench.nn import predict as P
from rfbench.nn.sandbox import LimitExceeded


def t(name, dims, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, dims)


def model(nodes, inits=(), functions=(), opsets=(), training=None) -> bytes:
    """A (N, 4) float32 → (N, 4) float32 model."""
    g = helper.make_graph(list(nodes), "g", [t("x", ["N", 4])], [t("y", ["N", 4])], initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), *opsets], functions=list(functions))
    m.ir_version = 8
    if training is not None:
        m.training_info.append(training)
    return m.SerializeToString()


def external(name="secret", location="id_rsa") -> TensorProto:
    """A tensor whose data lives in a file the model names."""
    tensor = numpy_helper.from_array(np.zeros(4, np.float32), name)
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", location
    return tensor


def save(tmp_path, data: bytes, name="m.onnx") -> Path:
    return pm.save(tmp_path / name, data)


def refused(tmp_path, data: bytes, **kw) -> str:
    with pytest.raises(ValidationError) as info:
        onnx_file.load_model(save(tmp_path, data), **kw)
    text = str(info.value)
    assert "\n" not in text
    return text


X = np.arange(8, dtype=np.float32).reshape(2, 4)


# --- 1. every graph, every function, every tensor ---------------------------------------------------------------

def _function_with_default() -> bytes:
    # a local function whose attribute *default* (FunctionProto.attribute_proto) is an external-data tensor: the
    # calling node sets no attribute, so the Constant inside takes the default and a runtime reads the file
    fn = helper.make_function("local.fn", "Leak", ["a"], ["b"],
                              [helper.make_node("Constant", [], ["c"]),
                               helper.make_node("Add", ["a", "c"], ["b"])],
                              [helper.make_opsetid("", 17)], attributes=[])
    fn.node[0].attribute.append(helper.make_attribute_ref("value", helper.AttributeProto.TENSOR))
    default = helper.make_attribute("value", external())
    fn.attribute_proto.append(default)
    return model([helper.make_node("Leak", ["x"], ["y"], domain="local.fn")], functions=[fn],
                 opsets=[helper.make_opsetid("local.fn", 1)])


def _in_function_node() -> bytes:
    fn = helper.make_function("local.fn", "Leak", ["a"], ["b"],
                              [helper.make_node("Constant", [], ["c"], value=external()),
                               helper.make_node("Add", ["a", "c"], ["b"])], [helper.make_opsetid("", 17)])
    return model([helper.make_node("Leak", ["x"], ["y"], domain="local.fn")], functions=[fn],
                 opsets=[helper.make_opsetid("local.fn", 1)])


def _in_loop_body() -> bytes:
    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"]),
                              helper.make_node("Constant", [], ["k"], value=external()),
                              helper.make_node("Add", ["v_in", "k"], ["v_out"])], "body",
                             [t("i", [], TensorProto.INT64), t("c_in", [], TensorProto.BOOL), t("v_in", ["N", 4])],
                             [t("c_out", [], TensorProto.BOOL), t("v_out", ["N", 4])])
    return model([helper.make_node("Loop", ["trips", "cond", "x"], ["y"], body=body)],
                 [numpy_helper.from_array(np.array(1, np.int64), "trips"),
                  numpy_helper.from_array(np.array(True), "cond")])


def _sparse_initializer() -> bytes:
    values = external("values")
    indices = numpy_helper.from_array(np.array([0], np.int64), "indices")
    sparse = helper.make_sparse_tensor(values, indices, [4])
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [t("x", ["N", 4])], [t("y", ["N", 4])],
                          sparse_initializer=[sparse])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _tensors_attribute() -> bytes:
    # a TENSORS attribute (a list of tensors) on a node of a custom-looking but standard-domain op is still walked
    node = helper.make_node("Identity", ["x"], ["y"])
    node.attribute.append(helper.make_attribute("extra", [external()]))
    return model([node])


def _training_info() -> bytes:
    init = helper.make_graph([helper.make_node("Constant", [], ["w"], value=external())], "init", [], [t("w", [4])])
    info = onnx_file_training(init)
    return model([helper.make_node("Identity", ["x"], ["y"])], training=info)


def onnx_file_training(graph, field: str = "initialization"):
    from onnx import TrainingInfoProto

    info = TrainingInfoProto()
    getattr(info, field).CopyFrom(graph)
    return info


def _training_algorithm() -> bytes:
    """The training step's graph (TrainingInfoProto field 2): the walk read fields 1 and 3, so it never saw it."""
    step = helper.make_graph([helper.make_node("Constant", [], ["w"], value=external())], "step", [], [t("w", [4])])
    return model([helper.make_node("Identity", ["x"], ["y"])], training=onnx_file_training(step, "algorithm"))


def _long_varint_location() -> bytes:
    # data_location written as a 10-byte varint whose low 32 bits are 1 (EXTERNAL): protobuf's int32 enum reads 1
    m = pm.onnx.load_from_string(model([helper.make_node("Add", ["x", "w"], ["y"])],
                                       [numpy_helper.from_array(np.zeros(4, np.float32), "w")]))
    m.graph.initializer[0].data_location = TensorProto.EXTERNAL
    data = m.SerializeToString()
    key = bytes([14 << 3 | 0, 1])  # field 14, varint, value 1
    assert data.count(key) == 1
    longer = bytes([14 << 3 | 0]) + bytes([0x81, 0x80, 0x80, 0x80, 0x10])  # 1 + 2**32
    # the tensor's length prefix grows by 4 bytes: rebuild it rather than patch the bytes
    tensor = m.graph.initializer[0]
    tensor.ClearField("data_location")
    body = tensor.SerializeToString() + longer
    m.graph.ClearField("initializer")
    graph = m.graph.SerializeToString() + bytes([5 << 3 | 2]) + _varint(len(body)) + body
    m.ClearField("graph")
    return m.SerializeToString() + bytes([7 << 3 | 2]) + _varint(len(graph)) + graph


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


@pytest.mark.parametrize("build, place", [
    (_function_with_default, "local function local.fn:Leak"),
    (_in_function_node, "local function local.fn:Leak"),
    (_in_loop_body, "a subgraph of a Loop node in the main graph"),
    (_sparse_initializer, "the main graph"),
    (_tensors_attribute, "the main graph"),
    (_training_info, "the model's training graphs"),
    (_training_algorithm, "the model's training graphs"),
    (_long_varint_location, "the main graph"),
])
def test_external_data_is_refused_wherever_it_hides(tmp_path, build, place):
    msg = refused(tmp_path, build())
    assert "keeps its data in an external file" in msg and f"(in {place})" in msg


def _node_with(extra: bytes) -> bytes:
    """The model's one node (Relu) with ``extra`` bytes appended to it (its length prefix rebuilt)."""
    m = pm.onnx.load_from_string(model([helper.make_node("Relu", ["x"], ["y"])]))
    node = m.graph.node[0].SerializeToString() + extra
    m.graph.ClearField("node")
    graph = m.graph.SerializeToString() + bytes([1 << 3 | 2]) + _varint(len(node)) + node
    m.ClearField("graph")
    return m.SerializeToString() + bytes([7 << 3 | 2]) + _varint(len(graph)) + graph


@pytest.mark.parametrize("field, value, plain", [
    (7, b"com.microsoft", "uses operator 'Relu' from domain 'com.microsoft'"),  # NodeProto.domain
    (4, b"RandomUniformLike", "a RandomUniformLike node in the main graph"),  # NodeProto.op_type: the last one
])
def test_a_field_tag_past_32_bits_is_refused(tmp_path, field, value, plain):
    """A node's field tag written as 5 bytes with bit 32 set: onnxruntime's protobuf cuts a tag to 32 bits and
    read field 7 (domain) or 4 (op_type), rfbench's walk read field 2**29 + 7, unknown, and skipped it — a vendor
    operator or a seedless random one ran, unseen by the check. Such a tag is malformed now; written plainly,
    the same field is refused for what it is."""
    text = bytes([field << 3 | 2]) + _varint(len(value)) + value
    assert plain in refused(tmp_path, _node_with(text))
    hidden = _varint(1 << 32 | field << 3 | 2) + _varint(len(value)) + value
    assert len(_varint(1 << 32 | field << 3 | 2)) == 5
    with pytest.raises(FormatError, match=r"not an ONNX model \(a field tag past 32 bits"):
        onnx_file.load_model(save(tmp_path, _node_with(hidden)))


def test_a_number_past_64_bits_is_refused(tmp_path):
    """A 10-byte varint of 2**64 + 8 (ir_version): a 64-bit reader keeps 8, the walk kept 2**64 + 8."""
    data = bytes([1 << 3]) + _varint(1 << 64 | 8) + model([helper.make_node("Relu", ["x"], ["y"])])[2:]
    assert len(_varint(1 << 64 | 8)) == 10
    with pytest.raises(FormatError, match=r"not an ONNX model \(a number past 64 bits\)"):
        onnx_file.load_model(save(tmp_path, data))


def test_training_bindings_are_string_pairs_not_graphs(tmp_path):
    """An initialization binding (TrainingInfoProto field 3, key and value strings) was walked as a graph: key
    "w" read as tag 0x77, wire type 7, and a model that binds w to o2 was refused as no ONNX model."""
    init = helper.make_graph([helper.make_node("Constant", [], ["o2"], value=numpy_helper.from_array(
        np.zeros(4, np.float32), "c"))], "init", [], [t("o2", [4])])
    info = onnx_file_training(init)
    entry = info.initialization_binding.add()
    entry.key, entry.value = "w", "o2"
    loaded = onnx_file.load_model(save(tmp_path, model([helper.make_node("Identity", ["x"], ["y"])], training=info)))
    assert [i.name for i in loaded.inputs] == ["x"]  # read, not refused


@pytest.mark.parametrize("op", ["SimplifiedLayerNormalization", "Affine", "Scale", "ImageScaler", "Crop"])
def test_an_onnxruntime_kernel_in_the_default_domain_is_refused(tmp_path, op):
    """onnxruntime registers kernels of its own under the default domain, operators the ONNX standard does not
    have (or dropped): a node using one passed as a standard operator and ran (rfbench predict, exit 0)."""
    msg = refused(tmp_path, model([helper.make_node(op, ["x"], ["y"])]))
    assert f"uses operator {op!r} in domain '', which is no ONNX operator" in msg, msg
    assert onnx_file.load_model(save(tmp_path, model([helper.make_node("Relu", ["x"], ["y"])]), "ok.onnx"))


def test_the_operator_sets_are_the_onnx_package_s():
    from rfbench.nn.onnx_operators import ONNX_ML_OPERATORS, ONNX_OPERATORS

    schemas = pm.onnx.defs.get_all_schemas_with_history()
    assert ONNX_OPERATORS == {s.name for s in schemas if s.domain in ("", "ai.onnx")}
    assert ONNX_ML_OPERATORS == {s.name for s in schemas if s.domain == "ai.onnx.ml"}


def test_the_versions_that_define_each_operator_are_the_onnx_package_s():
    """defined_at(domain, op, v) is what the installed onnx's schema for (op, v) says: one exists, not deprecated."""
    from rfbench.nn.onnx_operators import ONNX_ML_OPERATORS, ONNX_OPERATORS, defined_at

    defs = pm.onnx.defs
    for domain, ops, top in (("", ONNX_OPERATORS, defs.onnx_opset_version()), ("ai.onnx.ml", ONNX_ML_OPERATORS, 5)):
        for op in sorted(ops):
            for v in range(1, top + 1):
                try:
                    expected = not defs.get_schema(op, v, domain).deprecated
                except defs.SchemaError:
                    expected = False
                assert defined_at(domain, op, v) == expected, (domain, op, v)


def _layer_norm(opset: int, in_function: int | None = None) -> bytes:
    scale = numpy_helper.from_array(np.ones(4, np.float32), "scale")
    node = helper.make_node("LayerNormalization", ["x", "scale"], ["y"])
    if in_function is None:
        g = helper.make_graph([node], "g", [t("x", ["N", 4])], [t("y", ["N", 4])], initializer=[scale])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    else:
        fn = helper.make_function("local.fn", "Norm", ["a", "s"], ["b"],
                                  [helper.make_node("LayerNormalization", ["a", "s"], ["b"])],
                                  [helper.make_opsetid("", in_function)])
        g = helper.make_graph([helper.make_node("Norm", ["x", "scale"], ["y"], domain="local.fn")], "g",
                              [t("x", ["N", 4])], [t("y", ["N", 4])], initializer=[scale])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("local.fn", 1)],
                              functions=[fn])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("opset, in_function", [(13, None), (17, 13)])
def test_an_operator_its_imported_opset_does_not_define_is_refused(tmp_path, opset, in_function):
    """LayerNormalization is ONNX's from opset 17: under opset 13 (the model's, or a local function's own import)
    onnxruntime ran a kernel of its own for the name, and the model was accepted as standard (found by an
    adversarial probe)."""
    msg = refused(tmp_path, _layer_norm(opset, in_function))
    assert "uses operator 'LayerNormalization' of domain ''" in msg and "imports opset 13" in msg, msg
    loaded = onnx_file.load_model(save(tmp_path, _layer_norm(17, 17 if in_function else None), "ok.onnx"))
    assert loaded.opsets[0] == ("", 17)


def test_a_model_past_the_element_bound_is_refused_without_keeping_each(tmp_path, monkeypatch):
    """A file of two-byte empty nodes (50 million in 100 MB) took 3.7 GB and 83 s to walk in rfbench's own
    process, before any limit: the walk kept a tuple per node. It keeps one entry per distinct operator now, and
    stops at MAX_ELEMENTS nodes, graph inputs and outputs and tensors (found by an adversarial probe)."""
    w, b = pm.linear_weights()
    base = pm.onnx.load_from_string(pm.linear(w, b))
    base.graph.node.extend(helper.make_node("Identity", ["y"], [f"y{k}"]) for k in range(40))
    data = base.SerializeToString()
    parts = onnx_file.parse_model(data)
    assert len(parts["operators"]) == len({n.op_type for n in base.graph.node}) < 5
    monkeypatch.setattr(onnx_file, "MAX_ELEMENTS", parts["elements"] - 1)
    with pytest.raises(FormatError) as info:
        onnx_file.load_model(save(tmp_path, data))
    assert f"holds more than {parts['elements'] - 1:,} nodes, graph inputs and outputs and tensors" in str(info.value)
    graph = pm.onnx.load_from_string(pm.linear(w, b)).graph  # the same count in a local function's body
    fn = helper.make_function("local.fn", "Many", ["a"], ["b"], [helper.make_node("Identity", ["a"], ["b"])] * 200,
                              [helper.make_opsetid("", 17)])
    flood = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], functions=[fn])
    with pytest.raises(FormatError, match="holds more than"):
        onnx_file.parse_model(flood.SerializeToString())


def test_a_function_default_that_is_an_ordinary_tensor_runs(tmp_path):
    # the attribute default is walked, not refused as such: the same function with an inline default runs
    fn = helper.make_function("local.fn", "AddK", ["a"], ["b"],
                              [helper.make_node("Constant", [], ["c"]), helper.make_node("Add", ["a", "c"], ["b"])],
                              [helper.make_opsetid("", 17)])
    fn.node[0].attribute.append(helper.make_attribute_ref("value", helper.AttributeProto.TENSOR))
    fn.attribute_proto.append(helper.make_attribute("value", numpy_helper.from_array(np.full(4, 2, np.float32))))
    data = model([helper.make_node("AddK", ["x"], ["y"], domain="local.fn")], functions=[fn],
                 opsets=[helper.make_opsetid("local.fn", 1)])
    np.testing.assert_array_equal(P.predict(save(tmp_path, data), X).pred, X + 2)


def test_the_refusal_is_one_line_and_exit_2_on_the_command_line(tmp_path, runner):
    from rfbench.cli import app

    folder, _ = pm.pose_windows(tmp_path / "win", n=4)
    path = save(tmp_path, _function_with_default())
    result = runner.invoke(app, ["predict", str(path), "--windows", str(folder), "-o", str(tmp_path / "p.npy")])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "keeps its data in an external file" in lines[0]
    assert not (tmp_path / "p.npy").exists() and not (tmp_path / "p.json").exists()


# --- 2. no function may shadow a runtime operator --------------------------------------------------------------

def _shadow(domain: str, name: str) -> bytes:
    fn = helper.make_function(domain, name, ["a"], ["b"], [helper.make_node("Neg", ["a"], ["b"])],
                              [helper.make_opsetid("", 17)])
    opsets = [] if domain == "" else [helper.make_opsetid(domain, 1)]
    return model([helper.make_node(name, ["x"], ["y"], domain=domain)], functions=[fn], opsets=opsets)


@pytest.mark.parametrize("domain, name", [
    ("com.microsoft", "Gelu"),       # onnxruntime runs its contrib kernel, not the function's body
    ("", "Relu"), ("ai.onnx", "Relu"), ("ai.onnx.ml", "Scaler"),
    ("com.microsoft.nchwc", "Conv"), ("com.ms.internal.nhwc", "Conv"), ("ai.onnx.preview.training", "Adam"),
    ("com.microsoft", "NotAnOpYet"),  # any function in a runtime domain: the runtime may add the name later
])
def test_a_local_function_in_a_runtime_domain_is_refused(tmp_path, domain, name):
    msg = refused(tmp_path, _shadow(domain, name))
    assert f"local function {name!r} is defined in domain {domain!r}" in msg and "its own kernel" in msg


def test_the_same_function_in_a_domain_of_its_own_runs_its_body(tmp_path):
    np.testing.assert_array_equal(P.predict(save(tmp_path, _shadow("local.fn", "Gelu")), X).pred, -X)


def test_every_domain_onnxruntime_registers_is_a_runtime_domain():
    # the installed onnxruntime's own list of operator schemas: a function in any of their domains is refused
    state = pytest.importorskip("onnxruntime.capi.onnxruntime_pybind11_state")
    domains = {s.domain for s in state.get_all_operator_schema()}
    assert {"", "ai.onnx.ml", "com.microsoft"} <= domains
    assert all(onnx_file.runtime_domain(d) for d in domains), sorted(domains)
    assert not onnx_file.runtime_domain("local.fn") and not onnx_file.runtime_domain("com.microsoftx")


# --- 3. random operators -----------------------------------------------------------------------------------------

def _random_in(where: str, op: str) -> bytes:
    attrs = {"shape": [2, 4]} if op in ("RandomNormal", "RandomUniform") else {}
    inputs = [] if op in ("RandomNormal", "RandomUniform") else ["x"]
    if op == "Multinomial":
        nodes = [helper.make_node("Multinomial", ["x"], ["r0"], sample_size=4),
                 helper.make_node("Cast", ["r0"], ["r"], to=TensorProto.FLOAT)]
    elif op == "Dropout":
        nodes = [helper.make_node("Dropout", ["x", "ratio", "train"], ["r"])]
    else:
        nodes = [helper.make_node(op, inputs, ["r"], **attrs)]
    nodes += [helper.make_node("Mul", ["r", "zero"], ["z"]), helper.make_node("Add", ["x", "z"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0, np.float32), "zero"),
             numpy_helper.from_array(np.array(0.5, np.float32), "ratio"),
             numpy_helper.from_array(np.array(True), "train")]
    if where == "graph":
        return model(nodes, inits)
    if where == "function":
        fn = helper.make_function("local.fn", "Noisy", ["x"], ["y"], [
            *[helper.make_node("Constant", [], [i.name], value=i) for i in inits], *nodes],
            [helper.make_opsetid("", 17)])
        return model([helper.make_node("Noisy", ["x"], ["y"], domain="local.fn")], functions=[fn],
                     opsets=[helper.make_opsetid("local.fn", 1)])
    then = helper.make_graph(nodes, "then", [], [t("y", ["N", 4])])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "else", [], [t("y", ["N", 4])])
    return model([helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)],
                 [*inits, numpy_helper.from_array(np.array(True), "cond")])


@pytest.mark.parametrize("op", [*onnx_file.RANDOM_OPERATORS, "Dropout"])
@pytest.mark.parametrize("where", ["graph", "function", "subgraph"])
def test_random_operators_are_refused_anywhere_unless_allowed(tmp_path, op, where):
    data = _random_in(where, op)
    msg = refused(tmp_path, data)
    assert f"({op})" in msg or f"a {op} node" in msg
    assert "draws random numbers" in msg and "`allow_random`" in msg
    assert onnx_file.load_model(save(tmp_path, data, "again.onnx"), allow_random=True).random


def test_dropout_without_a_training_mode_input_is_not_random(tmp_path):
    data = model([helper.make_node("Dropout", ["x", "ratio"], ["y"])],
                 [numpy_helper.from_array(np.array(0.5, np.float32), "ratio")])
    assert onnx_file.load_model(save(tmp_path, data)).random == ()


def _linear_feeding(name: str):
    """The pose linear model, its output's last node writing ``name`` instead: ``(model, output name)`` (the
    caller adds the nodes that make the output from it)."""
    w, b = pm.linear_weights()
    m = pm.onnx.load_from_string(pm.linear(w, b))
    out = m.graph.output[0].name
    last = next(n for n in m.graph.node if out in n.output)
    last.output[list(last.output).index(out)] = name
    return m, out


def test_allow_random_runs_the_model_and_the_record_says_so(tmp_path):
    folder, x = pm.pose_windows(tmp_path / "win", n=4)
    m, out = _linear_feeding("clean")
    m.graph.node.extend([helper.make_node("RandomNormalLike", ["clean"], ["noise"], scale=1e-3),
                         helper.make_node("Add", ["clean", "noise"], [out])])
    path = save(tmp_path, m.SerializeToString())
    with pytest.raises(ValidationError, match="draws random numbers"):
        P.predict(path, folder)
    run = P.predict(path, folder, P.PredictSettings(allow_random=True))
    record = P.write_prediction(tmp_path / "run" / "pred.npy", run)
    assert record["settings"]["allow_random"] is True and "--allow-random" in record["argv"]
    assert P.load_prediction_record(tmp_path / "run" / "pred.json").settings.allow_random


def test_a_model_giving_zero_rows_is_told_so(tmp_path):
    """A model whose output has no row: the sandbox's child could not frame an empty array (memoryview.cast on a
    zero in the shape), and the error was a TypeError with advice to raise the memory limit."""
    folder, _ = pm.pose_windows(tmp_path / "win", n=4)
    m, out = _linear_feeding("all")
    m.graph.initializer.extend([numpy_helper.from_array(np.array([0], np.int64), n) for n in ("zero", "axis")])
    m.graph.node.append(helper.make_node("Slice", ["all", "zero", "zero", "axis"], [out]))
    with pytest.raises(ValidationError) as info:
        P.predict(save(tmp_path, m.SerializeToString()), folder)
    text = str(info.value)
    assert "has shape [0, 51] for a batch of 4 rows; it must give one row per input row" in text, text
    assert "memory" not in text


# --- 4. limits: memory, CPU time, wall-clock time ----------------------------------------------------------------

def big_constant(n: int = 1_650_000_000) -> bytes:
    """A ~230-byte model whose ConstantOfShape asks for n float32 values (6.6 GB by default)."""
    return model([helper.make_node("ConstantOfShape", ["shape"], ["big"],
                                   value=numpy_helper.from_array(np.array([1], np.float32))),
                  helper.make_node("ReduceSum", ["big"], ["s"], keepdims=0),
                  helper.make_node("Mul", ["s", "zero"], ["z"]),
                  helper.make_node("Add", ["x", "z"], ["y"])],
                 [numpy_helper.from_array(np.array([n], np.int64), "shape"),
                  numpy_helper.from_array(np.array(0, np.float32), "zero")])


def endless_loop(trips: int = 2**62) -> bytes:
    """A Loop of ``trips`` iterations of nothing: it never ends."""
    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"]),
                              helper.make_node("Identity", ["v_in"], ["v_out"])], "body",
                             [t("i", [], TensorProto.INT64), t("c_in", [], TensorProto.BOOL), t("v_in", ["N", 4])],
                             [t("c_out", [], TensorProto.BOOL), t("v_out", ["N", 4])])
    return model([helper.make_node("Loop", ["trips", "cond", "x"], ["y"], body=body)],
                 [numpy_helper.from_array(np.array(trips, np.int64), "trips"),
                  numpy_helper.from_array(np.array(True), "cond")])


def limit_of(fn, *args) -> LimitExceeded:
    with pytest.raises(LimitExceeded) as info:
        fn(*args)
    assert "\n" not in str(info.value)
    return info.value


def test_a_small_model_asking_for_gigabytes_fails_on_the_memory_limit(tmp_path):
    data = big_constant()
    assert len(data) < 1400
    exc = limit_of(P.predict, save(tmp_path, data), X, P.PredictSettings(memory_mb=512))
    assert exc.limit == "memory_mb" and "`memory_mb` limit of 512 MiB" in str(exc)
    assert "while running a ConstantOfShape node" in str(exc)


def test_a_limit_lowered_by_the_parents_own_says_so(monkeypatch):
    import resource

    import rfbench.nn.sandbox as S

    monkeypatch.setattr(resource, "getrlimit", lambda which: (900 << 20, resource.RLIM_INFINITY))
    lowered = S._inherited("RLIMIT_AS", 4096, 1 << 20, "MiB")
    assert lowered == ", lowered to 900 MiB by the limit rfbench itself runs under"
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert S._inherited("RLIMIT_AS", 4096, 1 << 20, "MiB") == ""


def test_an_endless_loop_fails_on_the_time_limit(tmp_path):
    exc = limit_of(P.predict, save(tmp_path, endless_loop()), X, P.PredictSettings(timeout=1.5))
    assert exc.limit == "timeout" and "`timeout` limit of 1.5 s" in str(exc)


def test_an_endless_loop_fails_on_the_cpu_limit(tmp_path):
    exc = limit_of(P.predict, save(tmp_path, endless_loop()), X, P.PredictSettings(cpu_seconds=1, timeout=60))
    assert exc.limit == "cpu_seconds" and "`cpu_seconds` limit of 1 s" in str(exc)


def test_a_limit_hit_on_the_command_line_is_one_line_exit_2_and_nothing_written(tmp_path, runner):
    from rfbench.cli import app

    folder, _ = pm.pose_windows(tmp_path / "win", n=4)
    x = np.zeros((4, 4), np.float32)
    pm.write_windows(folder, x, np.zeros((4, 4), np.float32), axes=["window", "value"])
    path = save(tmp_path, endless_loop())
    out = tmp_path / "run" / "pred.npy"
    result = runner.invoke(app, ["predict", str(path), "--windows", str(folder), "-o", str(out), "--timeout", "1"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip() and "predicting" not in line]
    assert len(lines) == 1 and "--timeout limit of 1 s" in lines[0] and "raise --timeout" in lines[0], lines
    assert not out.parent.exists() or not any(out.parent.iterdir())


def test_the_child_leaves_no_temporary_folder(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    P.predict(save(tmp_path, _shadow("local.fn", "Neg")), X)
    limit_of(P.predict, save(tmp_path, endless_loop(), "loop.onnx"), X, P.PredictSettings(timeout=0.5))
    assert list((tmp_path / "tmp").iterdir()) == []


def test_the_child_runs_in_an_empty_folder_of_its_own(tmp_path, monkeypatch):
    # whatever a model might name relative to the working folder, the child's working folder is empty
    seen = {}
    import rfbench.nn.sandbox as S

    real = S.subprocess.Popen

    def spy(argv, **kw):
        seen.update(argv=argv, cwd=kw["cwd"], listing=os.listdir(kw["cwd"]), shell=kw.get("shell", False))
        return real(argv, **kw)

    monkeypatch.setattr(S.subprocess, "Popen", spy)
    monkeypatch.chdir(tmp_path)
    P.predict(save(tmp_path, _shadow("local.fn", "Neg")), X)
    assert seen["listing"] == [] and Path(seen["cwd"]) != tmp_path and seen["shell"] is False
    assert seen["argv"][:4] == [sys.executable, "-I", "-m", "rfbench.nn.sandbox"]


# --- 5. every defence under an 8 GB address space and 4 minutes ---------------------------------------------------

def _windows4(tmp_path) -> Path:
    return pm.write_windows(tmp_path / "win", np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32),
                            axes=["window", "value"])


@pytest.mark.long
@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs util-linux prlimit")
@pytest.mark.parametrize("attack, options, needle", [
    ("memory", [], "--memory-mb limit of 4096 MiB"),
    ("loop", ["--timeout", "3"], "--timeout limit of 3 s"),
    ("loop", ["--cpu-seconds", "2"], "--cpu-seconds limit of 2 s"),
    ("external", [], "keeps its data in an external file"),
    ("shadow", [], "where onnxruntime registers operators of its own"),
    ("random", [], "draws random numbers"),
])
def test_every_defence_holds_under_8_gb_and_4_minutes(tmp_path, attack, options, needle):
    builds = {"memory": big_constant, "loop": endless_loop, "external": _function_with_default,
              "shadow": lambda: _shadow("com.microsoft", "Gelu"), "random": lambda: _random_in("function", "Bernoulli")}
    path = save(tmp_path, builds[attack]())
    folder = _windows4(tmp_path)
    out = tmp_path / "run" / "pred.npy"
    result = subprocess.run(["prlimit", f"--as={8 << 30}", "--", sys.executable, "-I", "-m", "rfbench", "predict",
                             str(path), "--windows", str(folder), "-o", str(out), *options],
                            capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], result.stderr
    assert not out.exists() and not out.with_suffix(".json").exists()


@pytest.mark.long
@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs util-linux prlimit")
def test_an_honest_model_runs_under_8_gb(tmp_path):
    folder = _windows4(tmp_path)
    path = save(tmp_path, _shadow("local.fn", "Neg"))
    out = tmp_path / "run" / "pred.npy"
    result = subprocess.run(["prlimit", f"--as={8 << 30}", "--", sys.executable, "-I", "-m", "rfbench", "predict",
                             str(path), "--windows", str(folder), "-o", str(out), "--json"],
                            capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["rows"] == 4


# --- 3, end to end: a chain made with --allow-random does not verify ----------------------------------------------

@pytest.mark.long
def test_verify_answers_not_reproducible_for_a_chain_made_with_allow_random(tiny_demo, tmp_path):
    d = tmp_path / "d"
    shutil.copytree(tiny_demo, d)

    def rfbench(*args):
        return subprocess.run([sys.executable, "-I", "-m", "rfbench", *map(str, args)], capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL)

    m = pm.onnx.load_from_string((d / "pose" / "ridge.onnx").read_bytes())
    out = m.graph.output[0].name
    last = next(n for n in m.graph.node if out in n.output)
    last.output[list(last.output).index(out)] = "clean"
    m.graph.node.extend([helper.make_node("RandomNormalLike", ["clean"], ["noise"], scale=1e-6),
                         helper.make_node("Add", ["clean", "noise"], [out])])
    noisy = d / "pose" / "noisy.onnx"
    noisy.write_bytes(m.SerializeToString())
    windows = d / "windows" / "mmfi-test"
    pred = d / "pose" / "pred.npy"
    refused_run = rfbench("predict", noisy, "--windows", windows, "-o", pred, "--force")
    assert refused_run.returncode == 2 and "draws random numbers" in refused_run.stderr, refused_run.stderr
    made = rfbench("predict", noisy, "--windows", windows, "-o", pred, "--force", "--allow-random")
    assert made.returncode == 0, made.stderr
    assert json.loads((d / "pose" / "pred.json").read_text())["settings"]["allow_random"] is True
    report = d / "pose" / "random.json"
    scored = rfbench("score", "--pred", pred, "--rows", windows / "index.json", "--split", d / "mmfi-split.json",
                     "--skeleton", "h36m17", "--units", "m", "--bootstrap", "20", "-o", report)
    assert scored.returncode == 0, scored.stderr
    verdict = rfbench("verify", report, "--root", d)
    assert verdict.returncode == 1, verdict.stdout + verdict.stderr
    assert "NOT REPRODUCIBLE" in verdict.stdout + verdict.stderr


def test_a_model_file_loaded_with_random_operators_needs_allow_random_to_run(tmp_path):
    path = save(tmp_path, _random_in("graph", "RandomUniformLike"))
    loaded = onnx_file.load_model(path, allow_random=True)
    with pytest.raises(ValidationError, match="draws random numbers"):
        P.predict(loaded, X)
    assert P.predict(loaded, X, P.PredictSettings(allow_random=True)).pred.shape == (2, 4)


@pytest.mark.parametrize("reply", [
    {"dtype": "|O", "shape": [2], "bytes": 16},            # objects: never from a tensor
    {"dtype": "<f4", "shape": [-1, 4], "bytes": 16},        # a negative dim
    {"dtype": "<f4", "shape": [2, 4], "bytes": 31},         # bytes that are not the shape's
    {"dtype": "<f4", "shape": [1 << 40], "bytes": 4 << 40},  # more than the child's address space
    {"dtype": "<f4", "shape": "2,4", "bytes": 32},
])
def test_the_parent_checks_an_output_header_before_it_allocates(reply):
    import rfbench.nn.sandbox as S

    with pytest.raises(ValueError):
        S._declared_size(reply, 4096 << 20)
    assert S._declared_size({"dtype": "<f4", "shape": [2, 4], "bytes": 32}, 4096 << 20) == 32
