"""`rfbench parse` as a user runs it: archives, summaries, several inputs, bad inputs, --force, --json."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rfbench.cli import app
from rfbench.io.intel5300 import HEADER_FIELDS, read
from rfbench.io.writer import LogBuilder, synthetic_log


@pytest.fixture
def logfile(tmp_path):
    path = tmp_path / "cap.dat"
    path.write_bytes(synthetic_log(40, nrx=3, ntx=2, seed=4, non_csi_every=2, non_csi_bytes=16))
    return path


def test_parse_writes_plain_npz_with_documented_names(runner, logfile, tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(app, ["parse", str(logfile), "-o", str(out), "--scaled"])
    assert result.exit_code == 0, result.output
    archive = out / "cap.npz"
    with np.load(archive, allow_pickle=False) as z:
        names = set(z.files)
        expected = {"csi", "csi_scaled", "perm", "perm_applied", *HEADER_FIELDS, "skipped_reasons",
                    "skipped_counts", "non_csi_codes", "non_csi_counts", "source_sha256", "source_bytes"}
        assert names == expected
        data = logfile.read_bytes()
        assert str(z["source_sha256"]) == hashlib.sha256(data).hexdigest()
        assert z["source_bytes"].dtype == np.int64 and int(z["source_bytes"]) == len(data)
        log = read(logfile)
        np.testing.assert_array_equal(z["csi"], log.csi)
        assert z["csi"].dtype == np.complex64 and z["csi_scaled"].dtype == np.complex128
        np.testing.assert_array_equal(z["csi_scaled"], log.scaled_csi())
        for name in HEADER_FIELDS:
            np.testing.assert_array_equal(z[name], getattr(log, name))
        assert z["non_csi_codes"].tolist() == [0xC1] and z["non_csi_counts"].tolist() == [20]
    assert "40" in result.output  # the summary table shows the record count


def test_raw_int8_archive(runner, logfile, tmp_path):
    result = runner.invoke(app, ["parse", str(logfile), "-o", str(tmp_path), "--raw-int8"])
    assert result.exit_code == 0, result.output
    with np.load(tmp_path / "cap.npz") as z:
        assert "csi" not in z.files
        assert z["csi_int8"].shape == (40, 30, 3, 2, 2) and z["csi_int8"].dtype == np.int8


def test_json_summary(runner, logfile, tmp_path):
    result = runner.invoke(app, ["parse", str(logfile), "-o", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["parsed"] == 1 and doc["failed"] == 0
    summary = doc["files"][0]["summary"]
    assert summary["records"] == 40 and summary["shapes"] == {"3x2": 40}
    assert summary["non_csi"] == {"0xC1": 20}
    assert summary["packet_rate_hz"] == pytest.approx(1000, rel=0.05)


def test_existing_output_needs_force(runner, logfile, tmp_path):
    target = tmp_path / "cap.npz"
    target.write_bytes(b"precious")
    result = runner.invoke(app, ["parse", str(logfile)])
    assert result.exit_code == 2
    assert "--force" in result.output
    assert target.read_bytes() == b"precious"
    result = runner.invoke(app, ["parse", str(logfile), "--force"])
    assert result.exit_code == 0, result.output
    assert np.load(target)["csi"].shape[0] == 40


@pytest.mark.parametrize("kind", ["missing", "empty", "directory-as-file", "text", "only-non-csi"])
def test_bad_single_input_one_line_exit_2_nothing_written(runner, tmp_path, kind):
    path = tmp_path / "bad.dat"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("timestamp,rssi\n1,2\n")
    elif kind == "only-non-csi":
        path.write_bytes(LogBuilder().record(0xC1, bytes(50)).record(0xC1, bytes(50)).to_bytes())
    elif kind == "directory-as-file":
        path = tmp_path / "folder.dat"
        path.mkdir()
        (path / "x.txt").write_text("no dat here")
    result = runner.invoke(app, ["parse", str(path), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error:"), result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_unreadable_file(runner, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode")
    path = tmp_path / "locked.dat"
    path.write_bytes(synthetic_log(3))
    path.chmod(0)
    result = runner.invoke(app, ["parse", str(path)])
    assert result.exit_code == 2 and "permission denied" in result.stderr


def test_several_inputs_are_independent(runner, tmp_path):
    good1, good2 = tmp_path / "a.dat", tmp_path / "b.dat"
    good1.write_bytes(synthetic_log(5, seed=1))
    good2.write_bytes(synthetic_log(7, seed=2))
    empty = tmp_path / "c.dat"
    empty.write_bytes(b"")
    out = tmp_path / "out"
    result = runner.invoke(app, ["parse", str(good1), str(empty), str(tmp_path / "nope.dat"), str(good2),
                                 "-o", str(out), "--json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["parsed"] == 2 and doc["failed"] == 2
    errors = {os.path.basename(f["input"]): f["error"] for f in doc["files"]}
    assert errors["a.dat"] is None and errors["b.dat"] is None
    assert "empty" in errors["c.dat"] and "no such file" in errors["nope.dat"]
    assert np.load(out / "a.npz")["csi"].shape[0] == 5
    assert np.load(out / "b.npz")["csi"].shape[0] == 7


def test_folder_input_mirrors_subfolders(runner, tmp_path):
    root = tmp_path / "caps"
    (root / "day1").mkdir(parents=True)
    (root / "day2").mkdir()
    (root / "day1" / "r1.dat").write_bytes(synthetic_log(4, seed=1))
    (root / "day2" / "r1.dat").write_bytes(synthetic_log(6, seed=2))
    (root / "notes.txt").write_text("ignored")
    out = tmp_path / "out"
    result = runner.invoke(app, ["parse", str(root), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert np.load(out / "day1" / "r1.npz")["csi"].shape[0] == 4
    assert np.load(out / "day2" / "r1.npz")["csi"].shape[0] == 6


def test_folder_without_logs_is_usage_error(runner, tmp_path):
    result = runner.invoke(app, ["parse", str(tmp_path)])
    assert result.exit_code == 2 and "no .dat file" in result.stderr


def test_no_temporary_files_left_behind(runner, logfile, tmp_path):
    out = tmp_path / "out"
    assert runner.invoke(app, ["parse", str(logfile), "-o", str(out)]).exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["cap.npz"]


def test_atomic_write_leaves_old_file_when_writing_fails(tmp_path, monkeypatch):
    from rfbench.io import files

    target = tmp_path / "x.npz"
    target.write_bytes(b"old")

    def boom(fh, **arrays):
        fh.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(OSError):
        files.save_npz(target, {"a": np.zeros(3)}, force=True)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.npz"]


def test_parse_help_lists_every_option(runner):
    result = runner.invoke(app, ["parse", "--help"])
    assert result.exit_code == 0
    for option in ("--out", "--scaled", "--raw-int8", "--json", "--force"):
        assert option in result.output


def test_kernels_run_with_the_jit_disabled(tmp_path):
    """The parser and scaling kernels also run as plain Python (NUMBA_DISABLE_JIT=1) and agree."""
    path = tmp_path / "small.dat"
    data = (LogBuilder().bfee(np.arange(-90, 90, dtype=np.int8).reshape(30, 3, 1, 2), antenna_sel=0b011000)
            .bfee(np.ones((30, 1, 2, 2), np.int8)).raw(b"\x00\x00").to_bytes(truncate=0))
    path.write_bytes(data)
    code = (
        "import sys, numpy as np; from rfbench.io.intel5300 import read; log = read(sys.argv[1]); "
        "np.save(sys.argv[2], log.csi); np.save(sys.argv[3], log.scaled_csi())"
    )
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    outs = [tmp_path / "csi.npy", tmp_path / "scaled.npy"]
    proc = subprocess.run([sys.executable, "-c", code, str(path), *map(str, outs)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    log = read(path)
    np.testing.assert_array_equal(np.load(outs[0]), log.csi)
    np.testing.assert_allclose(np.load(outs[1]), log.scaled_csi(), rtol=1e-15)


# ---------------------------------------------------------------------------------------------------------
# interruptions, existing outputs, folder search, readable output (issue 13)
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_mid_folder_cleans_up_and_says_which_inputs_finished(tmp_path, sig):
    """A real process signalled mid-run: exit 128+signal, no temporary file anywhere, one stderr line, and every
    archive on disk complete."""
    import signal
    import time
    import zipfile

    signum = getattr(signal, sig)
    src = tmp_path / "in"
    src.mkdir()
    first = src / "f0000.dat"
    first.write_bytes(synthetic_log(2, seed=5))
    n = 4000  # small files: the run lasts seconds, the outputs stay small
    for k in range(1, n):
        os.link(first, src / f"f{k:04d}.dat")
    out = tmp_path / "out"
    args = [sys.executable, "-m", "rfbench", "parse", str(src), "-o", str(out)]
    args += ["--json"] if sig == "SIGTERM" else []
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while proc.poll() is None and time.monotonic() < deadline:
        if out.is_dir() and any(p.suffix == ".npz" for p in out.iterdir()):
            break
        time.sleep(0.002)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 128 + signum, (proc.returncode, stderr[-2000:])
    left = sorted(p.name for p in out.iterdir())
    assert not [name for name in left if name.endswith(".tmp") or name.startswith(".")], left
    assert 0 < len(left) < n
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr[-2000:]
    assert lines[0].startswith(f"error: interrupted by {sig}: {len(left)} of {n} inputs finished (f0000.dat")
    assert f"{n - len(left)} not finished (" in lines[0] and "--skip-existing" in lines[0]
    for name in (left[0], left[-1]):
        with zipfile.ZipFile(out / name) as zf:
            assert zf.testzip() is None
        np.testing.assert_array_equal(np.load(out / name)["csi"], read(first).csi)
    if sig == "SIGTERM":
        doc = json.loads(stdout)
        assert doc["interrupted"] == "SIGTERM" and doc["written"] == len(left)
        assert sorted(os.path.basename(f["output"]) for f in doc["files"] if f["status"] == "written") == left
        assert doc["not_finished"] == n - len(left)


def test_skip_existing_keeps_matching_outputs_and_refuses_others(runner, tmp_path):
    a, b = tmp_path / "a.dat", tmp_path / "b.dat"
    a.write_bytes(synthetic_log(5, seed=1))
    b.write_bytes(synthetic_log(7, seed=2))
    out = tmp_path / "out"
    assert runner.invoke(app, ["parse", str(a), str(b), "-o", str(out)]).exit_code == 0
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.iterdir()}
    result = runner.invoke(app, ["parse", str(a), str(b), "-o", str(out), "--skip-existing", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["kept"], doc["written"], doc["failed"]) == (2, 0, 0)
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.iterdir()} == before
    b.write_bytes(synthetic_log(7, seed=3))  # the input changed since its archive was written
    result = runner.invoke(app, ["parse", str(a), str(b), "-o", str(out), "--skip-existing"])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1
    assert errors[0].startswith(f"error: {b}: output {out / 'b.npz'} was made from a different input")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {k: v[0] for k, v in before.items()}
    result = runner.invoke(app, ["parse", str(a), "-o", str(out)])
    assert result.exit_code == 2 and "already exists" in result.stderr
    result = runner.invoke(app, ["parse", str(a), "-o", str(out), "--force", "--skip-existing"])
    assert result.exit_code == 2 and "exclude each other" in result.stderr


def test_glob_takes_other_names_and_the_summary_counts_the_files_not_taken(runner, tmp_path):
    root = tmp_path / "caps"
    root.mkdir()
    (root / "r1.dat").write_bytes(synthetic_log(4, seed=1))
    (root / "log.all_csi.6.7.6").write_bytes(synthetic_log(6, nrx=3, ntx=3, seed=2))
    (root / "notes.txt").write_text("not a log")
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "a"), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["written"] == 1 and doc["not_taken"] == 2 and doc["patterns"] == ["*.dat"]
    assert doc["not_taken_files"] == [str(root / "log.all_csi.6.7.6"), str(root / "notes.txt")]
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "b")])
    assert ("2 file(s) in the folders not taken (not *.dat, nor a CSI log named *.csv or *.pcap or *.csi)"
            in " ".join(result.stdout.split()))
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "c"), "--glob", "*.dat", "--glob", "log.*",
                                 "--json"])
    doc = json.loads(result.stdout)
    assert doc["written"] == 2 and doc["not_taken"] == 1
    assert np.load(tmp_path / "c" / "log.all_csi.6.7.6.npz")["csi"].shape == (6, 30, 3, 3)


def test_a_folder_parse_takes_every_csi_log_told_from_its_bytes(runner, tmp_path):
    # without --glob or --format a folder's *.csv, *.pcap and *.csi files are taken when their first bytes are a
    # log of a format rfbench reads (each read by its reader); a CSV of labels beside them is listed as not
    # taken, not a failed input; a FIFO named like a log never blocks the search
    from rfbench.io import atheros, esp32, nexmon, picoscenes

    rng = np.random.default_rng(3)
    root = tmp_path / "lab"
    (root / "pi").mkdir(parents=True)
    (root / "intel.dat").write_bytes(synthetic_log(4, seed=1))
    (root / "ath.dat").write_bytes(atheros.synthesize(rng, 5))
    (root / "board.csv").write_bytes(esp32.synthesize(rng, 6))
    (root / "pi" / "cap.pcap").write_bytes(nexmon.synthesize(4, 7, chip="bcm43455c0", bandwidth_mhz=20))
    (root / "ax.csi").write_bytes(picoscenes.synthesize(5, 8, front_end="qca9300"))
    (root / "labels.csv").write_text("user,gesture\n1,push\n")
    (root / "empty.pcap").write_bytes(b"")
    os.mkfifo(root / "pipe.csv")
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    formats = {Path(f["input"]).name: f["summary"].get("format", "intel5300") for f in doc["files"]}
    assert formats == {"intel.dat": "intel5300", "ath.dat": "atheros", "board.csv": "esp32", "cap.pcap": "nexmon",
                       "ax.csi": "picoscenes"}
    assert doc["written"] == 5 and doc["failed"] == 0
    assert sorted(Path(p).name for p in doc["not_taken_files"]) == ["empty.pcap", "labels.csv", "pipe.csv"]
    assert doc["sniffed_patterns"] == ["*.csv", "*.pcap", "*.csi"]
    assert (tmp_path / "out" / "pi" / "cap.pcap.npz").is_file()
    # --glob or --format: the patterns alone decide, as before (labels.csv is then an input, and fails; so does
    # the FIFO pipe.csv, a name the pattern takes that is not a regular file)
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "o2"), "--format", "esp32", "--json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 2 and doc["written"] == 1 and doc["failed"] == 2 and doc["sniffed_patterns"] == []
    assert sorted(Path(f["input"]).name for f in doc["files"] if f["status"] == "failed") == ["labels.csv",
                                                                                            "pipe.csv"]
    # a folder with no log at all says what it looked for
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "labels.csv").write_text("a,b\n")
    result = runner.invoke(app, ["parse", str(plain)])
    assert result.exit_code == 2 and "no .dat file and no CSI log named *.csv or *.pcap or *.csi" in result.stderr


def test_summary_at_80_columns_keeps_paths_and_reasons_whole(runner, tmp_path):
    root = tmp_path / "Widar3.0" / "CSI"
    folder = root / "20181109" / "user1"
    folder.mkdir(parents=True)
    zero_len = (LogBuilder().bfee(np.ones((30, 3, 1, 2), np.int8)).raw(b"\x00\x00")
                .bfee(np.ones((30, 3, 1, 2), np.int8)).to_bytes())
    (folder / "user1-1-1-1-1-r1.dat").write_bytes(zero_len)
    bad_perm = LogBuilder().bfee(np.ones((30, 2, 1, 2), np.int8), antenna_sel=0).to_bytes()  # perm (1, 1): kept
    (folder / "user1-1-1-1-2-r1.dat").write_bytes(bad_perm)
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "out")], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80 or "kept unpermuted" in max(lines, key=len)
    table = lines[:next(k for k, line in enumerate(lines) if line.startswith("wrote "))]
    assert "…" not in result.stdout and str(tmp_path) not in "\n".join(table)  # nothing cut, paths relative
    # 80 columns leave the path 30 (the widest skip reason takes 16): it breaks after a "/", never inside a name
    k = next(k for k, line in enumerate(lines) if line.startswith("20181109/user1/ "))
    assert lines[k + 1] == "user1-1-1-1-1-r1.dat" and "zero_field_len 1" in lines[k]
    k = next(k for k, line in enumerate(lines[k + 2:], k + 2) if line.startswith("20181109/user1/ "))
    assert lines[k + 1] == "user1-1-1-1-2-r1.dat" and "invalid_perm" not in lines[k] + lines[k + 1]
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "wide")], env={"COLUMNS": "100"})
    assert any(line.startswith("20181109/user1/user1-1-1-1-1-r1.dat ") for line in result.stdout.splitlines())
    note = [line for line in lines if "kept unpermuted" in line]
    assert len(note) == 1 and note[0].startswith("20181109/user1/user1-1-1-1-2-r1.dat: 1 record(s)")
    assert "invalid_perm" in note[0]


def test_json_output_still_prints_one_error_line_per_failed_input(runner, tmp_path, logfile):
    result = runner.invoke(app, ["parse", str(logfile), str(tmp_path / "nope.dat"), "-o", str(tmp_path / "o"),
                                 "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["failed"] == 1
    assert [line for line in result.stderr.splitlines() if line.strip()] == \
        [f"error: {tmp_path / 'nope.dat'}: no such file"]


@pytest.mark.parametrize("route", ["unnamed", "named"])
def test_an_unwritable_output_folder_is_named_and_the_input_not_blamed(runner, logfile, tmp_path, monkeypatch,
                                                                       route):
    from tests.test_parse_job import refuse_new_files

    refuse_new_files(monkeypatch, tmp_path / "out", route)
    result = runner.invoke(app, ["parse", str(logfile), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert errors == [f"error: {logfile}: cannot write {tmp_path / 'out' / 'cap.npz'} (permission denied in "
                      f"{tmp_path / 'out'})"]


def test_a_read_only_output_folder_for_real(runner, logfile, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o555)
    try:
        result = runner.invoke(app, ["parse", str(logfile), "-o", str(out)])
    finally:
        out.chmod(0o755)
    assert result.exit_code == 2
    assert f"cannot write {out / 'cap.npz'} (permission denied" in result.stderr and ".tmp" not in result.stderr


def test_boolean_flags_are_plain_flags_in_the_help(runner):
    result = runner.invoke(app, ["parse", "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0
    for flag in ("--scaled", "--raw-int8", "--force", "--skip-existing", "--json"):
        line = next(line for line in result.output.splitlines() if f" {flag} " in line)
        assert "<bool>" not in line and "bool" not in line.lower().split(flag)[1][:20], line
    assert "--glob" in result.output and "PATTERN" in result.output and "--workers" in result.output


def test_a_long_job_lists_only_the_inputs_with_something_to_report_then_the_totals(runner, tmp_path):
    root = tmp_path / "caps"
    root.mkdir()
    for k in range(24):
        (root / f"r{k:02d}.dat").write_bytes(synthetic_log(3, seed=k))
    (root / "r05.dat").write_bytes(synthetic_log(3, seed=5) + b"\x00")  # a lone trailing byte: truncated 1
    (root / "r07.dat").write_bytes(b"")
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    rows = [line for line in result.stdout.splitlines()[3:] if line.startswith(("r", "all "))]
    assert [line.split()[0] for line in rows] == ["r05.dat", "r07.dat", "all"]
    assert "truncated 1" in rows[0] and "failed" in rows[1]
    assert rows[2].split()[:4] == ["all", "23", "written", str(23 * 3)] and "truncated 1" in rows[2]


def test_a_file_name_that_is_not_utf8_is_shown_not_a_crash(runner, tmp_path):
    root = tmp_path / "caps"
    root.mkdir()
    with open(os.path.join(os.fsencode(root), b"caf\xe9.dat"), "wb") as fh:
        fh.write(synthetic_log(3))
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "caf\ufffd.dat" in result.stdout


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_skip_existing_never_waits_on_or_reads_an_output_that_is_not_a_file(runner, tmp_path, kind):
    """An existing output that is a FIFO hung `parse --skip-existing` (a worker blocked in its open, SIGTERM
    ignored); a link to /dev/zero was read without end until the memory ran out. A hostile dataset folder plants
    either beside a log (archives are written beside the inputs by default)."""
    log = tmp_path / "a.dat"
    log.write_bytes(synthetic_log(5, seed=1))
    planted = tmp_path / "a.npz"
    if kind == "fifo":
        os.mkfifo(planted)
    else:
        planted.symlink_to("/dev/zero")
    proc = subprocess.run([sys.executable, "-m", "rfbench", "parse", str(log), "--skip-existing"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = "is a FIFO, not a regular file" if kind == "fifo" else "records no source input"
    assert said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
