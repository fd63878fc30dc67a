"""rfbench.nn.predict and rfbench.nn.onnx_file: models checked before they run, predictions equal to NumPy on
the same weights, no copy of a memory-mapped X, identical bits on a re-run, and the prediction record."""

from __future__ import annotations

import json

import numpy as np
import pytest

import predict_models as pm
from predict_models import TensorProto, helper, numpy_helper
from rfbench.cli import app
from rfbench.errors import FormatError, SchemaError, ValidationError, VerificationError
from rfbench.nn import onnx_file
from rfbench.nn import predict as P


@pytest.fixture
def pose(tmp_path):
    folder, x = pm.pose_windows(tmp_path / "win", n=10)
    return folder, x


def lin_model(tmp_path, name="lin.onnx", **kw):
    w, b = pm.linear_weights()
    return pm.save(tmp_path / name, pm.linear(w, b, **kw)), w, b


def error_of(exc_type, fn, *args, **kw) -> str:
    with pytest.raises(exc_type) as info:
        fn(*args, **kw)
    text = str(info.value)
    assert "\n" not in text
    return text


# --- predictions equal NumPy on the same weights -------------------------------------------------------------

def test_linear_model_equals_numpy_on_the_same_weights(tmp_path, pose):
    folder, x = pose
    model, w, b = lin_model(tmp_path)
    out = P.predict(model, folder, P.PredictSettings(batch_size=4))
    want = (x.reshape(10, -1).astype(np.float64) @ w.astype(np.float64) + b).reshape(10, 17, 3)
    assert out.pred.shape == (10, 17, 3) and out.pred.dtype == np.float32
    assert out.output_mode == "flattened"  # the model gives (N, 51); y's rows are (17, 3)
    np.testing.assert_allclose(out.pred, want, rtol=1e-5, atol=1e-5)
    assert out.batches == 3 and out.copied_batches == 0 and out.padded_rows == 0


def test_a_kept_sandbox_starts_one_child_for_many_predictions(tmp_path, pose):
    """rfbench robustness predicts once per cell with one model: a sandbox the caller keeps reuses its session's
    child (one start-up, not one per cell), and the predictions are those of a box of their own."""
    from rfbench.nn.sandbox import Sandbox

    folder, _ = pose
    model, _, _ = lin_model(tmp_path)
    settings = P.PredictSettings(batch_size=4)
    alone = P.predict(model, folder, settings)
    loaded = onnx_file.load_model(model)
    with Sandbox(settings, "model lin.onnx") as box:
        runs = [P.predict(loaded, folder, settings, sandbox=box) for _ in range(3)]
        assert len(box.sessions) == 1
        pid = box.sessions[0].proc.pid
        assert all(s.proc.pid == pid for s in box.kept[loaded.sha256])
    for run in runs:
        assert run.pred.tobytes() == alone.pred.tobytes()


def test_the_model_s_children_write_no_file_into_the_user_s_temporary_folder(tmp_path, pose, monkeypatch):
    """onnxruntime writes $TMPDIR/.ses: a predict run left it in the user's temporary folder and wrote through a
    link planted there (in a shared /tmp, a file of the user's overwritten). The children's TMPDIR is now a
    folder of the run's own, removed with it."""
    import tempfile

    folder, _ = pose
    model, _, _ = lin_model(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    (tmp / ".ses").symlink_to(victim)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    P.predict(model, folder, P.PredictSettings(batch_size=4))
    assert victim.read_text() == "mine\n"
    assert sorted(p.name for p in tmp.iterdir()) == [".ses"] and (tmp / ".ses").is_symlink()


def test_conv_model_equals_rfbench_naive_conv(tmp_path, pose):
    folder, x = pose
    p = pm.conv_weights()
    model = pm.save(tmp_path / "conv.onnx", pm.conv(p))
    out = P.predict(model, folder, P.PredictSettings(batch_size=3))
    assert out.output_mode == "target"
    np.testing.assert_allclose(out.pred, pm.conv_numpy(p, x), rtol=1e-5, atol=1e-5)


def test_rows_come_back_in_index_order_whatever_the_batching(tmp_path, pose):
    folder, x = pose
    model, w, b = lin_model(tmp_path)
    outs = [P.predict(model, folder, P.PredictSettings(batch_size=k, sessions=s)).pred
            for k, s in ((1, 1), (3, 2), (10, 1), (64, 1), (2, 3))]
    for o in outs[1:]:
        np.testing.assert_allclose(o, outs[0], rtol=1e-6, atol=1e-6)
    # row i is the model applied to X[i]: check a few rows one at a time
    for i in (0, 4, 9):
        want = (x[i].reshape(-1).astype(np.float64) @ w + b).reshape(17, 3)
        np.testing.assert_allclose(outs[2][i], want, rtol=1e-5, atol=1e-5)


def test_in_memory_array_and_target_checks(tmp_path):
    model, w, b = lin_model(tmp_path)
    x = np.random.default_rng(3).standard_normal((5, *pm.ROW)).astype(np.float32)
    free = P.predict(model, x)  # no target: rows as the model gives them
    assert free.output_mode == "as-is" and free.pred.shape == (5, 51) and free.windows is None
    shaped = P.predict(model, x, target_shape=(17, 3))
    assert shaped.output_mode == "flattened" and shaped.pred.shape == (5, 17, 3)
    assert "expected (17, 2)" in error_of(ValidationError, P.predict, model, x, target_shape=(17, 2))


def test_gesture_scores_and_labels(tmp_path):
    folder, x = pm.gesture_windows(tmp_path / "g", n=9, classes=4)
    w, b = pm.linear_weights(outputs=4)
    scores = P.predict(pm.save(tmp_path / "s.onnx", pm.linear(w, b)), folder)
    assert scores.output_mode == "scores" and scores.pred.shape == (9, 4)
    # a model that outputs labels (ArgMax → int64 (N,)) matches y's row shape ()
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b"),
             numpy_helper.from_array(np.array([-1, int(np.prod(pm.ROW))], np.int64), "flat_shape")]
    nodes = [helper.make_node("Reshape", ["x", "flat_shape"], ["flat"]),
             helper.make_node("MatMul", ["flat", "W"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["s"]),
             helper.make_node("ArgMax", ["s"], ["y"], axis=1, keepdims=0)]
    labels_model = pm.model_bytes(nodes, [pm.tensor("x", ["N", *pm.ROW])], [pm.tensor("y", ["N"], TensorProto.INT64)],
                                  inits)
    labels = P.predict(pm.save(tmp_path / "l.onnx", labels_model), folder)
    assert labels.output_mode == "target" and labels.pred.dtype == np.int64
    np.testing.assert_array_equal(labels.pred, scores.pred.argmax(axis=1))
    # 5 scores for 4 classes: refused, naming the class count
    w5, b5 = pm.linear_weights(outputs=5)
    msg = error_of(ValidationError, P.predict, pm.save(tmp_path / "s5.onnx", pm.linear(w5, b5)), folder)
    assert "rows of shape (5,)" in msg and "(4,) (the class count)" in msg


# --- the model is checked before anything runs ---------------------------------------------------------------

def test_input_rank_mismatch(tmp_path, pose):
    folder, _ = pose
    model, _, _ = lin_model(tmp_path, input_dims=["N", 2, 3, 8, 5])
    msg = error_of(ValidationError, P.predict, model, folder)
    assert "rank 5" in msg and "X has rank 6" in msg


def test_static_dim_mismatch_names_the_axis(tmp_path, pose):
    folder, _ = pose
    model, _, _ = lin_model(tmp_path, input_dims=["N", 1, 2, 3, 9, 5])
    msg = error_of(ValidationError, P.predict, model, folder)
    assert "expects 9 on axis 4 (subcarrier)" in msg and "X has 8" in msg


@pytest.mark.parametrize("dim", [-1, 0, -7])
def test_negative_or_zero_static_dim(tmp_path, pose, dim):
    folder, _ = pose
    model, _, _ = lin_model(tmp_path, input_dims=["N", 1, 2, dim, 8, 5])
    msg = error_of(ValidationError, P.predict, model, folder)
    assert f"declares dimension {dim} on axis 3 (antenna)" in msg


def test_negative_batch_dim_is_refused_too(tmp_path, pose):
    folder, _ = pose
    model, _, _ = lin_model(tmp_path, input_dims=[-1, *pm.ROW])
    assert "declares dimension -1 on axis 0 (window)" in error_of(ValidationError, P.predict, model, folder)


def test_dynamic_dims_accepted(tmp_path, pose):
    folder, x = pose
    # a named dim, an unset dim (neither value nor name), and a model without any declared input shape
    for dims in (["batch", 1, "f", 3, 8, 5], [None, None, 2, 3, None, 5]):
        model, w, b = lin_model(tmp_path, input_dims=dims)
        assert P.predict(model, folder).pred.shape == (10, 17, 3)
    w, b = pm.linear_weights()
    data = pm.linear(w, b)
    m = pm.onnx.load_from_string(data)
    m.graph.input[0].type.tensor_type.ClearField("shape")
    model = pm.save(tmp_path / "noshape.onnx", m.SerializeToString())
    assert onnx_file.load_model(model).inputs[0].dims is None
    assert P.predict(model, folder).pred.shape == (10, 17, 3)


def test_input_dtype_must_match_x(tmp_path, pose):
    folder, _ = pose
    model, _, _ = lin_model(tmp_path, elem=TensorProto.DOUBLE)
    msg = error_of(ValidationError, P.predict, model, folder)
    assert "tensor(double) but X is float32" in msg


def test_a_big_endian_x_is_refused_for_what_it_is(tmp_path, pose):
    """X.npy saved big-endian (the index re-hashed): the advice was to export the model with a >f4 input, which
    ONNX cannot express."""
    import hashlib

    folder, _ = pose
    np.save(folder / "X.npy", np.load(folder / "X.npy").astype(">f4"))
    index = json.loads((folder / "index.json").read_text())
    data = (folder / "X.npy").read_bytes()
    index["x"].update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data), dtype=">f4")
    (folder / "index.json").write_text(json.dumps(index))
    model, _, _ = lin_model(tmp_path)
    msg = error_of(ValidationError, P.predict, model, folder)
    assert "X is float32 stored big-endian (>f4), which no ONNX model takes and rfbench windows never writes" in msg
    assert "export the model" not in msg


def _two_input_model():
    nodes = [helper.make_node("Add", ["x", "z"], ["y"])]
    return pm.model_bytes(nodes, [pm.tensor("x", ["N", *pm.ROW]), pm.tensor("z", ["N", *pm.ROW])],
                          [pm.tensor("y", ["N", *pm.ROW])])


def test_several_inputs_need_a_name_and_every_one_fed(tmp_path, pose):
    folder, _ = pose
    model = pm.save(tmp_path / "two.onnx", _two_input_model())
    msg = error_of(ValidationError, P.predict, model, folder)
    assert "has 2 inputs ('x', 'z')" in msg
    msg = error_of(ValidationError, P.predict, model, folder, P.PredictSettings(input_name="x"))
    assert "'z' would get no data" in msg
    msg = error_of(ValidationError, P.predict, model, folder, P.PredictSettings(input_name="q"))
    assert "has no input 'q'" in msg


def test_initializers_listed_as_inputs_are_not_inputs_to_feed(tmp_path, pose):
    # IR version 3 models list their weights among the graph inputs too
    folder, x = pose
    w, b = pm.linear_weights()
    m = pm.onnx.load_from_string(pm.linear(w, b))
    m.graph.input.extend([pm.tensor("W", list(w.shape)), pm.tensor("b", list(b.shape))])
    model = pm.save(tmp_path / "ir3.onnx", m.SerializeToString())
    assert [i.name for i in onnx_file.load_model(model).inputs] == ["x"]
    assert P.predict(model, folder).pred.shape == (10, 17, 3)


def test_several_outputs_need_a_name(tmp_path, pose):
    folder, x = pose
    w, b = pm.linear_weights()
    m = pm.onnx.load_from_string(pm.linear(w, b))
    m.graph.output.append(pm.tensor("flat", ["N", int(np.prod(pm.ROW))]))
    model = pm.save(tmp_path / "two_out.onnx", m.SerializeToString())
    msg = error_of(ValidationError, P.predict, model, folder)
    assert "has 2 outputs ('y', 'flat')" in msg
    out = P.predict(model, folder, P.PredictSettings(output_name="y"))
    assert out.pred.shape == (10, 17, 3)
    msg = error_of(ValidationError, P.predict, model, folder, P.PredictSettings(output_name="flat"))
    assert "rows of shape (240,)" in msg and "(17, 3) (y's row shape)" in msg and "(51,) (its flattening)" in msg


def test_output_rows_must_fit_y(tmp_path, pose):
    folder, _ = pose
    w, b = pm.linear_weights(outputs=34)
    model = pm.save(tmp_path / "out34.onnx", pm.linear(w, b, out_rows=(17, 2)))
    msg = error_of(ValidationError, P.predict, model, folder)
    assert "output 'y' has rows of shape (17, 2)" in msg


def test_output_rows_with_dynamic_dims_are_checked_on_the_first_batch(tmp_path, pose):
    folder, _ = pose
    w, b = pm.linear_weights(outputs=34)
    m = pm.onnx.load_from_string(pm.linear(w, b, out_rows=(17, 2)))
    dims = m.graph.output[0].type.tensor_type.shape.dim
    dims[1].dim_param, dims[2].dim_param = "K", "D"
    model = pm.save(tmp_path / "dyn_out.onnx", m.SerializeToString())
    msg = error_of(ValidationError, P.predict, model, folder)
    assert "rows of shape (17, 2)" in msg


def test_pose_output_must_be_floating_point(tmp_path, pose):
    folder, _ = pose
    w, b = pm.linear_weights()
    m = pm.onnx.load_from_string(pm.linear(w, b))
    m.graph.node.append(helper.make_node("Cast", ["y"], ["yi"], to=TensorProto.INT64))
    m.graph.output[0].CopyFrom(pm.tensor("yi", ["N", 51], TensorProto.INT64))
    model = pm.save(tmp_path / "int.onnx", m.SerializeToString())
    msg = error_of(ValidationError, P.predict, model, folder)
    assert "tensor(int64)" in msg and "floating-point joints" in msg


def test_fixed_batch_dimension(tmp_path, pose):
    folder, x = pose
    model, w, b = lin_model(tmp_path, input_dims=[4, *pm.ROW])
    msg = error_of(ValidationError, P.predict, model, folder)  # default batch size 64
    assert "fixed batch of 4 rows" in msg and "run it with `batch_size` 4, or export it with a dynamic batch axis" \
        in msg
    out = P.predict(model, folder, P.PredictSettings(batch_size=4))  # 10 rows: the last batch is padded
    assert out.padded_rows == 2 and out.copied_batches == 1 and out.batches == 3
    want = (x.reshape(10, -1).astype(np.float64) @ w + b).reshape(10, 17, 3)
    np.testing.assert_allclose(out.pred, want, rtol=1e-5, atol=1e-5)


def _with_external_weight(data: bytes) -> bytes:
    m = pm.onnx.load_from_string(data)
    t = m.graph.initializer[0]
    t.ClearField("raw_data")
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    entry = t.external_data.add()
    entry.key, entry.value = "location", "weights.bin"
    return m.SerializeToString()


def test_external_data_is_refused_before_onnxruntime_opens_anything(tmp_path, pose, monkeypatch):
    folder, _ = pose
    w, b = pm.linear_weights()
    model = pm.save(tmp_path / "ext.onnx", _with_external_weight(pm.linear(w, b)))
    monkeypatch.setattr(P, "_make_session", lambda *a: pytest.fail("onnxruntime was reached"))
    msg = error_of(ValidationError, P.predict, model, folder)
    assert "tensor 'W' keeps its data in an external file" in msg


def test_external_data_inside_a_subgraph_is_found(tmp_path):
    # an If node whose then-branch holds a Constant whose tensor lives in an external file
    ext = numpy_helper.from_array(np.ones(3, np.float32), "hidden")
    ext.ClearField("raw_data")
    ext.data_location = TensorProto.EXTERNAL
    e = ext.external_data.add()
    e.key, e.value = "location", "../../etc/passwd"
    then = helper.make_graph([helper.make_node("Constant", [], ["t"], value=ext)], "then", [],
                             [pm.tensor("t", [3])])
    other = helper.make_graph([helper.make_node("Constant", [], ["e"], value=numpy_helper.from_array(
        np.zeros(3, np.float32)))], "else", [], [pm.tensor("e", [3])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)]
    data = pm.model_bytes(nodes, [pm.tensor("x", [3])], [pm.tensor("y", [3])],
                          [numpy_helper.from_array(np.array(0, np.float32), "zero")])
    model = pm.save(tmp_path / "nested.onnx", data)
    assert "tensor 'hidden' keeps its data in an external file" in error_of(ValidationError, onnx_file.load_model,
                                                                           model)


def test_custom_operator_domain_is_refused(tmp_path):
    nodes = [helper.make_node("FancyPool", ["x"], ["y"], domain="com.example", name="pool1")]
    data = pm.model_bytes(nodes, [pm.tensor("x", ["N", 4])], [pm.tensor("y", ["N", 4])],
                          opsets=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    msg = error_of(ValidationError, onnx_file.load_model, pm.save(tmp_path / "custom.onnx", data))
    assert "node 'pool1' uses operator 'FancyPool' from domain 'com.example'" in msg
    vendor = [helper.make_node("FusedMatMul", ["x", "x"], ["y"], domain="com.microsoft")]
    data = pm.model_bytes(vendor, [pm.tensor("x", [4, 4])], [pm.tensor("y", [4, 4])],
                          opsets=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    assert "domain 'com.microsoft'" in error_of(ValidationError, onnx_file.load_model,
                                                 pm.save(tmp_path / "vendor.onnx", data))


def test_a_local_function_is_not_a_custom_operator(tmp_path):
    fn = helper.make_function("my.funcs", "Double", ["a"], ["b"], [helper.make_node("Add", ["a", "a"], ["b"])],
                              [helper.make_opsetid("", 17)])
    nodes = [helper.make_node("Double", ["x"], ["y"], domain="my.funcs")]
    data = pm.model_bytes(nodes, [pm.tensor("x", ["N", 3])], [pm.tensor("y", ["N", 3])], functions=[fn],
                          opsets=[helper.make_opsetid("", 17), helper.make_opsetid("my.funcs", 1)])
    model = pm.save(tmp_path / "fn.onnx", data)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(P.predict(model, x).pred, 2 * x)


def test_model_file_size_is_checked_before_it_is_parsed(tmp_path):
    model, _, _ = lin_model(tmp_path)
    size = model.stat().st_size
    msg = error_of(FormatError, onnx_file.load_model, model, max_bytes=size - 1)
    assert f"{size} bytes, more than the {size - 1}-byte limit" in msg
    assert onnx_file.load_model(model, max_bytes=size).size == size
    empty = pm.save(tmp_path / "empty.onnx", b"")
    assert "empty file" in error_of(FormatError, onnx_file.load_model, empty)
    assert "no such file" in error_of(FormatError, onnx_file.load_model, tmp_path / "missing.onnx")
    assert "is a directory" in error_of(FormatError, onnx_file.load_model, tmp_path)
    import os

    os.mkfifo(tmp_path / "fifo.onnx")  # must not block waiting for a writer
    assert "not a regular file" in error_of(FormatError, onnx_file.load_model, tmp_path / "fifo.onnx")


@pytest.mark.parametrize("data", [b"\x00\x01\x02", b"not a model at all", b"\x0a\xff\xff\xff\xff\x0f"],
                         ids=["field-0", "text", "huge-length"])
def test_garbage_is_not_an_onnx_model(tmp_path, data):
    assert "not an ONNX model" in error_of(FormatError, onnx_file.load_model, pm.save(tmp_path / "g.onnx", data))


def test_truncated_model_is_refused(tmp_path):
    w, b = pm.linear_weights()
    data = pm.linear(w, b)
    for cut in (len(data) // 3, len(data) - 7):
        msg = error_of(FormatError, onnx_file.load_model, pm.save(tmp_path / "cut.onnx", data[:cut]))
        assert "not an ONNX model" in msg


def _varint(n: int) -> bytes:
    out = b""
    while True:
        out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protocol-buffers field: key (number << 3 | wire type 2), length, payload."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _nested(depth: int) -> bytes:
    """A ModelProto whose graph holds a node whose attribute holds a graph ... ``depth`` times (written by
    hand: the protobuf library itself refuses to build messages this deep)."""
    graph = b""
    for _ in range(depth):
        attribute = _field(1, b"body") + _field(6, graph)   # AttributeProto: name, g
        node = _field(4, b"Loop") + _field(5, attribute)     # NodeProto: op_type, attribute
        graph = _field(1, node)                              # GraphProto: node
    return b"\x08" + _varint(8) + _field(7, graph)  # ModelProto: ir_version 8 (field 1, varint), graph


def test_subgraph_depth_is_bounded():
    ok = onnx_file.parse_model(_nested(onnx_file.MAX_GRAPH_DEPTH))
    assert ok["elements"] == onnx_file.MAX_GRAPH_DEPTH  # a Loop node each level
    assert list(ok["operators"]) == [("", "Loop", None)]
    msg = error_of(FormatError, onnx_file.parse_model, _nested(onnx_file.MAX_GRAPH_DEPTH + 2))
    assert f"nest more than {onnx_file.MAX_GRAPH_DEPTH} deep" in msg


def test_parser_reads_what_the_onnx_package_wrote():
    w, b = pm.linear_weights()
    data = pm.linear(w, b, input_dims=["N", 1, 2, -3, None, 5])
    parts = onnx_file.parse_model(data)
    m = pm.onnx.load_from_string(data)
    assert parts["ir_version"] == m.ir_version == 8
    assert parts["opsets"] == [("", 17)]
    (x,) = parts["inputs"]
    assert (x.name, x.elem_type, x.dims) == ("x", TensorProto.FLOAT, ("N", 1, 2, -3, None, 5))
    assert [o.name for o in parts["outputs"]] == [o.name for o in m.graph.output]
    assert [k[1] for k in parts["operators"]] == list(dict.fromkeys(n.op_type for n in m.graph.node))
    assert parts["external"] == []


# --- no copy of a memory-mapped X ----------------------------------------------------------------------------

class _Recording:
    """Wraps an onnxruntime session and keeps every array fed to it."""

    def __init__(self, session, fed):
        self.session, self.fed = session, fed

    def get_inputs(self):
        return self.session.get_inputs()

    def run(self, names, feed, options=None):
        self.fed.extend(feed.values())
        return self.session.run(names, feed, options)


def _record_feeds(monkeypatch):
    fed = []
    real = P._make_session
    monkeypatch.setattr(P, "_make_session", lambda *a: _Recording(real(*a), fed))
    return fed


def test_memory_mapped_x_is_fed_without_a_copy(tmp_path, pose, monkeypatch):
    folder, _ = pose
    model, _, _ = lin_model(tmp_path)
    fed = _record_feeds(monkeypatch)
    w = P.open_windows(folder)
    assert isinstance(w.x, np.memmap) and not w.x.flags.writeable
    out = P.predict(model, w, P.PredictSettings(batch_size=3))
    # the 4 batches, then the rows-alone check: 1 of the 10 rows (an eighth at most) drawn at random (a copy)
    assert len(fed) == 4 + 1 and out.copied_batches == 0
    assert len(fed[4]) == 1 and not np.shares_memory(fed[4], w.x)
    offsets = []
    for arr in fed[:4]:
        assert np.shares_memory(arr, w.x), "a batch was copied"
        assert arr.flags.c_contiguous and arr.dtype == np.float32
        offsets.append((arr.ctypes.data - w.x.ctypes.data) // (w.x.strides[0]))
    assert offsets == [0, 3, 6, 9]  # views into the mapping, in row order


def test_non_contiguous_x_is_copied_batch_by_batch(tmp_path, monkeypatch):
    model, w, b = lin_model(tmp_path)
    big = np.random.default_rng(4).standard_normal((12, *pm.ROW)).astype(np.float32)
    x = big[::2]  # every other row: not contiguous
    fed = _record_feeds(monkeypatch)
    out = P.predict(model, x, P.PredictSettings(batch_size=4))
    assert out.copied_batches == 2 and not any(np.shares_memory(a, big) for a in fed)
    np.testing.assert_allclose(out.pred, (x.reshape(6, -1).astype(np.float64) @ w + b), rtol=1e-5, atol=1e-5)


def test_onnxruntime_wraps_a_contiguous_array_in_place():
    # What the zero-copy claim rests on: onnxruntime's tensor over a C-contiguous float32 array uses its memory.
    ort = pytest.importorskip("onnxruntime")
    x = np.zeros((4, 8), np.float32)
    assert ort.OrtValue.ortvalue_from_numpy(x).data_ptr() == x.ctypes.data


# --- determinism ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("threads,sessions", [(1, 1), (2, 1), (1, 2), (2, 2)])
def test_same_settings_give_identical_bits(tmp_path, threads, sessions):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((40, *pm.ROW)).astype(np.float32)
    folder = pm.write_windows(tmp_path / "w", x, rng.standard_normal((40, 17, 3)).astype(np.float32))
    model = pm.save(tmp_path / "conv.onnx", pm.conv(pm.conv_weights()))
    settings = P.PredictSettings(batch_size=8, intra_op_threads=threads, sessions=sessions)
    a = P.predict(model, folder, settings)
    b = P.predict(model, folder, settings)
    assert a.pred.tobytes() == b.pred.tobytes()
    ra = P.write_prediction(tmp_path / "a" / "pred.npy", a)
    rb = P.write_prediction(tmp_path / "b" / "pred.npy", b)
    assert ra["pred"]["sha256"] == rb["pred"]["sha256"]
    cmp = P.compare_predictions(ra, a.pred, rb, b.pred)
    assert cmp.equal and cmp.rule == "identical bits" and cmp.differences == ()


def test_concurrent_sessions_give_the_same_bits_as_one(tmp_path, pose):
    folder, _ = pose
    model = pm.save(tmp_path / "conv.onnx", pm.conv(pm.conv_weights()))
    one = P.predict(model, folder, P.PredictSettings(batch_size=2, sessions=1)).pred
    three = P.predict(model, folder, P.PredictSettings(batch_size=2, sessions=3)).pred
    assert one.tobytes() == three.tobytes()


def test_an_error_in_a_worker_session_reaches_the_caller(tmp_path, pose, monkeypatch):
    folder, _ = pose
    model, _, _ = lin_model(tmp_path)
    real = P._make_session
    made = []

    class Failing(_Recording):
        def run(self, names, feed, options=None):
            raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : simulated")

    def factory(*a):
        made.append(1)
        s = real(*a)
        return s if len(made) == 1 else Failing(s, [])

    monkeypatch.setattr(P, "_make_session", factory)
    msg = error_of(ValidationError, P.predict, model, folder, P.PredictSettings(batch_size=2, sessions=2))
    assert "onnxruntime failed on rows" in msg and "simulated" in msg


# --- comparing a re-run with the record ------------------------------------------------------------------------

def _record(**changes):
    doc = {"runtime": {"version": "1.32.0", "intra_op_threads": 1, "sessions": 1},
           "cpu": {"level": "x86-64-v3", "mlas": "avx2-fma3", "flags": ["avx", "avx2", "fma"]},
           "settings": P.PredictSettings(tolerance=1e-4).to_dict()}
    for path, value in changes.items():
        section, key = path.split(".")
        doc[section] = {**doc[section], key: value}
    return doc


def test_comparison_is_bit_exact_in_the_same_environment():
    a = np.array([[1.0, 2.0], [3.0, -0.0]], np.float32)
    b = a.copy()
    b[1, 1] = 0.0  # equal as numbers, different bits
    assert P.compare_predictions(_record(), a, _record(), a.copy()).equal
    cmp = P.compare_predictions(_record(), a, _record(), b)
    assert not cmp.equal and cmp.rule == "identical bits" and "1 of 4 values" in cmp.detail
    c = a.copy()
    c[0, 0] = np.nextafter(np.float32(1.0), np.float32(2.0))  # one ulp
    assert not P.compare_predictions(_record(), a, _record(), c).equal
    with pytest.raises(VerificationError, match="identical bits are required"):
        P.compare_predictions(_record(), a, _record(), c).raise_if_different()


@pytest.mark.parametrize("change,what", [
    ({"runtime.version": "1.31.0"}, "onnxruntime 1.32.0 -> 1.31.0"),
    ({"cpu.level": "x86-64-v4", "cpu.mlas": "avx512core"}, "instruction-set level x86-64-v3 -> x86-64-v4"),
    ({"cpu.flags": ["avx", "avx2"]}, "CPU features without fma"),
    ({"settings.intra_op_threads": 2}, "setting intra_op_threads 1 -> 2"),
])
def test_comparison_uses_the_recorded_tolerance_when_the_environment_differs(change, what):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((20, 3)).astype(np.float32) * 100
    near = a * (1 + 5e-5)   # within 1e-4 relative
    far = a * (1 + 5e-4)
    cmp = P.compare_predictions(_record(), a, _record(**change), near)
    assert cmp.equal and cmp.rule == "tolerance" and what in cmp.differences
    assert cmp.tolerance == 1e-4 and 0 < cmp.max_difference <= 1e-4
    far_cmp = P.compare_predictions(_record(), a, _record(**change), far)
    assert not far_cmp.equal and "beyond tolerance 0.0001" in far_cmp.detail


def test_tolerance_is_absolute_near_zero_and_nan_positions_must_match():
    a = np.array([0.0, 1e-9, np.nan, np.inf], np.float64)
    env = _record(**{"runtime.version": "2.0"})
    assert P.compare_predictions(_record(), a, env, np.array([5e-5, -5e-5, np.nan, np.inf])).equal
    assert not P.compare_predictions(_record(), a, env, np.array([2e-4, 0, np.nan, np.inf])).equal
    assert not P.compare_predictions(_record(), a, env, np.array([0, 0, 1.0, np.inf])).equal
    assert not P.compare_predictions(_record(), a, env, np.array([0, 0, np.nan, -np.inf])).equal


def test_labels_and_shapes_are_compared_exactly_whatever_the_environment():
    env = _record(**{"runtime.version": "2.0"})
    labels = np.array([0, 1, 2], np.int64)
    assert not P.compare_predictions(_record(), labels, env, np.array([0, 1, 3], np.int64)).equal
    assert P.compare_predictions(_record(), labels, env, labels.copy()).equal
    cmp = P.compare_predictions(_record(), np.zeros((2, 3)), env, np.zeros((3, 2)))
    assert not cmp.equal and "[2, 3]" in cmp.detail
    assert not P.compare_predictions(_record(), np.zeros(3), _record(), np.zeros(3, np.float32)).equal


# --- the record -----------------------------------------------------------------------------------------------

def test_record_round_trip_and_content(tmp_path, pose):
    folder, x = pose
    model, _, _ = lin_model(tmp_path)
    out = P.predict(model, folder, P.PredictSettings(batch_size=4))
    pred_path = tmp_path / "run" / "pred.npy"
    record = P.write_prediction(pred_path, out)
    on_disk = json.loads((tmp_path / "run" / "pred.json").read_text())
    assert on_disk == record and record["schema"] == "rfbench.prediction/1"
    import hashlib

    assert record["model"]["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    assert record["model"]["bytes"] == model.stat().st_size and record["model"]["path"] == "../lin.onnx"
    index = folder / "index.json"
    assert record["windows"]["index"] == {"path": "../win/index.json",
                                          "sha256": hashlib.sha256(index.read_bytes()).hexdigest()}
    assert record["x"]["sha256"] == hashlib.sha256((folder / "X.npy").read_bytes()).hexdigest()
    # the index's split and manifest references (../split.json from win/), re-based to the record's folder
    deeper = P.prediction_record(out, tmp_path / "a" / "b" / "pred.npy")
    assert deeper["windows"]["split"] == {"path": "../../split.json", "sha256": "a" * 64}
    assert deeper["windows"]["manifest"] == {"path": "../../manifest.json", "sha256": "b" * 64}
    assert record["runtime"]["version"] == P.onnxruntime_version()
    assert record["cpu"] == P.cpu_isa()
    assert record["argv"] == ["rfbench", "predict", "../lin.onnx", "--windows", "../win", "-o", "pred.npy",
                              "--batch-size", "4", "--threads", "1", "--sessions", "1", "--tolerance", "1e-05",
                              "--memory-mb", "4096", "--cpu-seconds", "3600", "--timeout", "3600.0"]
    assert record["input"]["shape"] == ["N", *pm.ROW] and record["output"]["shape"] == ["N", 51]
    loaded = P.load_prediction_record(tmp_path / "run" / "pred.json")
    assert loaded.doc == record and loaded.settings == out.settings
    assert loaded.model_path.resolve() == model.resolve() and loaded.index_path.resolve() == index.resolve()
    np.testing.assert_array_equal(loaded.load_pred(), out.pred)
    assert P.load_prediction_record(pred_path).path == tmp_path / "run" / "pred.json"  # the .npy finds its record


def test_write_refuses_existing_files_without_force(tmp_path, pose):
    from rfbench.errors import OutputExistsError

    folder, _ = pose
    model, _, _ = lin_model(tmp_path)
    out = P.predict(model, folder)
    (tmp_path / "pred.json").write_text("{}")
    with pytest.raises(OutputExistsError):
        P.write_prediction(tmp_path / "pred.npy", out)
    assert not (tmp_path / "pred.npy").exists() and (tmp_path / "pred.json").read_text() == "{}"
    P.write_prediction(tmp_path / "pred.npy", out, force=True)
    assert P.load_prediction_record(tmp_path / "pred.json").doc["pred"]["shape"] == [10, 17, 3]
    with pytest.raises(ValidationError, match=r"\.npy file"):
        P.write_prediction(tmp_path / "pred.csv", out)


def _written(tmp_path, pose):
    folder, _ = pose
    model, _, _ = lin_model(tmp_path)
    P.write_prediction(tmp_path / "pred.npy", P.predict(model, folder))
    return tmp_path / "pred.json"


def test_reader_refuses_a_changed_pred_npy(tmp_path, pose):
    rec = _written(tmp_path, pose)
    arr = np.load(tmp_path / "pred.npy")
    arr[0, 0, 0] += 1
    np.save(tmp_path / "pred.npy", arr)
    assert "not the array this record describes" in error_of(ValidationError, P.load_prediction_record, rec)
    (tmp_path / "pred.npy").unlink()
    assert "are missing" in error_of(ValidationError, P.load_prediction_record, rec)
    import os

    rec.unlink()
    os.mkfifo(rec)
    assert "not a regular file" in error_of(FormatError, P.load_prediction_record, rec)
    assert "no such file" in error_of(FormatError, P.load_prediction_record, tmp_path / "other.json")


@pytest.mark.parametrize("edit,exc,needle", [
    (lambda d: d.update(schema="rfbench.prediction/2"), SchemaError, "major version 2"),
    (lambda d: d.update(schema="rfbench.report/1"), SchemaError, "not a prediction file"),
    (lambda d: d.pop("model"), FormatError, "missing keys ['model']"),
    (lambda d: d["pred"].update(file="../pred.npy"), FormatError, "plain file name"),
    (lambda d: d["model"].update(path="/abs/model.onnx"), FormatError, "relative to the record"),
    (lambda d: d["settings"].update(batch_size=0), FormatError,
     "PredictSettings.batch_size: 0 is not allowed (1 <= x <= 65536)"),
    (lambda d: d["settings"].update(colour="red"), FormatError, "unknown keys ['colour']"),
    (lambda d: d["pred"].update(shape=[10, 51]), ValidationError, "the record says float32 [10, 51]"),
    (lambda d: d["x"].update(sha256="xyz"), FormatError, "sha256 hex digest"),
])
def test_reader_refuses_malformed_records(tmp_path, pose, edit, exc, needle):
    rec = _written(tmp_path, pose)
    doc = json.loads(rec.read_text())
    edit(doc)
    rec.write_text(json.dumps(doc))
    assert needle in error_of(exc, P.load_prediction_record, rec)


# --- the windows folder -----------------------------------------------------------------------------------------

def test_windows_folder_is_checked(tmp_path, pose):
    folder, x = pose
    w = P.open_windows(folder)
    assert w.target_shape == (17, 3) and w.target_kind == "pose" and w.n_classes is None
    assert w.axes == tuple(pm.MMFI_AXES)
    np.save(folder / "X.npy", x + 1)  # same shape, other values: the index's sha256 no longer matches
    assert "changed since `rfbench windows` wrote it" in error_of(ValidationError, P.open_windows, folder)
    deferred = P.open_windows(folder, check_x=False)  # predict hashes X while the model runs, then refuses
    assert deferred.x_sha256 is None
    model, _, _ = lin_model(tmp_path)
    for given in (folder, deferred):
        assert "changed since `rfbench windows` wrote it" in error_of(ValidationError, P.predict, model, given)
    assert "no such folder" in error_of(FormatError, P.open_windows, tmp_path / "nowhere")


def test_windows_files_must_be_regular_files(tmp_path, pose):
    import os

    folder, _ = pose
    (folder / "X.npy").unlink()
    os.mkfifo(folder / "X.npy")  # opening it for reading would wait for a writer forever
    assert "not a regular file" in error_of(FormatError, P.open_windows, folder)
    (folder / "index.json").unlink()
    os.mkfifo(folder / "index.json")
    assert "not a regular file" in error_of(FormatError, P.open_windows, folder)


@pytest.mark.parametrize("every_row", [False, True])
def test_a_model_that_reads_its_answers_off_the_batch_is_refused(tmp_path, monkeypatch, every_row):
    """A table of the test labels cut to the batch's size (its input unused) scores 1.0 over one batch: 8 rows
    drawn at random and run as one batch (with verify's variable set: every row, in a random order, in batches one
    row smaller) get other answers. (64 rows of 4 classes: a random draw keeps every label with odds of about
    1 in 65,000 for 8 rows, never for all 64.) An honest model passes the same checks."""
    from rfbench._rerun import ENV

    folder, _ = pm.gesture_windows(tmp_path / "win", n=64, classes=4)
    y = np.load(folder / "y.npy")
    model = pm.save(tmp_path / "table.onnx", pm.label_table(y, 4))
    if every_row:
        monkeypatch.setenv(ENV, "{}")
    with pytest.raises(ValidationError, match="depends on the other rows of its batch") as info:
        P.predict(model, folder)
    assert ("63 row(s)" if every_row else "8 row(s)") in str(info.value)
    w, b = pm.linear_weights(outputs=4)
    honest = P.predict(pm.save(tmp_path / "lin.onnx", pm.linear(w, b)), folder)
    assert honest.pred.shape == (64, 4)


def _npy_bytes(header: str, data: bytes = b"", version: tuple = (1, 0)) -> bytes:
    """An .npy file of ``header`` (its dict's text) and ``data``, as a forger writes one."""
    import struct

    text = header.encode("latin1")
    if version == (1, 0):
        pad = 64 - (10 + len(text) + 1) % 64
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text) + pad + 1) + text + b" " * pad + b"\n" + data
    pad = 64 - (12 + len(text) + 1) % 64
    return b"\x93NUMPY" + bytes(version) + struct.pack("<I", len(text) + pad + 1) + text + b" " * pad + b"\n" + data


@pytest.mark.parametrize("name, header, version, needle", [
    # a shape written with 5,000 minus signs: NumPy's header parser raised RecursionError, a traceback
    ("deep", "{'descr': '<f4', 'fortran_order': False, 'shape': (" + "-" * 5000 + "4, 5), }", (1, 0),
     "not a plain .npy array"),
    # no array of this shape can be made, zero rows or not: np.empty raised "array is too big"
    ("huge", "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 9223372036854775807, 9223372036854775807), }",
     (1, 0), "which no array can have"),
    # a bool is an int to NumPy's header check: reshape raised "an integer is required", a traceback out of
    # predict (its memmap path) and score --pred/--gt
    ("bool", "{'descr': '<f4', 'fortran_order': False, 'shape': (True, 17, 3), }", (1, 0),
     "a dimension that is not an integer in shape"),
    # format 3.0 was read with a private NumPy helper the installed NumPy no longer has
    ("v3", "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }", (3, 0), "format version 3.0"),
])
def test_a_forged_npy_header_is_one_line_and_exit_2(runner, tmp_path, pose, name, header, version, needle):
    """X.npy of a windows folder with a forged header: one FormatError from the one reader of .npy headers, and
    from predict one line, exit 2 — never a traceback."""
    from rfbench.io.files import parse_npy_header

    folder, _ = pose
    (folder / "X.npy").write_bytes(_npy_bytes(header, version=version))
    with open(folder / "X.npy", "rb") as fh:
        with pytest.raises(FormatError, match=needle):
            parse_npy_header(fh, "X.npy")
    assert needle in error_of(FormatError, P.open_windows, folder)
    model, _, _ = lin_model(tmp_path)
    result = runner.invoke(app, ["predict", str(model), "--windows", str(folder), "-o", str(tmp_path / "p.npy")])
    assert result.exit_code == 2 and needle in result.output and "Traceback" not in result.output, result.output


@pytest.mark.parametrize("edit,needle", [
    (lambda d: d.update(schema="rfbench.windows/9"), "major version 9"),
    (lambda d: d["x"].update(file="../X.npy"), "plain file name"),
    (lambda d: d["x"].update(shape=[10, 1, 2, 3, 8, 4]), "but the index says"),
    (lambda d: d.update(rows=d["rows"][:-1]), "one entry per row"),
    (lambda d: d.update(task="gesture"), "expected pose/pose or gesture/label"),
    (lambda d: d["x"].update(axes=["a"]), "must name each of X's 6 axes"),
    (lambda d: d.pop("y"), "missing key 'y'"),
])
def test_malformed_windows_index(tmp_path, pose, edit, needle):
    folder, _ = pose
    doc = json.loads((folder / "index.json").read_text())
    edit(doc)
    (folder / "index.json").write_text(json.dumps(doc))
    with pytest.raises(FormatError) as info:
        P.open_windows(folder)
    assert needle in str(info.value)


# --- settings ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [{"batch_size": 2.5}, {"batch_size": True}, {"tolerance": float("nan")},
                                 {"input_name": ""}, {"sessions": 17}, {"intra_op_threads": 0}])
def test_bad_settings(bad):
    with pytest.raises(ValidationError):
        P.PredictSettings(**bad)


def test_settings_argv_lists_every_set_field():
    s = P.PredictSettings(batch_size=7, intra_op_threads=2, sessions=3, input_name="x", output_name="y",
                          tolerance=1 / 3, allow_random=True, memory_mb=512, cpu_seconds=9, timeout=2.5)
    argv = P.settings_argv(s)
    assert argv == ["--batch-size", "7", "--threads", "2", "--sessions", "3", "--input", "x", "--output", "y",
                    "--tolerance", repr(1 / 3), "--allow-random", "--memory-mb", "512", "--cpu-seconds", "9",
                    "--timeout", "2.5"]
    assert float(argv[11]) == 1 / 3
    assert P.settings_from_dict(s.to_dict()) == s


# --- the CPU ------------------------------------------------------------------------------------------------------

_V1 = "cmov cx8 fpu fxsr mmx syscall sse sse2 lm"
_V2 = _V1 + " cx16 lahf_lm popcnt pni sse4_1 sse4_2 ssse3"
_V3 = _V2 + " avx avx2 bmi1 bmi2 f16c fma abm movbe xsave"
_V4 = _V3 + " avx512f avx512bw avx512cd avx512dq avx512vl avx512_vnni"


@pytest.mark.parametrize("flags,level,tier", [
    (_V1, "x86-64-v1", "sse2"), (_V2, "x86-64-v2", "sse2"), (_V2 + " avx", "x86-64-v2", "avx"),
    (_V3, "x86-64-v3", "avx2-fma3"), (_V4, "x86-64-v4", "avx512core"),
    (_V3 + " avx512f", "x86-64-v3", "avx512f"),  # AVX-512F alone: MLAS's avx512f tier, not level v4
    (_V4.replace(" fma ", " "), "x86-64-v2", "avx"),  # no FMA: neither v3 nor MLAS's AVX2/FMA3 kernels
])
def test_cpu_isa_levels(flags, level, tier):
    info = P.cpu_isa(f"processor\t: 0\nflags\t\t: {flags}\n", machine="x86_64")
    assert info["level"] == level and info["mlas"] == tier
    assert set(info["flags"]) <= set(flags.split())


def test_cpu_isa_on_other_machines():
    arm = P.cpu_isa("processor\t: 0\nFeatures\t: fp asimd sve\n", machine="aarch64")
    assert arm["level"] == "aarch64" and arm["flags"] == ["asimd", "fp", "sve"]
    assert P.cpu_isa("", machine="x86_64")["level"] == "unknown"
    here = P.cpu_isa()
    assert here["level"] != "" and here == P.cpu_isa()


def test_in_memory_x_is_hashed_in_c_order(tmp_path):
    import hashlib

    model, _, _ = lin_model(tmp_path)
    big = np.random.default_rng(8).standard_normal((9, *pm.ROW)).astype(np.float32)
    for x in (big, big[::3], np.asfortranarray(big)):
        out = P.predict(model, x, P.PredictSettings(batch_size=2))
        assert out.x["sha256"] == hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()
    assert P._array_sha256(big, block_bytes=1) == hashlib.sha256(big.tobytes()).hexdigest()  # one row a block
