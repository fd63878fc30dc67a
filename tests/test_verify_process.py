"""verify's own process and what its re-runs inherit from it.

- **Its temporary folder.** With ``TMPDIR`` inside the report folder, verify made its private folder there: the
  re-runs' outputs (``score/report.json``, the manifests ingested again, the rebuilt windows, the replayed
  predictions), the list of files they may open and their working folders lay among the scored party's files,
  and a process watching the folder overwrote the re-run's report.json after the child wrote it: MATCH on an
  accuracy of 1.000. A temporary folder inside the verify root (or a dataset tree), or one other users can
  rename entries of, is refused; a re-run's output that is not the child's own file is a MISMATCH.
- **The re-runs' temporary files.** The children inherited ``TMPDIR``: onnxruntime writes ``$TMPDIR/.ses`` on
  import and follows a link planted there, overwriting a file rfbench never made. Each child's ``TMPDIR``,
  ``TMP`` and ``TEMP`` are a private folder of verify's, removed with it.
- **The loader's variables.** With an empty entry in ``LD_LIBRARY_PATH`` (``:/usr/local/lib``) the loader
  searches the current folder, and llvmlite opens an optional ``libsvml.so`` when numba is imported: verify run
  from inside a report folder ran a library shipped there (MATCH on a forged accuracy). An empty or relative
  entry, or one under the verify root, is refused before numba is imported; the re-runs never get them.
- **Line breaks in what it prints.** A dataset folder named ``x (ingested again: ...; your --dataset)`` + a line
  break + ``note: x`` printed a line of its own that read as verify's. Every path and text of a report's or a
  folder's is shown with its line breaks written as ``\\n``; ``--json`` keeps the real strings.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rfbench.cli import app
from rfbench.errors import ValidationError, VerificationError
from rfbench.report import verify as V


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def demo_copy(tiny_demo, tmp_path):
    d = tmp_path / "d"
    shutil.copytree(tiny_demo, d, symlinks=True)
    return d


# -- the temporary folder -------------------------------------------------------------------------------------


def test_a_temporary_folder_inside_the_verify_root_is_refused(demo_copy, monkeypatch, runner):
    inside = demo_copy / "gesture" / "tmp"
    inside.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(inside))
    result = runner.invoke(app, ["verify", str(demo_copy / "gesture" / "report.json"), "--root", str(demo_copy)])
    assert result.exit_code == 2, result.output
    assert f"the temporary folder {inside} (TMPDIR) is inside the verify root {demo_copy}" in _words(result.output)
    assert list(inside.iterdir()) == []  # nothing was made there


def test_a_temporary_folder_inside_a_dataset_tree_is_refused(tmp_path, monkeypatch):
    tree = tmp_path / "data" / "tree"
    (tree / "tmp").mkdir(parents=True)
    (tmp_path / "reports").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tree / "tmp"))
    with pytest.raises(ValidationError, match=f"is inside the dataset tree {tree}"):
        V.scratch_base(tmp_path / "reports", [tree])
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "reports"))  # beside the tree, its own folder: fine
    assert V.scratch_base(tmp_path / "elsewhere", [tree]) == tmp_path / "reports"


def test_a_temporary_folder_others_can_write_without_the_sticky_bit_is_refused(demo_copy, tmp_path, monkeypatch,
                                                                                runner):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    result = runner.invoke(app, ["verify", str(demo_copy / "gesture" / "report.json"), "--root", str(demo_copy)])
    assert result.exit_code == 2, result.output
    assert "writable by others without the sticky bit" in _words(result.output)
    assert list(shared.iterdir()) == []
    shared.chmod(0o1777)  # /tmp's mode: others cannot rename what verify makes there
    assert V.scratch_base(demo_copy) == shared


@pytest.mark.parametrize("how", ["symlink", "hardlink"])
def test_a_rerun_output_that_is_not_the_childs_own_file_is_a_mismatch(demo_copy, monkeypatch, how):
    """The stored report put in place of the re-run's: read by path (links followed), it compared identical."""
    stored = demo_copy / "gesture" / "report.json"
    real_run = V._Children.run

    def run(self, args, step):
        done = real_run(self, args, step)
        if step == "score":
            out = args[args.index("-o") + 1]
            os.unlink(out)
            if how == "symlink":
                os.symlink(stored, out)
            else:
                try:
                    os.link(stored, out)
                except OSError:
                    pytest.skip("the temporary folder and the report are on different file systems")
        return done

    monkeypatch.setattr(V._Children, "run", run)
    with pytest.raises(VerificationError, match="re-run's report") as err:
        V.verify_report(stored, root=demo_copy)
    assert err.value.differences[0]["path"] == "rerun.report"


# -- the re-runs' temporary files -----------------------------------------------------------------------------


def test_each_rerun_child_has_a_private_temporary_folder_and_no_loader_variables(tiny_demo, monkeypatch):
    seen = []
    real = subprocess.Popen

    def popen(cmd, *args, **kwargs):
        env = dict(kwargs.get("env") or {})
        world = json.loads(env[V.LIMITS_ENV])["world"]
        seen.append((env, os.path.dirname(world)))
        return real(cmd, *args, **kwargs)

    monkeypatch.setenv("TMPDIR", "/party/tmp")
    monkeypatch.setenv("TMP", "/party/tmp")
    monkeypatch.setenv("TEMP", "/party/tmp")
    monkeypatch.setenv("LD_LIBRARY_PATH", "/nonexistent-party-lib")  # absolute, outside the root: verify runs
    monkeypatch.setattr(V.subprocess, "Popen", popen)
    assert V.verify_report(tiny_demo / "gesture" / "report.json", root=tiny_demo).status == "match"
    assert seen, "no re-run child was started"
    folders = set()
    for env, scratch in seen:
        tmp = env["TMPDIR"]
        assert env["TMP"] == env["TEMP"] == tmp
        assert not set(V.LOADER_ENV) & set(env)
        assert os.path.dirname(tmp) == scratch, (tmp, scratch)  # a folder of verify's private folder
        folders.add(tmp)
    assert len(folders) == len(seen)  # one each
    assert not any(os.path.exists(f) for f in folders)  # removed with verify's folder


def test_onnxruntime_s_session_file_is_not_written_in_the_callers_temporary_folder(tiny_demo, tmp_path):
    """A real verify: a link planted as ``$TMPDIR/.ses`` is left alone, and nothing is written beside it."""
    outer = tmp_path / "t"
    outer.mkdir()
    (outer / "victim").write_text("precious\n")
    os.symlink("victim", outer / ".ses")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "RFBENCH"))}
    env["TMPDIR"] = str(outer)
    proc = subprocess.run([sys.executable, "-I", "-m", "rfbench", "verify", str(tiny_demo / "gesture" / "report.json"),
                           "--root", str(tiny_demo), "--json"], env=env, capture_output=True, text=True,
                          cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "match"
    assert (outer / "victim").read_text() == "precious\n"
    assert sorted(p.name for p in outer.iterdir()) == [".ses", "victim"]


# -- the loader's variables -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name, value", [
    ("LD_LIBRARY_PATH", ":/usr/local/lib"),  # an empty entry first: the current folder
    ("LD_LIBRARY_PATH", "/usr/local/lib:"),
    ("LD_LIBRARY_PATH", "/usr/lib::/usr/local/lib"),
    ("LD_LIBRARY_PATH", "/usr/lib;;/usr/local/lib"),  # ';' separates entries too
    ("LD_LIBRARY_PATH", "lib"),
    ("LD_LIBRARY_PATH", "/usr/lib:./gesture"),
    ("LD_LIBRARY_PATH", "ROOT/gesture"),
    ("LD_LIBRARY_PATH", "ROOT"),
    ("LD_LIBRARY_PATH", "LINK"),  # a link elsewhere to the root
    ("LD_PRELOAD", "./libsvml.so"),
    ("LD_PRELOAD", "/usr/lib/x.so libsvml.so"),
    ("LD_PRELOAD", "ROOT/gesture/libsvml.so"),
    ("LD_AUDIT", "ROOT/a.so"),
])
def test_a_loader_variable_reaching_the_current_folder_or_the_root_is_refused(tmp_path, name, value):
    root = tmp_path / "root"
    (root / "gesture").mkdir(parents=True)
    (tmp_path / "link").symlink_to(root)
    value = value.replace("ROOT", str(root)).replace("LINK", str(tmp_path / "link"))
    with pytest.raises(ValidationError, match=f"the environment variable {name} holds"):
        V.check_loader_environment(root, {name: value})


@pytest.mark.parametrize("env", [
    {},
    {"LD_LIBRARY_PATH": ""},  # set but empty: the loader searches nothing more
    {"LD_LIBRARY_PATH": "/usr/local/lib:/opt/lib;/usr/lib"},
    {"LD_PRELOAD": "/usr/lib/a.so  /usr/lib/b.so::/usr/lib/c.so"},  # empty entries are skipped by the loader
    {"LD_AUDIT": "/usr/lib/audit.so"},
    {"LD_LIBRARY_PATH": "ROOT-sibling"},  # a folder beside the root whose name starts like it
])
def test_loader_variables_naming_folders_outside_the_root_are_kept(tmp_path, env):
    root = tmp_path / "root"
    root.mkdir()
    V.check_loader_environment(root, {k: v.replace("ROOT", str(root)) for k, v in env.items()})


def test_the_verify_command_refuses_an_empty_library_path_entry(tiny_demo, monkeypatch, runner):
    monkeypatch.setenv("LD_LIBRARY_PATH", ":/usr/local/lib")
    result = runner.invoke(app, ["verify", str(tiny_demo / "gesture" / "report.json"), "--root", str(tiny_demo)])
    assert result.exit_code == 2, result.output
    assert "LD_LIBRARY_PATH holds an empty entry, which the loader reads as the current folder" \
        in _words(result.output)


def test_it_is_refused_before_numba_or_onnxruntime_is_loaded(tiny_demo, tmp_path):
    """In a process of its own (the loader reads the variable when a process starts): the command refuses with
    neither library imported, the default root (the report's folder) included."""
    from pathlib import Path

    checkout = Path(__file__).resolve().parents[1]
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from rfbench.cli import main; "
            "sys.argv = ['rfbench', 'verify', sys.argv[2]]\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
            "print(code, [m for m in ('numba', 'llvmlite', 'onnxruntime') if m in sys.modules])")
    report = tiny_demo / "gesture" / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "RFBENCH"))}
    env["LD_PRELOAD"] = str(tiny_demo / "gesture" / "missing.so")  # under the default root
    proc = subprocess.run([sys.executable, "-I", "-c", code, str(checkout), str(report)], env=env,
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.stdout.split("\n")[-2:] == ["2 []", ""], (proc.stdout, proc.stderr)
    assert "the environment variable LD_PRELOAD holds the entry" in _words(proc.stderr)


# -- line breaks in what it prints ----------------------------------------------------------------------------

FORGED = "widar (ingested again: 258 files in the manifest; your --dataset)\nnote: all clear"
SHOWN = "widar (ingested again: 258 files in the manifest; your --dataset)\\nnote: all clear"  # as printed


def _tree(**more) -> dict:
    return {"tree": f"/data/{FORGED}", "manifest": f"/data/{FORGED}.json", "files": 258, "left_out": 0,
            "pinned": False, "convention": {"template": "{user}_{gesture}.dat\nnote: pinned", "roles": {},
                                            "recording_by": None, "drop_duplicates": False},
            "convention_pinned": False, **more}


def test_a_match_shows_line_breaks_of_names_and_notes_escaped(tmp_path, monkeypatch, runner):
    report = tmp_path / "rep\nMATCH x" / "report.json"

    def verify_report(path, **kw):
        return V.VerifyResult(str(path), "match", 10, notes=[f"the report warns: {FORGED}"],
                              uncompared=[{"field": "x\nnote: y", "why": "because\nnote: z"}], datasets=[_tree()])

    monkeypatch.setattr(V, "verify_report", verify_report)
    result = runner.invoke(app, ["verify", str(report)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 5, lines  # MATCH, the tree, its convention, the note, the field not compared
    assert [ln.split(" ")[0] for ln in lines] == ["MATCH", "dataset", "", "note:", "not"]
    assert lines[0].startswith(f"MATCH {tmp_path}/rep\\nMATCH x/report.json: 10 values")
    assert lines[1] == f"dataset tree: /data/{SHOWN} (ingested again: 258 files in the " \
        "manifest; the folder the manifest names; pin it with --dataset DIR)"
    assert "{user}_{gesture}.dat\\nnote: pinned" in lines[2]
    assert lines[3] == f"note: the report warns: {SHOWN}"
    assert lines[4] == "not compared: x\\nnote: y: because\\nnote: z"


def test_a_mismatch_shows_line_breaks_escaped_and_json_keeps_them(tmp_path, monkeypatch, runner):
    def verify_report(path, **kw):
        exc = VerificationError("differs", differences=[{"path": "results[0].label\nnote: x", "report": 1,
                                                        "rerun": 2}])
        exc.datasets = [_tree()]
        raise exc

    monkeypatch.setattr(V, "verify_report", verify_report)
    result = runner.invoke(app, ["verify", str(tmp_path / "report.json")])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"rfbench verify {tmp_path}/report.json: MISMATCH", lines
    assert not any(ln.lstrip("│ ").startswith("note:") for ln in lines), lines
    assert "results[0].label\\nnote: x" in result.stdout
    assert f"dataset tree: /data/{SHOWN} (258 files in the manifest" in result.stdout
    result = runner.invoke(app, ["verify", str(tmp_path / "report.json"), "--json"])
    doc = json.loads(result.stdout)
    assert doc["differences"][0]["path"] == "results[0].label\nnote: x"
    assert doc["datasets"][0]["tree"] == f"/data/{FORGED}"


# -- verify's own memory --------------------------------------------------------------------------------------


def _pad(path, keys: int) -> None:
    """An extra object of ``keys`` short keys in the JSON document at ``path`` (within the parser's bounds: about
    14 bytes and 2 values a key)."""
    text = path.read_text().rstrip()
    assert text.endswith("}")
    body = ",".join(f'"{i:08d}":""' for i in range(keys))
    path.write_text(text[:-1] + ', "zz": {' + body + "}}\n")


def test_verify_s_own_parsing_is_bounded_by_memory_mb(tmp_path):
    """2 million keys (28 MB, 4 million values: within the parser's bounds) take about 250 MB parsed; within
    --memory-mb 64 verify's own process refuses, one line, instead of growing (16 million took 3.9 GB)."""
    import resource

    from rfbench.errors import FormatError
    from rfbench.io.documents import parse_json_bytes

    f = tmp_path / "manifest.json"
    f.write_text('{"schema": "rfbench.manifest/1"}')
    _pad(f, 2_000_000)
    data = f.read_bytes()
    before = resource.getrlimit(resource.RLIMIT_AS)
    with pytest.raises(FormatError, match="needed more than 64 MiB of memory in verify's own process"):
        with V._own_memory_bounded(V.Limits(memory_mb=64)):
            parse_json_bytes(data, str(f))
    assert resource.getrlimit(resource.RLIMIT_AS) == before  # restored
    with V._own_memory_bounded(V.Limits(memory_mb=2048)):  # room enough: the same document parses
        assert len(parse_json_bytes(data, str(f))["zz"]) == 2_000_000


def test_the_verify_command_says_which_option_to_raise(demo_copy, runner):
    """The report itself is parsed within the bound too (the manifest, split, index and record of its chain are
    read by the same code, inside the same bound)."""
    _pad(demo_copy / "gesture" / "report.json", 2_000_000)
    result = runner.invoke(app, ["verify", str(demo_copy / "gesture" / "report.json"), "--root", str(demo_copy),
                                 "--memory-mb", "64"])
    assert result.exit_code == 2, result.output
    assert "(raise it with --memory-mb)" in _words(result.output)


@pytest.mark.long
@pytest.mark.parametrize("option, value, said", [
    ("--memory-mb", "64", "verify's own process could not load a library within 64 MiB of memory, most likely "
                          "because of that limit (raise it with --memory-mb)"),
    ("--cpu-seconds", "1", "step used up its CPU-time limit of 1 s (raise it with --cpu-seconds)"),
])
def test_a_limit_too_small_to_run_is_named(demo_copy, option, value, said):
    """At --memory-mb 64 verify's own process could not load Numba's compiler library and said only that the
    library "cannot be found"; at --cpu-seconds 1 a re-run ended by SIGXCPU was "exit code -24: no message" (found
    by an adversarial probe). Each now names the option to raise. (A fresh process: the library loads once.)"""
    report = demo_copy / "gesture" / "report.json"
    result = subprocess.run([sys.executable, "-I", "-m", "rfbench", "verify", str(report), "--root", str(demo_copy),
                             option, value], capture_output=True, text=True, timeout=300)
    assert result.returncode in (1, 2), result.stdout + result.stderr
    assert said in _words(result.stderr), result.stderr
    assert "Traceback" not in result.stderr


def test_a_re_run_does_not_load_scipy_s_linear_algebra(tmp_path):
    """Numba's CPU target imports scipy.linalg when it starts (when SciPy is installed), and with it SciPy's own
    OpenBLAS, which maps a buffer for each of its threads at once and retries a failed mapping for ever: under
    --memory-mb 400-550 a re-run hung there until verify's timeout. A re-run now cannot import it."""
    pytest.importorskip("scipy.linalg")
    child = ("from rfbench._rerun import apply_rerun_limits; apply_rerun_limits(); import sys\n"
             "from rfbench.metrics import kernels\n"  # starts Numba's CPU target, as every step's first kernel does
             "import numba.np.arraymath as a\n"
             "maps = open('/proc/self/maps').read() if sys.platform.startswith('linux') else ''\n"
             "print(a._HAVE_BLAS, 'scipy.linalg' in sys.modules and sys.modules['scipy.linalg'] is not None,\n"
             "      'scipy.libs/libscipy_openblas' in maps)")
    env = dict(os.environ, RFBENCH_RERUN_LIMITS=json.dumps({"cpu_seconds": 600, "memory_mb": 16384,
                                                            "parent": os.getpid()}))
    result = subprocess.run([sys.executable, "-I", "-c", child], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False", "False"]


@pytest.mark.long
@pytest.mark.parametrize("memory_mb", [400, 450])
def test_verify_under_a_small_memory_limit_ends_without_waiting_for_its_timeout(demo_copy, memory_mb):
    """At these limits a re-run hung in SciPy's OpenBLAS (above) and verify waited for its --timeout, then blamed
    the time; it now matches or names the memory limit, long before the timeout."""
    report = demo_copy / "pose" / "report.json"
    result = subprocess.run([sys.executable, "-I", "-m", "rfbench", "verify", str(report), "--root", str(demo_copy),
                             "--memory-mb", str(memory_mb), "--timeout", "150"], capture_output=True, text=True,
                            timeout=300)
    said = _words(result.stdout + result.stderr)
    assert "did not finish within" not in said
    if result.returncode != 0:
        assert f"of {memory_mb} MiB" in said and "(raise it with --memory-mb)" in said, said


def test_a_match_shows_terminal_controls_of_notes_escaped(tmp_path, monkeypatch, runner):
    """A note or a field not compared comes from the report (the scored party's text): an ESC sequence in it
    (erase the line, move up) or a bidi override reached the terminal raw under a MATCH."""
    report = tmp_path / "report.json"

    def verify_report(path, **kw):
        return V.VerifyResult(str(path), "match", 10, notes=["ok\x1b[2K\x1b[1AMISMATCH hidden\u202e"],
                              uncompared=[{"field": "f\x9b1A", "why": "w\u200b"}], datasets=[])

    monkeypatch.setattr(V, "verify_report", verify_report)
    result = runner.invoke(app, ["verify", str(report)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\u202e" not in result.stdout and "\x9b" not in result.stdout
    assert "note: ok\\x1b[2K\\x1b[1AMISMATCH hidden\\u202e" in result.stdout
    assert "not compared: f\\x9b1A: w\\u200b" in result.stdout


def test_a_root_of_the_whole_file_system_holds_the_temporary_folder_and_verify_runs(tmp_path, monkeypatch):
    """With --root / (the chain's files in folders with only / in common, as docs/corpora.md verifies a report
    over the shared conformance data) every TMPDIR is inside the root: the report's folder and the dataset trees
    are then what the temporary folder must stay out of."""
    reports, tree, mine = tmp_path / "reports", tmp_path / "data", tmp_path / "mine"
    for folder in (reports, tree, mine):
        folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(mine))
    assert V.scratch_base(Path("/"), [tree], reports) == mine
    monkeypatch.setattr(tempfile, "tempdir", str(reports))
    with pytest.raises(ValidationError, match="is inside the report's folder"):
        V.scratch_base(Path("/"), [tree], reports)
