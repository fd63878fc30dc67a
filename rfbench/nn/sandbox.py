"""onnxruntime in a bounded child process: a model is untrusted code, so ``rfbench predict`` never runs it in its
own process.

Each onnxruntime session of a run is a child process, ``python -I -m rfbench.nn.sandbox LIMITS`` (no shell),
started in an empty temporary folder. Before it imports NumPy or onnxruntime, the child lowers its own limits
(it never raises one it inherited): its address space (``RLIMIT_AS``, :attr:`PredictSettings.memory_mb
<rfbench.nn.predict_settings.PredictSettings.memory_mb>`) and its CPU time (``RLIMIT_CPU``, ``cpu_seconds``),
and asks the kernel to kill it when the process that started it ends (``PR_SET_PDEATHSIG``). The parent keeps
the wall-clock limit (``timeout``): a timer kills every child of the run when it expires. The child starts
without any ``ORT_*`` variable of the parent's environment, and its session never takes options from the
model's ``ort_config`` metadata: its options are those the record names.

The parent sends the model's bytes (those it read, hashed and checked: what runs is what was hashed), then one
batch of ``X`` at a time — straight from the memory-mapped array, without a copy — and reads each batch's
output back; so the parent's memory for ``X`` is one batch, and the child's too. The protocol is frames on
the child's standard input and output (8-byte little-endian length, then the bytes): a JSON header, and for a
model or an array a second frame of raw bytes. The child moves its standard output to its standard error
before onnxruntime is imported, so nothing the runtime prints can corrupt a frame; its standard error goes
to a file the parent reads the end of when the child dies.

When a limit is hit the parent raises :class:`LimitExceeded` (exit 2): one line naming the limit and the
setting that raises it. The caller writes nothing then: predictions are written only once every batch has
come back.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from typing import TYPE_CHECKING, Any, Callable

from rfbench.errors import ValidationError

if TYPE_CHECKING:
    from rfbench.nn.onnx_file import ModelFile
    from rfbench.nn.predict_settings import PredictSettings

__all__ = ["LimitExceeded", "Sandbox", "SandboxSession", "ALLOCATION_FAILURES"]

_LENGTH = struct.Struct("<Q")
_MAX_HEADER = 1 << 20
_PR_SET_PDEATHSIG = 1
#: Words with which an allocation that the address-space limit refused comes back: onnxruntime's arena,
#: C++'s ``std::bad_alloc``, Python's MemoryError, NumPy.
ALLOCATION_FAILURES = ("Failed to allocate memory", "bad_alloc", "bad allocation", "MemoryError",
                       "Unable to allocate", "Cannot allocate memory", "out of memory")
_NUMERIC_KINDS = "biuf"


class LimitExceeded(ValidationError):
    """The model hit one of its limits (``limit``: ``"memory_mb"``, ``"cpu_seconds"`` or ``"timeout"``)."""

    def __init__(self, message: str, limit: str):
        super().__init__(message)
        self.limit = limit


class _Died(Exception):
    pass


# --- frames -----------------------------------------------------------------------------------------------

def _write_frame(fh, data) -> None:
    view = memoryview(data)
    view = view.cast("B") if view.nbytes else memoryview(b"")  # (a view with a zero in its shape cannot be cast)
    fh.write(_LENGTH.pack(view.nbytes))
    fh.flush()
    # straight from the caller's memory by the system call, never copied into the writer's buffer first: a batch of
    # a memory-mapped X cut short meanwhile is then an error (EFAULT) here, not a SIGBUS in a copy
    fd, done = fh.fileno(), 0
    while done < view.nbytes:
        done += os.write(fd, view[done:])


def _read_exact(fh, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = fh.readinto(view[got:])
        if not k:
            raise _Died()
        got += k
    return buf


def _read_frame(fh, cap: int) -> bytearray:
    head = fh.read(_LENGTH.size)
    if len(head) != _LENGTH.size:
        raise _Died()
    (n,) = _LENGTH.unpack(head)
    if n > cap:
        raise ValueError(f"a frame of {n} bytes, more than the {cap} expected")
    return _read_exact(fh, n)


def _send(fh, header: dict, payload=None) -> None:
    _write_frame(fh, json.dumps(header).encode("utf-8"))
    if payload is not None:
        _write_frame(fh, payload)
    fh.flush()


def _recv_header(fh) -> dict:
    doc = json.loads(bytes(_read_frame(fh, _MAX_HEADER)).decode("utf-8"))
    if not isinstance(doc, dict):
        raise ValueError("a header that is not an object")
    return doc


# --- the parent's side ------------------------------------------------------------------------------------

class _Named:
    def __init__(self, name: str):
        self.name = name


class Sandbox:
    """The children of one prediction run, their shared wall-clock deadline and their temporary folder.

    Use as a context manager: leaving it ends every child (closing its input, then killing one that has not
    exited within a second) and removes the folder, on every exit path.
    """

    def __init__(self, settings: PredictSettings, where: str):
        self.settings = settings
        self.where = where
        self.folder = tempfile.mkdtemp(prefix="rfbench-predict-")
        self.cwd = os.path.join(self.folder, "run")
        os.mkdir(self.cwd, 0o700)
        # the children's temporary folder: onnxruntime writes $TMPDIR/.ses (following a link planted there, in a
        # shared /tmp), which the run would otherwise leave behind; removed with the box's folder
        self.tmp = os.path.join(self.folder, "tmp")
        os.mkdir(self.tmp, 0o700)
        self.sessions: list[SandboxSession] = []
        self.lock = threading.Lock()
        self.expired = threading.Event()
        self.closed = False
        self.version = ""  # onnxruntime's, as the first child reports it
        self.kept: dict[str, list[SandboxSession]] = {}  # sessions_for: a model's sessions, by its sha256
        self.timer = threading.Timer(settings.timeout, self._expire)
        self.timer.daemon = True
        self.timer.start()

    def _expire(self) -> None:
        self.expired.set()
        with self.lock:
            for s in self.sessions:
                s.kill()

    def session(self, model: ModelFile) -> SandboxSession:
        """A child process with an onnxruntime session over ``model``'s bytes, ready to run batches."""
        with self.lock:
            if self.expired.is_set() or self.closed:
                raise self.limit("timeout")
            s = SandboxSession(self, len(self.sessions))
            self.sessions.append(s)
        s.load(model)
        return s

    def sessions_for(self, model: ModelFile, count: int) -> list[SandboxSession]:
        """``count`` sessions over ``model``, the children started for it by an earlier call reused: a run of
        many predictions with one model (``rfbench robustness``) starts its children once, and the box's limits
        (its wall-clock deadline included) bound the whole run."""
        kept = self.kept.setdefault(model.sha256, [])
        while len(kept) < count:
            kept.append(self.session(model))
        return kept[:count]

    def limit(self, which: str, detail: str = "") -> LimitExceeded:
        st = self.settings
        detail = f" ({detail})" if detail else ""
        if which == "timeout":
            text = (f"the model ran past the `timeout` limit of {st.timeout:g} s of wall-clock time{detail}; raise "
                    "`timeout` if it needs longer")
        elif which == "cpu_seconds":
            text = (f"the model used up the `cpu_seconds` limit of {st.cpu_seconds} s of CPU time{detail}"
                    f"{_inherited('RLIMIT_CPU', st.cpu_seconds, 1, 's')}; raise `cpu_seconds` if it needs more")
        else:
            text = (f"the model ran out of memory under the `memory_mb` limit of {st.memory_mb} MiB of address "
                    f"space{detail}{_inherited('RLIMIT_AS', st.memory_mb, 1 << 20, 'MiB')}; raise `memory_mb` if "
                    "it needs more")
        return LimitExceeded(f"{self.where}: {text}", which)

    def close(self) -> None:
        self.timer.cancel()
        with self.lock:
            self.closed = True
            sessions = list(self.sessions)
        for s in sessions:
            s.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SandboxSession:
    """One child process holding one onnxruntime session; :meth:`run` has the signature of
    ``onnxruntime.InferenceSession.run`` for one input and one output."""

    def __init__(self, box: Sandbox, number: int):
        self.box = box
        st = box.settings
        self.stderr_path = os.path.join(box.folder, f"stderr-{number}.txt")
        spec = {"memory_mb": st.memory_mb, "cpu_seconds": st.cpu_seconds, "threads": st.intra_op_threads,
                "parent": os.getpid()}
        self.inputs: list = []
        self.outputs: list = []
        self.version = ""
        # the child does no linear algebra with NumPy (onnxruntime has its own kernels): one BLAS thread, which
        # starts a third faster than a pool, and no other effect on what it computes; no ORT_* variable, which
        # onnxruntime reads on its own: its C++ session reads ORT_LOAD_CONFIG_FROM_MODEL=1 whatever the Python
        # session was told, and would let a model set its session options from its metadata
        env = {k: v for k, v in os.environ.items() if not k.startswith("ORT_")}
        env["OPENBLAS_NUM_THREADS"] = "1"
        env.update(TMPDIR=box.tmp, TMP=box.tmp, TEMP=box.tmp)
        with open(self.stderr_path, "wb") as err:
            # no shell; -I: neither the environment's PYTHON* variables nor the working folder reach the child
            self.proc = subprocess.Popen([sys.executable, "-I", "-m", "rfbench.nn.sandbox", json.dumps(spec)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd=box.cwd,
                                         close_fds=True, env=env)

    def kill(self) -> None:
        try:
            self.proc.kill()
        except OSError:  # pragma: no cover - already reaped
            pass

    def close(self) -> None:
        for fh in (self.proc.stdin, self.proc.stdout):
            try:
                fh.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()

    def _exchange(self, header: dict, payload=None, check=None) -> tuple[dict, bytearray | None]:
        try:
            _send(self.proc.stdin, header, payload)
            reply = _recv_header(self.proc.stdout)
            data = None
            if reply.get("bytes") is not None:
                # the size the header declares, checked against its dtype and shape and against the child's own
                # address space, and the shape and dtype by the caller's ``check``, before anything is allocated
                # for it; then the frame must be exactly that size
                size = _declared_size(reply, self.box.settings.memory_mb << 20)
                if check is not None:
                    import numpy as np

                    try:
                        check(tuple(reply["shape"]), np.dtype(str(reply["dtype"])))
                    except ValidationError:
                        self.kill()  # its output is left unread in the pipe: the child cannot serve another batch
                        raise
                data = _read_frame(self.proc.stdout, size)
                if len(data) != size:
                    raise ValueError(f"{len(data)} bytes where the header declared {size}")
        except ValidationError:
            raise
        except OSError as exc:
            if exc.errno == errno.EFAULT:  # the batch's own memory: a mapped file cut short since it was opened
                self.kill()
                raise ValidationError(f"{self.box.where}: a batch of the input could not be read (its file, "
                                      "mapped, was cut short while the model ran)") from None
            raise self._death() from None
        except _Died:
            raise self._death() from None
        except ValueError as exc:  # the child sent something that is not the protocol: treat as a crash
            self.kill()
            raise ValidationError(f"{self.box.where}: the process running the model answered out of protocol "
                                  f"({exc})") from None
        if "error" in reply:
            kind, message = reply.get("error"), str(reply.get("message", ""))[:400]
            if kind == "memory":
                raise self.box.limit("memory_mb", _which_node(message))
            raise RuntimeError(message)
        return reply, data

    def _death(self) -> Exception:
        if self.box.expired.is_set():
            self.kill()
            self.proc.wait()
            return self.box.limit("timeout")
        try:
            code = self.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.wait()
        if self.box.expired.is_set():
            return self.box.limit("timeout")
        tail = _tail(self.stderr_path)
        if code == -signal.SIGXCPU:  # RLIMIT_CPU's soft limit
            return self.box.limit("cpu_seconds")
        if any(word in tail for word in ALLOCATION_FAILURES):
            return self.box.limit("memory_mb", _which_node(tail))
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        last = f": {tail[-200:]}" if tail else ""
        return ValidationError(f"{self.box.where}: the process running the model ended ({how}){last}; if the model "
                               f"needs more than the `memory_mb` limit of {self.box.settings.memory_mb} MiB, raise it")

    def load(self, model: ModelFile) -> None:
        try:
            reply, _ = self._exchange({"model": model.size}, model.data)
        except RuntimeError as exc:
            raise ValidationError(f"model {model.path}: onnxruntime cannot load it: {exc}") from None
        self.inputs = [str(n) for n in reply.get("inputs", [])]
        self.outputs = [str(n) for n in reply.get("outputs", [])]
        self.version = str(reply.get("version", ""))
        self.box.version = self.box.version or self.version

    def get_inputs(self) -> list:
        return [_Named(n) for n in self.inputs]

    def run(self, names, feed: dict, check: Callable[[tuple, Any], None] | None = None) -> list:
        """The output for ``feed``; ``check(shape, dtype)``, in the place of onnxruntime's run options, is applied
        to the output's header before its bytes are read (it raises ValidationError to refuse the output, and the
        child is then ended: its output stays unread)."""
        import numpy as np

        ((name, arr),) = feed.items()
        arr = np.ascontiguousarray(arr)  # a view when it already is (the batches of a memory-mapped X are)
        reply, data = self._exchange({"run": list(names), "input": name, "dtype": arr.dtype.str,
                                      "shape": list(arr.shape)}, arr, check)
        if data is None:
            raise ValidationError(f"{self.box.where}: the process running the model answered out of protocol "
                                  "(no output)")
        return [np.frombuffer(data, dtype=np.dtype(reply["dtype"])).reshape(tuple(reply["shape"]))]


def _declared_size(reply: dict, cap: int) -> int:
    """The bytes an output header declares: a plain numeric dtype, a shape of at most 32 non-negative ints, and
    ``bytes`` equal to their product, at most ``cap`` (ValueError otherwise)."""
    import numpy as np

    try:
        dtype = np.dtype(str(reply["dtype"]))
        shape = reply["shape"]
        ok = (dtype.kind in _NUMERIC_KINDS and not dtype.fields and not dtype.subdtype and isinstance(shape, list)
              and len(shape) <= 32 and all(type(d) is int and d >= 0 for d in shape))
    except (KeyError, TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"an output header {str(reply)[:200]}")
    size = dtype.itemsize
    for d in shape:
        size *= d
    if size != reply["bytes"] or size > cap:
        raise ValueError(f"an output of {reply['bytes']} bytes for {dtype} {shape} (at most {cap})")
    return size


def _which_node(message: str) -> str:
    """``while running a ConstantOfShape node`` from onnxruntime's message, or nothing."""
    import re

    found = re.search(r"running ([A-Za-z0-9_.]{1,64}) node", message)
    return f"while running a {found.group(1)} node" if found else ""


def _inherited(name: str, value: int, unit: int, words: str) -> str:
    """What the child's limit really was when this process runs under a lower one (the child never raises it)."""
    try:
        import resource

        soft, hard = resource.getrlimit(getattr(resource, name))
    except (ImportError, AttributeError, OSError, ValueError):  # pragma: no cover - not POSIX
        return ""
    lowest = min((v for v in (soft, hard) if v != resource.RLIM_INFINITY), default=None)
    if lowest is None or lowest >= value * unit:
        return ""
    return f", lowered to {lowest // unit} {words} by the limit rfbench itself runs under"


def _tail(path: str, n: int = 4096) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - n))
            text = fh.read(n).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


# --- the child's side -------------------------------------------------------------------------------------

def _lower(limit: int, value: int, grace: int = 0) -> None:
    """Set ``limit`` to ``value`` (soft) and ``value + grace`` (hard), never above what this process inherited."""
    import resource

    soft, hard = resource.getrlimit(limit)
    for inherited in (soft, hard):
        if inherited != resource.RLIM_INFINITY:
            value = min(value, inherited)
    top = value + grace
    if hard != resource.RLIM_INFINITY:
        top = min(top, hard)
    resource.setrlimit(limit, (value, top))


def _apply_limits(spec: dict) -> None:
    import resource

    _lower(resource.RLIMIT_AS, int(spec["memory_mb"]) << 20)
    # SIGXCPU at the soft limit ends the child (its default action); SIGKILL a second later if it did not
    _lower(resource.RLIMIT_CPU, int(spec["cpu_seconds"]), grace=1)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover
            pass
    if os.getppid() != int(spec["parent"]):  # the parent ended before the request took effect
        raise SystemExit(1)


def _error(exc: BaseException) -> dict:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())[:1000]
    memory = isinstance(exc, MemoryError) or any(word in text for word in ALLOCATION_FAILURES)
    return {"error": "memory" if memory else "onnxruntime", "message": text if memory else " ".join(str(exc).split())}


def _serve(spec: dict, proto_in, proto_out) -> None:
    import numpy as np
    import onnxruntime as ort

    from rfbench.nn.runtime import _PROVIDERS, _session_options

    header = _recv_header(proto_in)
    model = bytes(_read_frame(proto_in, int(header["model"])))
    try:
        # read_config_from_model=0 (and no ORT_LOAD_CONFIG_FROM_MODEL in this process's environment): a model's
        # ``ort_config`` metadata never sets the session's options (threads, execution mode, graph optimisation,
        # profiling); they are rfbench's, as the record names them
        session = ort.InferenceSession(model, sess_options=_session_options(ort, int(spec["threads"])),
                                       providers=_PROVIDERS, read_config_from_model=0)
    except Exception as exc:  # onnxruntime raises its own types from C++
        _send(proto_out, _error(exc))
        return
    del model
    options = ort.RunOptions()
    options.log_severity_level = 4
    _send(proto_out, {"inputs": [i.name for i in session.get_inputs()],
                      "outputs": [o.name for o in session.get_outputs()], "version": ort.__version__})
    while True:
        try:
            header = _recv_header(proto_in)
        except _Died:
            return  # the parent closed the pipe: done
        dtype = np.dtype(header["dtype"])
        shape = tuple(int(d) for d in header["shape"])
        data = _read_frame(proto_in, int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
        feed = np.frombuffer(data, dtype=dtype).reshape(shape)
        try:
            (out,) = session.run(header["run"], {header["input"]: feed}, options)
            out = np.ascontiguousarray(np.asarray(out))
        except Exception as exc:
            _send(proto_out, _error(exc))
            continue
        _send(proto_out, {"dtype": out.dtype.str, "shape": list(out.shape), "bytes": out.nbytes}, out)


def _child_main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    _apply_limits(spec)
    # the protocol keeps its own descriptors; stdout becomes stderr, so nothing printed reaches a frame
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    try:
        _serve(spec, proto_in, proto_out)
    except MemoryError as exc:
        try:
            _send(proto_out, _error(exc))
        except OSError:
            pass
        return 3
    except (BrokenPipeError, _Died):
        return 0
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a child process
    raise SystemExit(_child_main(sys.argv[1:]))
