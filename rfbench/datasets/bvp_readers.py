"""Reading a BVP tree's files for ``ingest widar``: each file read once, hashed (sha256) and judged (T, or the
problem) from the same bytes (:func:`_read_batch`, on the ingest's threads), and reader processes for a large tree,
which run the very same function while the parent walks on.

Per file the work is a read, a sha256 and a header: short steps under one interpreter lock, which the walk needs
too; a process per core takes them off it. The parent starts ``n`` children (``python -I -m
rfbench.datasets.bvp_readers``) and serves each from a thread of its own: a batch (each file's path as given and
its real path, as the walk found them) goes down the child's input as one JSON line, the child's answer (each
file's sha256, T or the problem, as ``_read_batch`` gives them) comes back as one, and fulfils the batch's future.
A child ignores Ctrl-C and ends when its input closes, so a parent killed outright leaves none behind. In a
verify re-run a child inherits the closed world, and its reads go through the careful reader as the threads' do.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import stat
import subprocess
import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Sequence

from rfbench.datasets.bvp_mat import MAX_BVP_BYTES, bvp_frames
from rfbench.datasets.tree import Entry
from rfbench.errors import FormatError

__all__ = ["BvpReaders", "MIN_FILES"]

#: Files the walk must have placed before reader processes are started (below, threads read them all: whole
#: processes on two cores, bvp4000's 3,978 files took 0.50-0.68 s on threads alone, 0.59-0.71 s with processes
#: for the files after the 2,000th; bvp43k 2.7-2.9 s against 3.6-4.05 s on threads).
MIN_FILES = 8000


@dataclass(frozen=True)
class _Read:
    sha256: str
    frames: int | None
    error: str | None
    generated: bool = False  # the MAT header's text is the generator's (:data:`GENERATED_TEXT`)


#: What ``rfbench generate widar --kind bvp`` writes into each profile's 116-byte MAT header text: a file that
#: says it is generated is, whether or not the tree's marker file is still there.
GENERATED_TEXT = b"rfbench synthetic"


def _read_one(entry: Entry) -> _Read:
    buf = _read_plain(entry.real)
    if buf is None:  # anything unusual: the careful path below, which says what it is
        return _read_careful(entry)
    return _judged(buf)


def _judged(buf: bytes) -> _Read:
    """A file's sha256 and its T, or the problem its bytes have (one line, no path)."""
    digest = hashlib.sha256(buf).hexdigest()
    try:
        frames = bvp_frames(buf, "")
    except FormatError as exc:
        return _Read(digest, None, str(exc).removeprefix(": "))
    return _Read(digest, frames, None, GENERATED_TEXT in bytes(buf[:116]))


def _read_plain(real: str) -> bytes | None:
    """The bytes of the regular file at ``real`` (opened as :func:`rfbench.io.files.read_regular` opens it: no
    link followed, never waiting on a FIFO), or None when it is anything else — not there, not a regular file,
    past :data:`MAX_BVP_BYTES` — or this is a verify re-run (whose reads go through the careful path)."""
    from rfbench.io.files import READ_FLAGS, read_fd
    from rfbench.io.world import active

    if active() is not None:
        return None
    try:
        fd = os.open(real, READ_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        size = info.st_size
        if not stat.S_ISREG(info.st_mode) or size > MAX_BVP_BYTES:
            return None
        return read_fd(fd, size)  # as read_regular reads: at most the size fstat gave
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_careful(entry: Entry) -> _Read:
    from rfbench.io.files import NotRegularFile, input_errors, read_regular

    try:
        # The walk resolved the entry's real path (and refused links out of the tree): open that, without
        # following a link, rather than resolving the path again for every file.
        with input_errors(entry.path, expected="a BVP .mat file"):
            try:
                buf = read_regular(entry.real, MAX_BVP_BYTES, "", follow=False)
            except NotRegularFile:
                raise FormatError(f"{entry.path}: not a regular file, expected a BVP .mat file") from None
    except FormatError as exc:
        text = str(exc).strip()
        for prefix in (f"{entry.path}: ", f"{entry.real}: "):
            if text.startswith(prefix):
                return _Read("", None, text[len(prefix):])
        return _Read("", None, text)
    return _judged(buf)


def _read_batch(entries: list[Entry]) -> list[_Read]:
    return [_read_one(e) for e in entries]


class _Entry:
    """What ``_read_one`` needs of a walk's entry: the path as given (for messages) and the real path."""

    __slots__ = ("path", "real")

    def __init__(self, path: str, real: str):
        self.path, self.real = path, real


class _Started:
    """Whether a reader process said it is ready, once its first line is read (:meth:`wait` blocks until then)."""

    def __init__(self):
        self._event = threading.Event()
        self._ready = False

    def decide(self, ready: bool) -> None:
        self._ready = ready
        self._event.set()

    def wait(self) -> bool:
        self._event.wait()
        return self._ready


class BvpReaders:
    """``n`` reader processes; :meth:`submit` a batch of walk entries, get a future of its ``_Read`` results."""

    def __init__(self, n: int):
        self.n = n
        self.procs: list[subprocess.Popen] = []
        self.threads: list[threading.Thread] = []
        self.work: queue.Queue = queue.Queue()

    def start(self) -> bool:
        """Start the children; False (and nothing left running) when none could start. Their start-up is not
        waited for (the walk goes on while they import): each child's first line says it is ready, which its
        receiving thread reads before the first answer; the batches of a child that ends (or says anything else)
        instead are read by that thread, as the ingest's threads read them."""
        try:
            for _ in range(self.n):
                self.procs.append(subprocess.Popen([sys.executable, "-I", "-m", __name__], stdin=subprocess.PIPE,
                                                   stdout=subprocess.PIPE))
        except OSError:
            self.close()
            return False
        for proc in self.procs:  # per child a thread sending batches and one receiving the answers
            inflight: queue.Queue = queue.Queue(maxsize=1)
            started = _Started()
            for serve in (self._send, self._receive):
                thread = threading.Thread(target=serve, args=(proc, inflight, started), daemon=True)
                thread.start()
                self.threads.append(thread)
        return True

    def submit(self, batch: Sequence) -> Future:
        future: Future = Future()
        self.work.put((future, [[e.path_text(), e.real] for e in batch]))
        return future

    def _send(self, proc: subprocess.Popen, inflight: queue.Queue, started: "_Started") -> None:
        """Send batches down the child's input as they come, while it reads earlier ones: the next batch waits in
        its input, so the child never waits for the parent between two batches. At most three are out (one read
        by the child, one in its input, one whose future waits for room in ``inflight``). Nothing is sent before
        the child has said it is ready, and nothing to a child that said anything else (its batches go on to the
        receiving thread, which reads them here): a child whose answers nobody reads would stop reading its
        input, and a send would wait for ever."""
        while True:
            item = self.work.get()
            if item is None:
                inflight.put(None)
                return
            future, batch = item
            if not started.wait():
                inflight.put((future, batch, None))
                continue
            try:
                proc.stdin.write(json.dumps(batch).encode() + b"\n")
                proc.stdin.flush()
            except BaseException as exc:  # (raised where the batch's results are asked for, if the child started)
                inflight.put((future, batch, exc))
                continue
            inflight.put((future, batch, None))

    def _receive(self, proc: subprocess.Popen, inflight: queue.Queue, started: "_Started") -> None:
        """Fulfil each sent batch's future with the child's answer, in the order the batches were sent (a
        thread of its own, so the answers are always read while a send waits for room in the child's input).
        First the child's first line: ``ready``, or it is given no batch (its input is closed: it ends)."""
        ready = proc.stdout.readline().strip() == b"ready"
        if not ready:
            try:
                proc.stdin.close()
            except OSError:
                pass
        started.decide(ready)
        while True:
            item = inflight.get()
            if item is None:
                return
            future, batch, failed = item
            try:
                if not ready:  # a child that did not start (it ended, or said something else): read here
                    future.set_result(_read_batch([_Entry(path, real) for path, real in batch]))
                    continue
                if failed is not None:
                    raise failed
                line = proc.stdout.readline()
                if not line:
                    raise RuntimeError("a BVP reader process ended before answering (see its error above)")
                future.set_result([_Read(*r) for r in json.loads(line)])
            except BaseException as exc:  # the parent raises it where the batch's results are asked for
                future.set_exception(exc)

    def close(self) -> None:
        """Stop: batches not yet sent are cancelled (an ingest stopped by an error or Ctrl-C does not wait for the
        rest of the tree to be read), those sent are answered, then the children end."""
        while True:
            try:
                item = self.work.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in self.procs:  # one for each child's sending thread (which passes it on to the receiving one)
            self.work.put(None)
        for thread in self.threads:
            thread.join()
        close_children(self.procs)
        for proc in self.procs:
            proc.stdout.close()
        self.procs, self.threads = [], []


def close_children(procs) -> None:
    """End reader processes: close their input (their signal to stop), then wait for each (killed after 10 s)."""
    for proc in procs:
        try:
            proc.stdin.close()
        except OSError:
            pass
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a child stuck in a read
            proc.kill()
            proc.wait()


def _child() -> int:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops its readers by closing their input
    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        results = _read_batch([_Entry(path, real) for path, real in json.loads(line)])
        out.write(json.dumps([[r.sha256, r.frames, r.error, r.generated] for r in results]).encode() + b"\n")
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(_child())
