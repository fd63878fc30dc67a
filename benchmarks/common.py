"""Helpers the suites share (no benchmarks here)."""

from __future__ import annotations

import time


def best_time(fn, repeat: int = 3) -> float:
    """The fastest of ``repeat`` wall-clock timings of ``fn()``, in seconds: the estimate least moved by load,
    for the ``track_*`` ratios that time rfbench and a peer in the same process."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def throughput_ratio(ours, theirs, rounds: int = 12, batch: int = 10) -> float:
    """A peer's time per call over rfbench's, each calling ``batch`` times back to back (a corpus, as ingest
    reads one); rounds alternate between the two so drift in machine speed hits both; the best round of each
    counts. The ``track_speedup_vs_csiread`` benchmarks of the parse suites all measure this way."""
    theirs_best = ours_best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(batch):
            theirs()
        t1 = time.perf_counter()
        for _ in range(batch):
            ours()
        t2 = time.perf_counter()
        theirs_best = min(theirs_best, (t1 - t0) / batch)
        ours_best = min(ours_best, (t2 - t1) / batch)
    return theirs_best / ours_best


def _array_size(values) -> int:
    return sum(int(getattr(v, "size", 0)) for v in values if hasattr(v, "dtype") and hasattr(v, "shape"))


def _copied(value):
    return value.copy() if hasattr(value, "dtype") and hasattr(value, "shape") and hasattr(value, "copy") else value


def record_kernel_calls(targets, run):
    """The arguments each kernel of ``targets`` (``{key: (module name, kernel name)}``) is called with by the
    public code in ``run()``, so a benchmark can time the kernel alone, exactly as rfbench calls it at the
    commit being measured (a kernel whose signature changes stays benchmarked).

    ``run()`` is called twice: once as is, so every kernel it reaches is compiled (a kernel that calls another
    resolves it when compiled), then with each target replaced in its module by a recorder that keeps the
    call with the largest array arguments (copied, as they were at the call). Returns
    ``{key: (kernel, args, kwargs)}``. Raises ``NotImplementedError`` (asv then skips the benchmark) when a
    module or kernel does not exist at this commit or ``run()`` does not call it.
    """
    import importlib

    kernels = {}
    for key, (module_name, attr) in targets.items():
        try:
            module = importlib.import_module(module_name)
            kernels[key] = (module, attr, getattr(module, attr))
        except (ImportError, AttributeError) as exc:
            raise NotImplementedError(f"{module_name}.{attr} is not available at this commit ({exc})") from None
    run()
    calls = {}

    def recorder(key, kernel):
        def record(*args, **kwargs):
            size = _array_size(list(args) + list(kwargs.values()))
            if key not in calls or size > calls[key][0]:
                calls[key] = (size, tuple(_copied(a) for a in args), {k: _copied(v) for k, v in kwargs.items()})
            return kernel(*args, **kwargs)
        return record

    for key, (module, attr, kernel) in kernels.items():
        setattr(module, attr, recorder(key, kernel))
    try:
        run()
    finally:
        for module, attr, kernel in kernels.values():
            setattr(module, attr, kernel)
    missing = sorted(set(targets) - set(calls))
    if missing:
        raise NotImplementedError(f"the public path does not call {', '.join(missing)} at this commit")
    out = {}
    for key, (_, args, kwargs) in calls.items():
        kernel = kernels[key][2]
        kernel(*args, **kwargs)  # compile for the copies' layouts, outside the timed region
        out[key] = (kernel, args, kwargs)
    return out


_CACHE = {}  # kept for the process: asv runs setup again before every sample


def cached(key, make):
    """``make()``, once per process for ``key`` (expensive set-up, such as recording kernel calls)."""
    if key not in _CACHE:
        _CACHE[key] = make()
    return _CACHE[key]


def call_recorded(calls, key) -> None:
    """Call one recorded kernel with its recorded arguments."""
    kernel, args, kwargs = calls[key]
    kernel(*args, **kwargs)
