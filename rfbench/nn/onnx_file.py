"""Read an ONNX model file and check it, before any runtime sees it.

An ``.onnx`` file is a protocol-buffers ``ModelProto`` (onnx/onnx.proto3). rfbench reads it itself, with a
size check first and a small bounded walk of the wire format, so that it can refuse what a replayable run
must not contain *before* onnxruntime parses or executes anything. A model is code: the walk covers every
graph it holds — the main graph, every subgraph (``If``/``Loop``/``Scan`` bodies, any ``GRAPH`` or ``GRAPHS``
attribute, at any depth), every model-local function (``FunctionProto``: its nodes and its attribute defaults,
``attribute_proto``) and the training graphs (``training_info``) — and every tensor anywhere in them
(initializers, sparse initializers, ``Constant`` values, tensor and sparse-tensor attributes). It refuses:

- **external-data tensors** (``TensorProto.data_location`` other than ``DEFAULT`` or any ``external_data``
  entry), wherever they are: their weights live in other files, found by a path inside the model: the
  model's sha256 would not cover them, and a runtime would open whatever path the file names;
- **custom or vendor operators**: a node whose domain is not a standard ONNX domain (``""`` /
  ``"ai.onnx"``, ``"ai.onnx.ml"``) and is not one of the model's own local functions. Their meaning
  depends on a runtime build rather than on the ONNX specification;
- **shadowing functions**: a local function in a domain the runtime registers operators in
  (:data:`RUNTIME_DOMAINS`: the standard ones, ``com.microsoft`` and its relatives). onnxruntime runs its own
  kernel for such a name, not the function's body, so what the model file says would not be what runs;
- **random operators** (:data:`RANDOM_OPERATORS`, and ``Dropout`` given a ``training_mode`` input), unless
  the caller allows them (``allow_random``): their output changes from run to run, so no re-run can
  reproduce the predictions.

It also extracts what :mod:`rfbench.nn.predict` checks against the data: the graph's inputs (graph inputs
that an initializer does not also define), outputs, their element types and dims (``dim_value``
integers, ``dim_param`` names, or unknown).

Bounds: the file is at most :data:`MAX_MODEL_BYTES` (protocol buffers' own 2 GiB limit), its size read with
``fstat`` before anything is allocated; every length prefix is checked against the bytes that remain;
subgraphs (``If``/``Loop``/``Scan`` bodies) nest at most :data:`MAX_GRAPH_DEPTH` deep; group wire types
(deprecated, never written by ONNX) are refused. The walk is linear in the file size and copies no tensor
data.

Field numbers follow onnx.proto3 (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
SparseTensorProto, ValueInfoProto, TypeProto, TensorShapeProto, FunctionProto, OperatorSetIdProto,
TrainingInfoProto).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from rfbench.errors import FormatError, ValidationError
from rfbench.io.files import input_errors, open_input

__all__ = ["MAX_MODEL_BYTES", "MAX_GRAPH_DEPTH", "STANDARD_DOMAINS", "RUNTIME_DOMAINS", "RANDOM_OPERATORS",
           "ELEMENT_TYPES", "TensorInfo", "ModelFile", "read_model_file", "parse_model", "load_model",
           "runtime_domain", "random_refusal"]

#: Largest model file rfbench reads: protocol buffers cannot serialise a message of 2 GiB or more.
MAX_MODEL_BYTES = 2**31 - 1
#: Deepest nesting of subgraphs (control-flow bodies inside control-flow bodies) accepted.
MAX_GRAPH_DEPTH = 32
#: Most nodes, graph inputs and outputs and tensors a model may hold, all graphs and functions together (a large
#: network holds tens of thousands): the walk keeps a little of each, and a file of two-byte empty nodes held
#: 50 million of them in 100 MB (3.7 GB of memory to walk, 83 s).
MAX_ELEMENTS = 1_000_000
#: Operator domains defined by the ONNX specification itself; anything else is a custom or vendor operator.
STANDARD_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")
#: Domains onnxruntime registers kernels or schemas in (onnxruntime/core/graph/constants.h): a model-local
#: function in one of them, or in a sub-domain of ``ai.onnx``, ``com.microsoft`` or ``com.ms``, could take the
#: name of a runtime operator, which the runtime would run instead of the function's body.
RUNTIME_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "ai.onnx.training", "ai.onnx.preview.training", "com.microsoft",
                   "com.microsoft.nchwc", "com.microsoft.experimental", "com.microsoft.dml",
                   "com.microsoft.extensions", "com.ms.internal.nhwc", "org.pytorch.aten", "com.intel.ai",
                   "com.xilinx")
_RUNTIME_PREFIXES = ("ai.onnx.", "com.microsoft.", "com.ms.")
#: Standard operators whose output is drawn at random on every run (``Dropout`` is random only when given a
#: ``training_mode`` input; the walk counts it then too).
RANDOM_OPERATORS = ("RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                    "Bernoulli")

#: ONNX ``TensorProto.DataType`` codes → NumPy dtype names (None: no NumPy equivalent rfbench accepts).
ELEMENT_TYPES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: None,  # string
    9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128",
    16: None,  # bfloat16
}
_ONNX_TYPE_NAMES = {1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
                    8: "string", 9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64",
                    14: "complex64", 15: "complex128", 16: "bfloat16"}


@dataclass(frozen=True)
class TensorInfo:
    """One graph input or output as the model declares it.

    Attributes
    ----------
    name : str
    kind : str
        ``"tensor"``, or another ONNX type (``"sequence"``, ``"map"``, ``"optional"``, ``"sparse_tensor"``),
        or ``"unknown"`` when the model declares no type.
    elem_type : int
        ONNX element type code (0 when unknown).
    dims : tuple or None
        One entry per axis: an int (``dim_value``), a str (``dim_param``, a named dynamic dim) or None
        (unknown); None when the model declares no shape (any rank).
    """

    name: str
    kind: str = "tensor"
    elem_type: int = 0
    dims: tuple | None = None

    @property
    def dtype(self) -> str | None:
        """NumPy dtype name of the element type, or None."""
        return ELEMENT_TYPES.get(self.elem_type)

    @property
    def type_name(self) -> str:
        """ONNX's name of the type, e.g. ``tensor(float)``."""
        if self.kind != "tensor":
            return self.kind
        return f"tensor({_ONNX_TYPE_NAMES.get(self.elem_type, f'type {self.elem_type}')})"

    def shape_text(self) -> str:
        """The dims as text, e.g. ``[N, 3, 114]`` (``?`` for an unknown dim), or ``any shape``."""
        if self.dims is None:
            return "any shape"
        return "[" + ", ".join("?" if d is None else str(d) for d in self.dims) + "]"

    def to_dict(self) -> dict:
        return {"name": self.name, "type": self.type_name, "dtype": self.dtype,
                "shape": None if self.dims is None else list(self.dims)}


@dataclass(frozen=True)
class ModelFile:
    """A model file read and checked by :func:`load_model`.

    Attributes
    ----------
    path : Path
    data : bytes
        The file's bytes: hand these (never the path) to the runtime, so what runs is what was hashed.
    sha256 : str
    size : int
    ir_version : int
    opsets : tuple of (domain, version)
    producer : tuple of (name, version)
    inputs, outputs : tuple of TensorInfo
        The graph inputs that no initializer defines (what a caller must feed), and the graph outputs.
    random : tuple of (op_type, node name, where)
        The random operators the model holds (present only when it was loaded with ``allow_random``).
    """

    path: Path
    data: bytes
    sha256: str
    size: int
    ir_version: int
    opsets: tuple
    producer: tuple
    inputs: tuple
    outputs: tuple
    random: tuple = ()

    def describe(self) -> dict:
        """JSON-ready description (no bytes)."""
        return {"sha256": self.sha256, "bytes": self.size, "ir_version": self.ir_version,
                "opsets": [{"domain": d, "version": v} for d, v in self.opsets],
                "producer": {"name": self.producer[0], "version": self.producer[1]}}


def read_model_file(path: str | os.PathLike, max_bytes: int = MAX_MODEL_BYTES) -> bytes:
    """The bytes of a model file, read only after its size has been checked.

    Raises
    ------
    FormatError
        Missing, not a regular file, empty, larger than ``max_bytes``, or changed size while being read.
    """
    path = Path(path)
    with input_errors(path, "model", expected="an .onnx file"):
        # the safe opener: links resolved, never waiting on a FIFO, regular files only, and in a verify re-run
        # only the model verify checked
        fh = open_input(path, f"model {path}", "an .onnx file")
    fd = fh.fileno()
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            raise FormatError(f"model {path}: empty file, expected an ONNX model")
        if size > max_bytes:
            raise FormatError(f"model {path}: {size} bytes, more than the {max_bytes}-byte limit of an ONNX file "
                              "(protocol buffers stop at 2 GiB; larger models keep weights in external data, "
                              "which rfbench does not accept)")
        chunks = []
        remaining = size + 1  # one byte more than fstat said: a file that grew is noticed
        while remaining > 0:
            block = os.read(fd, min(remaining, 1 << 24))
            if not block:
                break
            chunks.append(block)
            remaining -= len(block)
    except OSError as exc:
        raise FormatError(f"model {path}: cannot read ({exc.strerror or exc})") from None
    finally:
        fh.close()
    data = b"".join(chunks)
    if len(data) != size:
        raise FormatError(f"model {path}: changed size while being read ({size} bytes, then {len(data)}); "
                          "read it again when it is no longer being written")
    return data


# --- the protocol-buffers wire format: varints, length-delimited fields, fixed 32/64-bit fields -----------

class _Malformed(Exception):
    pass


class _TooLarge(_Malformed):
    """Past a bound of this module (its message is the whole reason)."""


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise _Malformed("a number runs past the end of its field")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            if result >> 64:  # a runtime keeps the low 64 bits: another number than this one
                raise _Malformed("a number past 64 bits")
            return result, pos
        shift += 7
        if shift >= 70:
            raise _Malformed("a number is longer than 10 bytes")


def _fields(buf: bytes, start: int, end: int):
    """Yield ``(field number, wire type, value)``: an int for varints, ``(start, stop)`` for the others.

    Read as a protocol-buffers runtime reads them, or refused: a tag is a 32-bit number (the runtime cuts a longer
    one to its low 32 bits, so a tag of 2**32 + 58 is field 7 to onnxruntime and an unknown field 2**29 + 7 to a
    reader keeping every bit: a node's domain or operator, hidden from the check, would run), a number at most
    64 bits."""
    pos = start
    while pos < end:
        at = pos
        key, pos = _varint(buf, pos, end)
        if key >> 32 or pos - at > 5:
            raise _Malformed("a field tag past 32 bits")
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _Malformed("field number 0")
        if wire == 0:
            value, pos = _varint(buf, pos, end)
            yield number, 0, value
        elif wire == 2:
            n, pos = _varint(buf, pos, end)
            if n > end - pos:
                raise _Malformed(f"a field of {n} bytes runs past the end of its message")
            yield number, 2, (pos, pos + n)
            pos += n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            if n > end - pos:
                raise _Malformed("a fixed-size field runs past the end of its message")
            yield number, wire, (pos, pos + n)
            pos += n
        else:
            raise _Malformed(f"wire type {wire} (groups are not used by ONNX)")


def _text(buf: bytes, span) -> str:
    try:
        return bytes(buf[span[0]:span[1]]).decode("utf-8")
    except UnicodeDecodeError:
        raise _Malformed("a name is not UTF-8") from None


def _int64(value: int) -> int:
    return value - (1 << 64) if value >= (1 << 63) else value


def _span(wire: int, value, what: str):
    if wire != 2:
        raise _Malformed(f"{what} has the wrong wire type")
    return value


class _Walk:
    """What the walk collects across the graph, its subgraphs and the model's local functions."""

    def __init__(self, buf: bytes):
        self.buf = buf
        self.external: list[tuple[str, str]] = []  # (tensor name, where)
        #: (domain, op_type, opsets) → the first such node's name, in the order first met; opsets: the local
        #: function's imports for a node in one, else None (the model's)
        self.operators: dict[tuple, str] = {}
        self.random: list[tuple[str, str, str]] = []  # (op_type, node name, where) of random operators
        self.place = "the main graph"
        self.opsets = None  # the imports nodes are read under (None: the model's)
        self.elements = 0

    def count(self) -> None:
        """One more node, graph input or output, or tensor (at most :data:`MAX_ELEMENTS`)."""
        self.elements += 1
        if self.elements > MAX_ELEMENTS:
            raise _TooLarge(f"holds more than {MAX_ELEMENTS:,} nodes, graph inputs and outputs and tensors; rfbench "
                            "runs models of at most that many")

    # TensorProto: 8 name, 13 external_data, 14 data_location
    def tensor(self, span) -> str:
        self.count()
        name = ""
        external = False
        for number, wire, value in _fields(self.buf, *span):
            if number == 8 and wire == 2:
                name = _text(self.buf, value)
            elif number == 13:
                external = True
            elif number == 14 and wire == 0 and value != 0:
                # DEFAULT is 0; EXTERNAL is 1, and a runtime may read any other value (an int32 enum taken from
                # a longer varint) as EXTERNAL too: only DEFAULT is accepted
                external = True
        if external:
            self.external.append((name or "(unnamed)", self.place))
        return name

    # SparseTensorProto: 1 values, 2 indices (TensorProto)
    def sparse(self, span) -> str:
        name = ""
        for number, wire, value in _fields(self.buf, *span):
            if number in (1, 2):
                got = self.tensor(_span(wire, value, "a sparse tensor"))
                if number == 1:
                    name = got
        return name

    # AttributeProto: 5 t, 6 g, 10 tensors, 11 graphs, 22 sparse_tensor, 23 sparse_tensors
    def attribute(self, span, depth: int, node: str = "") -> None:
        for number, wire, value in _fields(self.buf, *span):
            if number in (5, 10):
                self.tensor(_span(wire, value, "an attribute tensor"))
            elif number in (6, 11):
                outer = self.place
                self.place = f"a subgraph of {node or 'a node'} in {outer}"
                try:
                    self.graph(_span(wire, value, "a subgraph"), depth + 1)
                finally:
                    self.place = outer
            elif number in (22, 23):
                self.sparse(_span(wire, value, "an attribute sparse tensor"))

    # NodeProto: 1 input, 3 name, 4 op_type, 5 attribute, 7 domain
    def node(self, span, depth: int) -> None:
        self.count()
        name = op = domain = ""
        inputs: list[str] = []
        attributes = []
        for number, wire, value in _fields(self.buf, *span):
            if number == 1 and wire == 2:
                inputs.append(_text(self.buf, value))
            elif number == 3 and wire == 2:
                name = _text(self.buf, value)
            elif number == 4 and wire == 2:
                op = _text(self.buf, value)
            elif number == 7 and wire == 2:
                domain = _text(self.buf, value)
            elif number == 5:
                attributes.append(_span(wire, value, "a node attribute"))
        self.operators.setdefault((domain, op, self.opsets), name)
        if domain in ("", "ai.onnx") and (op in RANDOM_OPERATORS
                                          or (op == "Dropout" and len(inputs) > 2 and inputs[2])):
            self.random.append((op, name, self.place))
        label = f"node {name!r} ({op})" if name else f"a {op} node"
        for attribute in attributes:
            self.attribute(attribute, depth, label)

    # GraphProto: 1 node, 5 initializer, 11 input, 12 output, 15 sparse_initializer
    def graph(self, span, depth: int):
        if depth > MAX_GRAPH_DEPTH:
            raise _Malformed(f"subgraphs nest more than {MAX_GRAPH_DEPTH} deep")
        inputs, outputs, initialized = [], [], set()
        for number, wire, value in _fields(self.buf, *span):
            if number == 1:
                self.node(_span(wire, value, "a node"), depth)
            elif number == 5:
                initialized.add(self.tensor(_span(wire, value, "an initializer")))
            elif number == 15:
                initialized.add(self.sparse(_span(wire, value, "a sparse initializer")))
            elif number == 11:
                inputs.append(self.value_info(_span(wire, value, "a graph input")))
            elif number == 12:
                outputs.append(self.value_info(_span(wire, value, "a graph output")))
        return inputs, outputs, initialized

    # ValueInfoProto: 1 name, 2 type
    def value_info(self, span) -> TensorInfo:
        self.count()
        name = ""
        info = TensorInfo("", "unknown")
        for number, wire, value in _fields(self.buf, *span):
            if number == 1 and wire == 2:
                name = _text(self.buf, value)
            elif number == 2:
                info = self.type_proto(_span(wire, value, "a value type"))
        return TensorInfo(name, info.kind, info.elem_type, info.dims)

    # TypeProto: 1 tensor_type, 4 sequence, 5 map, 8 sparse_tensor, 9 optional
    def type_proto(self, span) -> TensorInfo:
        kinds = {4: "sequence", 5: "map", 8: "sparse_tensor", 9: "optional"}
        for number, wire, value in _fields(self.buf, *span):
            if number == 1:
                return self.tensor_type(_span(wire, value, "a tensor type"))
            if number in kinds:
                return TensorInfo("", kinds[number])
        return TensorInfo("", "unknown")

    # TypeProto.Tensor: 1 elem_type, 2 shape → TensorShapeProto: 1 dim → Dimension: 1 dim_value, 2 dim_param
    def tensor_type(self, span) -> TensorInfo:
        elem = 0
        dims = None
        for number, wire, value in _fields(self.buf, *span):
            if number == 1 and wire == 0:
                elem = value
            elif number == 2:
                dims = []
                for n2, w2, v2 in _fields(self.buf, *_span(wire, value, "a shape")):
                    if n2 != 1:
                        continue
                    dim = None
                    for n3, w3, v3 in _fields(self.buf, *_span(w2, v2, "a dimension")):
                        if n3 == 1 and w3 == 0:
                            dim = _int64(v3)
                        elif n3 == 2 and w3 == 2:
                            dim = _text(self.buf, v3) or None
                    dims.append(dim)
                dims = tuple(dims)
        return TensorInfo("", "tensor", elem, dims)

    # FunctionProto: 1 name, 7 node, 9 opset_import, 10 domain, 11 attribute_proto (attribute defaults)
    def function(self, span) -> tuple[str, str]:
        name = domain = ""
        opsets = []
        for number, wire, value in _fields(self.buf, *span):  # first its name and imports, keeping no node
            if number == 1 and wire == 2:
                name = _text(self.buf, value)
            elif number == 10 and wire == 2:
                domain = _text(self.buf, value)
            elif number == 9:
                opsets.append(_opset(self.buf, _span(wire, value, "a function's opset import")))
        outer = self.place, self.opsets
        self.place, self.opsets = f"local function {domain}:{name}", tuple(opsets)
        try:
            for number, wire, value in _fields(self.buf, *span):  # its nodes, then its attribute defaults
                if number == 7:
                    self.node(_span(wire, value, "a function node"), 0)
            for number, wire, value in _fields(self.buf, *span):
                if number == 11:
                    self.attribute(_span(wire, value, "a function attribute default"), 0)
        finally:
            self.place, self.opsets = outer
        return domain, name

    # TrainingInfoProto: 1 initialization, 2 algorithm (GraphProto); 3 initialization_binding, 4 update_binding
    # (string pairs, not walked)
    def training_info(self, span) -> None:
        outer = self.place
        self.place = "the model's training graphs"
        try:
            for number, wire, value in _fields(self.buf, *span):
                if number in (1, 2):
                    self.graph(_span(wire, value, "a training graph"), 1)
        finally:
            self.place = outer


def _opset(buf: bytes, span) -> tuple[str, int]:
    """An OperatorSetIdProto (1 domain, 2 version): ``(domain, version)``."""
    domain, version = "", 0
    for number, wire, value in _fields(buf, *span):
        if number == 1 and wire == 2:
            domain = _text(buf, value)
        elif number == 2 and wire == 0:
            version = _int64(value)
    return domain, version


def parse_model(data: bytes, where: str = "model") -> dict:
    """Walk a serialised ``ModelProto``; return its parts as a dict (see :func:`load_model` for the checks).

    Keys: ``ir_version``, ``opsets`` (list of (domain, version)), ``producer`` ((name, version)), ``inputs``
    and ``outputs`` (TensorInfo lists; inputs exclude initialized names), ``external`` (names of tensors
    with external data; ``external_places``: (name, where) pairs), ``operators`` (every distinct (domain,
    op_type, opsets) → the first such node's name, in the order first met, subgraphs, functions and training
    graphs included; opsets: a local function's own imports, None for the model's), ``elements`` (nodes, graph
    inputs and outputs and tensors: at most :data:`MAX_ELEMENTS`), ``functions`` (set of (domain, name)) and
    ``random`` ((op_type, node name, where) of every random operator).

    Raises
    ------
    FormatError
        Not a protocol-buffers ModelProto with exactly one graph.
    """
    walk = _Walk(data)
    ir_version = 0
    opsets, functions = [], set()
    producer = ["", ""]
    graphs = []
    try:
        for number, wire, value in _fields(data, 0, len(data)):
            if number == 1 and wire == 0:
                ir_version = value
            elif number == 2 and wire == 2:
                producer[0] = _text(data, value)
            elif number == 3 and wire == 2:
                producer[1] = _text(data, value)
            elif number == 7:
                graphs.append(_span(wire, value, "the graph"))
            elif number == 8:
                opsets.append(_opset(data, _span(wire, value, "an opset import")))
            elif number == 25:
                functions.add(walk.function(_span(wire, value, "a local function")))
            elif number == 20:
                walk.training_info(_span(wire, value, "a training-info entry"))
        if len(graphs) != 1:
            raise _Malformed("no graph" if not graphs else f"{len(graphs)} graphs")
        inputs, outputs, initialized = walk.graph(graphs[0], 0)
    except _TooLarge as exc:
        raise FormatError(f"{where}: {exc}") from None
    except _Malformed as exc:
        raise FormatError(f"{where}: not an ONNX model ({exc})") from None
    if ir_version == 0:
        raise FormatError(f"{where}: not an ONNX model (no ir_version)")
    return {"ir_version": ir_version, "opsets": opsets, "producer": tuple(producer),
            "inputs": [i for i in inputs if i.name not in initialized], "outputs": outputs,
            "external": [n for n, _ in walk.external], "external_places": walk.external,
            "operators": walk.operators, "elements": walk.elements,
            "functions": functions, "random": walk.random}


def _imported(opsets, domain: str) -> int | None:
    """The version of ``domain`` in ``opsets`` ((domain, version) pairs; ``''`` and ``ai.onnx`` are one domain),
    or None when it is not imported (or imported twice, at two versions)."""
    names = ("", "ai.onnx") if domain in ("", "ai.onnx") else (domain,)
    versions = {v for d, v in opsets if d in names}
    return versions.pop() if len(versions) == 1 else None


def random_refusal(where: str, random) -> ValidationError:
    """The error for a model holding the random operators ``random`` ((op_type, node name, where) each)."""
    op, node, place = random[0]
    label = f"node {node!r} ({op})" if node else f"a {op} node"
    more = f" and {len(random) - 1} more" if len(random) > 1 else ""
    return ValidationError(f"{where}: {label} in {place}{more} draws random numbers, so its predictions cannot be "
                           "reproduced; pass `allow_random` to run it anyway (the record says so, and "
                           "`rfbench verify` then answers NOT REPRODUCIBLE)")


def runtime_domain(domain: str) -> bool:
    """True when onnxruntime registers operators in ``domain`` (:data:`RUNTIME_DOMAINS` and their families): a
    model-local function there could shadow a runtime operator."""
    return domain in RUNTIME_DOMAINS or domain.startswith(_RUNTIME_PREFIXES)


def load_model(path: str | os.PathLike, max_bytes: int = MAX_MODEL_BYTES, allow_random: bool = False) -> ModelFile:
    """Read, hash and check an ONNX model file (nothing is executed).

    Parameters
    ----------
    path : path-like
        The ``.onnx`` file.
    max_bytes : int
        Size limit, checked before the file is read (default :data:`MAX_MODEL_BYTES`).
    allow_random : bool
        Accept random operators (:data:`RANDOM_OPERATORS`); their predictions cannot be reproduced.

    Returns
    -------
    ModelFile

    Raises
    ------
    FormatError
        Unreadable, too large, or not an ONNX model.
    ValidationError
        The model keeps a tensor in external data (anywhere: a subgraph, a local function or its attribute
        defaults), uses a custom or vendor operator domain, defines a local function in a domain the runtime
        registers operators in, holds a random operator without ``allow_random``, or has no input or output.
    """
    path = Path(path)
    where = f"model {path}"
    data = read_model_file(path, max_bytes)
    parts = parse_model(data, where)
    if parts["external_places"]:
        places = parts["external_places"]
        names = ", ".join(repr(n) for n, _ in places[:3])
        more = f" and {len(places) - 3} more" if len(places) > 3 else ""
        raise ValidationError(f"{where}: tensor {names}{more} keeps its data in an external file (in "
                              f"{places[0][1]}); rfbench runs only self-contained models (save the model with all "
                              "tensors inside the .onnx file: torch.onnx.export(..., external_data=False), "
                              "onnx.save(..., save_as_external_data=False))")
    local = parts["functions"]
    shadowing = sorted(f for f in local if runtime_domain(f[0]))
    if shadowing:
        domain, name = shadowing[0]
        raise ValidationError(f"{where}: local function {name!r} is defined in domain {domain!r}, where onnxruntime "
                              "registers operators of its own: it would run its own kernel for that name, not the "
                              "function's body; give the model's functions a domain of their own (such as "
                              "'local.functions')")
    from rfbench.nn.onnx_operators import ONNX_ML_OPERATORS, ONNX_OPERATORS, defined_at

    for (domain, op, opsets), node in parts["operators"].items():
        if (domain, op) in local:
            continue
        label = f"node {node!r}" if node else "a node"
        if domain in STANDARD_DOMAINS:
            if op in (ONNX_ML_OPERATORS if domain == "ai.onnx.ml" else ONNX_OPERATORS):
                version = _imported(parts["opsets"] if opsets is None else opsets, domain)
                if version is not None and defined_at(domain, op, version):
                    continue
                whose = "the model" if opsets is None else "its local function"
                if version is None:
                    raise ValidationError(f"{where}: {label} uses operator {op!r} of domain {domain!r}, but {whose} "
                                          "imports no single version of that domain's opset, so what the operator "
                                          "means is not stated; export the model with its opset imports")
                raise ValidationError(f"{where}: {label} uses operator {op!r} of domain {domain!r}, where {whose} "
                                      f"imports opset {version}, which does not define it (the ONNX standard defines "
                                      "it at other versions): the runtime would run a kernel of its own for the "
                                      "name; export the model at an opset that defines the operator")
            raise ValidationError(f"{where}: {label} uses operator {op!r} in domain {domain!r}, which is no ONNX "
                                  "operator: onnxruntime registers kernels of its own there (such as "
                                  "SimplifiedLayerNormalization), whose meaning depends on its build, so rfbench "
                                  "does not run them")
        raise ValidationError(f"{where}: {label} uses operator {op!r} from domain {domain!r}, not a standard ONNX "
                              f"domain ({', '.join(repr(d) for d in STANDARD_DOMAINS)}); custom and vendor "
                              "operators depend on a runtime build, so rfbench does not run them")
    if parts["random"] and not allow_random:
        raise random_refusal(where, parts["random"])
    if not parts["inputs"]:
        raise ValidationError(f"{where}: the graph has no input to feed")
    if not parts["outputs"]:
        raise ValidationError(f"{where}: the graph has no output")
    return ModelFile(path=path, data=data, sha256=hashlib.sha256(data).hexdigest(), size=len(data),
                     ir_version=parts["ir_version"], opsets=tuple(parts["opsets"]), producer=parts["producer"],
                     inputs=tuple(parts["inputs"]), outputs=tuple(parts["outputs"]), random=tuple(parts["random"]))
