"""Hostile and messy trees never crash an ingest, hang it, exhaust memory, read outside the tree, echo a file's
contents or leave a half-written manifest (issue 13's ingest items), for ``ingest widar``, ``mmfi`` and ``files``.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from rfbench.cli import app
from rfbench.datasets import files, mmfi, widar
from rfbench.datasets.manifest import read_manifest
from rfbench.datasets.synthetic import mat_v5_bytes
from rfbench.io.writer import synthetic_log

ROOT = Path(__file__).resolve().parents[1]
WIDAR_DIR = Path("CSI/20181109/user1")
GOOD = "user1-1-1-1-1-r1.dat"


def put(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def widar_tree(root: Path) -> Path:
    put(root / WIDAR_DIR / GOOD, synthetic_log(5, seed=1))
    return root


def mmfi_tree(root: Path) -> Path:
    folder = root / "E01" / "S01" / "A01"
    put(folder / "wifi-csi" / "frame001.mat", mat_v5_bytes({"CSIamp": np.ones((3, 114, 10))}))
    np.save(folder / "ground_truth.npy", np.zeros((1, 17, 3)))
    return root


def files_tree(root: Path) -> Path:
    put(root / "kq_1_1.dat", synthetic_log(4, seed=1))
    return root


FILES_T = "{user}_{gesture}_{repetition}.dat"
INGESTS = {
    "widar": (widar_tree, lambda root, **kw: widar.ingest(root, **kw), []),
    "mmfi": (mmfi_tree, lambda root, **kw: mmfi.ingest(root, **kw), []),
    "files": (files_tree, lambda root, **kw: files.ingest(root, FILES_T, **kw), ["-t", FILES_T]),
}


def subprocess_env() -> dict:
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(ROOT)) if p)
    return {**os.environ, "PYTHONPATH": path, "OPENBLAS_NUM_THREADS": "1"}


# ---------------------------------------------------------------------------------------------------------
# names that are not UTF-8
# ---------------------------------------------------------------------------------------------------------

BAD = os.fsdecode(b"caf\xe9")  # Latin-1 'café': not valid UTF-8


@pytest.mark.parametrize("kind", list(INGESTS))
def test_a_non_utf8_name_is_a_problem_and_the_manifest_is_utf8_json(runner, tmp_path, kind):
    make, _, extra = INGESTS[kind]
    root = make(tmp_path / "tree")
    where = {"widar": WIDAR_DIR, "mmfi": Path("E01/S01/A01/wifi-csi"), "files": Path(".")}[kind]
    put(root / where / f"{BAD}.dat", b"x")  # a file deep in the tree
    put(root / where / BAD / "inner.dat", b"x")  # and a folder
    out = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", kind, str(root), "-o", str(out), "--json"] + extra)
    assert r.exit_code == 0, r.output
    raw = out.read_bytes()
    doc = json.loads(raw.decode("utf-8"))  # valid UTF-8 JSON
    reasons = {p["path"]: p["reason"] for p in doc["problems"]}
    # the undecodable byte is shown as a backslash escape, the entry left out
    for shown in ("caf\\xe9.dat", "caf\\xe9"):
        shown = (where / shown).as_posix()
        assert reasons[shown].startswith("name is not valid UTF-8 (shown with \\x escapes)"), reasons
    assert json.loads(r.stdout)["recordings"] == 1
    r = runner.invoke(app, ["ingest", kind, str(root), "-o", str(out), "--force"] + extra)
    assert r.exit_code == 0 and f"{(where / 'caf').as_posix()}\\xe9.dat: name is not valid UTF-8" in r.stdout


# ---------------------------------------------------------------------------------------------------------
# memory bombs
# ---------------------------------------------------------------------------------------------------------


def _npy_with_header(path: Path, shape: tuple, payload: bytes = b"\0" * 64) -> None:
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False, "shape": shape})
        fh.write(payload)


@pytest.mark.parametrize("shape, reason", [
    ((10**12, 17, 3), "ground truth header declares shape (1000000000000, 17, 3) of <f8 (408,000,000,000,000 "
                      "bytes) but the file holds 64 bytes after its header; not read"),
    ((10**12,), "ground truth has shape (1000000000000,); expected (frames, 17, 3) in metres"),
])
def test_a_huge_declared_ground_truth_is_a_problem_nothing_allocated(tmp_path, shape, reason):
    folder = tmp_path / "E01" / "S01" / "A01"
    (folder / "wifi-csi").mkdir(parents=True)  # empty: no frame count to compare with
    _npy_with_header(folder / "ground_truth.npy", shape)
    m = mmfi.ingest(tmp_path)
    problems = {p["path"]: p["reason"] for p in m.problems}
    assert problems["E01/S01/A01/ground_truth.npy"] == reason
    assert m.recordings[0]["files"][0]["kind"] == "ground-truth" and len(m.recordings[0]["files"][0]["sha256"]) == 64
    if len(shape) == 3:
        assert m.recordings[0]["gt_frames"] is None  # the header is not trusted


def test_a_short_ground_truth_is_a_problem(tmp_path):
    folder = tmp_path / "E01" / "S01" / "A01"
    put(folder / "wifi-csi" / "frame001.mat", mat_v5_bytes({"CSIamp": np.ones((3, 114, 10))}))
    _npy_with_header(folder / "ground_truth.npy", (1, 17, 3), b"\0" * 100)  # 408 bytes declared
    m = mmfi.ingest(tmp_path)
    assert {p["reason"] for p in m.problems} == {"ground truth header declares shape (1, 17, 3) of <f8 (408 bytes) "
                                                 "but the file holds 100 bytes after its header; not read"}


def zlib_bomb_mat(inflated: int) -> bytes:
    """A MAT-file whose one compressed element holds a double array of ``inflated`` bytes of zeros.

    Built without compressing them: with a full flush, deflating the same 1 MiB of zeros again gives the same
    bytes, so the stream is one block repeated; its Adler-32 is computed over what it inflates to.
    """
    n = inflated // 8
    def element(mi_type, payload):
        return struct.pack("<II", mi_type, len(payload)) + payload + b"\0" * ((-len(payload)) % 8)
    head = element(6, struct.pack("<II", 6, 0)) + element(5, struct.pack("<ii", n, 1)) + element(1, b"CSIamp")
    prefix = struct.pack("<II", 14, len(head) + 8 + 8 * n) + head + struct.pack("<II", 9, 8 * n)
    chunk = bytes(1 << 20)
    c = zlib.compressobj(9)
    start = c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    adler = zlib.adler32(prefix)
    for _ in range(8 * n // len(chunk)):
        adler = zlib.adler32(chunk, adler)
    stream = start + block * (8 * n // len(chunk)) + b"\x03\x00" + adler.to_bytes(4, "big")
    header = b"MATLAB 5.0 MAT-file".ljust(116, b" ") + bytes(8) + struct.pack("<H", 0x0100) + b"IM"
    return header + struct.pack("<II", 15, len(stream)) + stream


def test_the_bomb_helper_really_inflates(tmp_path):
    blob = zlib_bomb_mat(8 << 20)
    from rfbench.io.matv5 import read_mat

    got = read_mat(blob, max_bytes=16 << 20)["CSIamp"]
    assert got.shape == (1 << 20, 1) and not got.any()


def test_a_zlib_bombed_frame_is_a_problem_under_a_memory_cap(tmp_path):
    root = mmfi_tree(tmp_path / "tree")
    blob = zlib_bomb_mat(512 << 20)  # 512 MiB of zeros in about 532 KB
    assert len(blob) < 600_000
    put(root / "E01" / "S01" / "A01" / "wifi-csi" / "frame002.mat", blob)
    np.save(root / "E01" / "S01" / "A01" / "ground_truth.npy", np.zeros((2, 17, 3)))
    out = tmp_path / "m.json"
    limit = 1 << 30  # 1 GiB of address space: the interpreter and NumPy need ~200 MB
    code = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))\n"
        "from rfbench.cli import main\n"
        f"sys.argv = ['rfbench', 'ingest', 'mmfi', {str(root)!r}, '--verify-frames', '-o', {str(out)!r}, '--json']\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    reasons = {p["path"]: p["reason"] for p in json.loads(proc.stdout)["problems"]}
    assert reasons["E01/S01/A01/wifi-csi/frame002.mat"].startswith("not a readable .mat file (compressed element "
                                                                   "inflates past the")
    assert json.loads(out.read_text())["recordings"][0]["frames"] == 2


# ---------------------------------------------------------------------------------------------------------
# zero recordings
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(INGESTS))
@pytest.mark.parametrize("content", ["empty", "unrelated"])
def test_zero_recordings_is_exit_2_one_line_nothing_written(runner, tmp_path, kind, content):
    root = tmp_path / "tree"
    root.mkdir()
    if content == "unrelated":
        put(root / "notes.txt", b"hello")
    out = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", kind, str(root), "-o", str(out)] + INGESTS[kind][2])
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1 and "no" in r.stderr
    assert not out.exists() and not list(tmp_path.glob(".*tmp"))


# ---------------------------------------------------------------------------------------------------------
# non-regular files
# ---------------------------------------------------------------------------------------------------------

NOT_REGULAR = "not a regular file (a FIFO, socket, device or kernel pseudo-file); never opened, left out"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("kind", list(INGESTS))
def test_a_fifo_is_never_opened(tmp_path, kind):
    root = INGESTS[kind][0](tmp_path / "tree")
    fifo = {"widar": root / WIDAR_DIR / "user1-1-1-1-1-r2.dat", "files": root / "kq_1_2.dat",
            "mmfi": root / "E01" / "S01" / "A01" / "wifi-csi" / "frame002.mat"}[kind]
    os.mkfifo(fifo)
    out = tmp_path / "m.json"
    code = ("import sys\nfrom rfbench.cli import main\n"
            f"sys.argv = ['rfbench', 'ingest', {kind!r}, {str(root)!r}, '-o', {str(out)!r}, '--json'] + "
            f"{INGESTS[kind][2]!r}\nmain()\n")
    # opening a FIFO for reading blocks until a writer comes: the time limit turns a hang into a failure
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    reasons = {p["path"]: p["reason"] for p in json.loads(proc.stdout)["problems"]}
    assert reasons[fifo.relative_to(root).as_posix()] == NOT_REGULAR


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_a_proc_pseudo_file_is_not_an_empty_file(runner, tmp_path):
    root = files_tree(tmp_path / "tree")
    (root / "kq_1_2.dat").symlink_to("/proc/self/status")  # st_size 0, but not empty
    m = files.ingest(root, FILES_T, follow_symlinks=True)
    assert {p["path"]: p["reason"] for p in m.problems} == {"kq_1_2.dat": NOT_REGULAR}
    assert m.extra["follow_symlinks"] is True
    m = files.ingest(root, FILES_T)
    assert {p["path"]: p["reason"] for p in m.problems}["kq_1_2.dat"].startswith(
        "symbolic link to a place outside the dataset folder; not followed")
    out = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", "files", str(root), "-t", FILES_T, "--follow-symlinks", "-o", str(out)])
    assert r.exit_code == 0 and json.loads(out.read_text())["follow_symlinks"] is True


# ---------------------------------------------------------------------------------------------------------
# symbolic links leaving the tree; file contents are never echoed
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def secret(tmp_path) -> Path:
    """A file outside every tree whose contents must never appear in a manifest or an output."""
    return put(tmp_path / "outside" / "passwd", b"root:x:0:0:SECRET-CONTENTS:/root:/bin/sh\n" * 3)


@pytest.mark.parametrize("kind", list(INGESTS))
def test_a_link_leaving_the_tree_is_refused_by_default(runner, tmp_path, secret, kind):
    root = INGESTS[kind][0](tmp_path / "tree")
    link = {"widar": root / WIDAR_DIR / "user1-1-1-1-1-r2.dat", "files": root / "kq_1_2.dat",
            "mmfi": root / "E01" / "S01" / "A01" / "ground_truth.npy"}[kind]
    if link.exists():
        link.unlink()
    link.symlink_to(secret)
    out = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", kind, str(root), "-o", str(out), "--json"] + INGESTS[kind][2])
    assert r.exit_code == 0, r.output
    text = out.read_text() + r.output
    assert "SECRET" not in text and "root:x" not in text and str(secret) not in text
    reasons = {p["path"]: p["reason"] for p in json.loads(out.read_text())["problems"]}
    rel = link.relative_to(root).as_posix()
    assert reasons[rel] == ("symbolic link to a place outside the dataset folder; not followed (following links is "
                            "off by default); left out")
    assert "follow_symlinks" not in json.loads(out.read_text())
    # allowed on request, recorded in the manifest; the contents are still never quoted
    r = runner.invoke(app, ["ingest", kind, str(root), "-o", str(out), "--json", "--force", "--follow-symlinks"]
                      + INGESTS[kind][2])
    assert r.exit_code == 0, r.output
    text = out.read_text() + r.output
    assert "SECRET" not in text and "root:x" not in text
    doc = json.loads(out.read_text())
    assert doc["follow_symlinks"] is True
    assert rel in {f["path"] for rec in doc["recordings"] for f in rec["files"]}


def test_a_link_inside_the_tree_is_followed_and_a_loop_walked_once(tmp_path):
    root = files_tree(tmp_path / "tree")
    (root / "kq_1_2.dat").symlink_to(root / "kq_1_1.dat")
    (root / "sub").mkdir()
    (root / "sub" / "loop").symlink_to(root)
    (root / "broken_1_1.dat").symlink_to(root / "nowhere")
    m = files.ingest(root, "{user}_{gesture}_{repetition}.dat")
    assert [r["id"] for r in m.recordings] == ["kq_1_1.dat", "kq_1_2.dat"]
    reasons = {p["path"]: p["reason"] for p in m.problems}
    assert reasons["broken_1_1.dat"] == "broken symbolic link; left out"
    assert reasons["kq_1_2.dat"].startswith("identical to kq_1_1.dat")


def test_a_widar_csi_folder_linked_from_outside_is_refused(tmp_path):
    outside = widar_tree(tmp_path / "elsewhere")
    root = tmp_path / "tree"
    root.mkdir()
    (root / "CSI").symlink_to(outside / "CSI")
    with pytest.raises(Exception, match="no Widar3.0 recording found"):
        widar.ingest(root)
    m = widar.ingest(root, follow_symlinks=True)
    assert [r["id"] for r in m.recordings] == ["20181109/user1-1-1-1-1"]


# ---------------------------------------------------------------------------------------------------------
# privacy: root relative to the manifest
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(INGESTS))
def test_root_is_recorded_relative_to_the_manifest(runner, tmp_path, kind):
    root = INGESTS[kind][0](tmp_path / "data" / "tree")
    out = tmp_path / "manifests" / "m.json"
    out.parent.mkdir()
    r = runner.invoke(app, ["ingest", kind, str(root), "-o", str(out), "--json"] + INGESTS[kind][2])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["root"] == "../data/tree" and json.loads(r.stdout)["root"] == "../data/tree"
    assert str(tmp_path) not in out.read_text()  # no absolute path anywhere in the file
    m = read_manifest(out)
    first = m.recordings[0]["files"][0]["path"]
    assert (m.root_dir(out) / first).is_file()
    r = runner.invoke(app, ["ingest", kind, str(root), "-o", str(out), "--force", "--absolute-root"]
                      + INGESTS[kind][2])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["root"] == str(root.resolve())


@pytest.mark.parametrize("kind", list(INGESTS))
def test_the_library_keeps_an_absolute_root_until_written(tmp_path, kind):
    make, ingest, _ = INGESTS[kind]
    root = make(tmp_path / "tree")
    m = ingest(root)
    assert os.path.isabs(m.root) and Path(m.root) == root.resolve()
    assert m.recorded_root(tmp_path / "m.json") == "tree"


def test_a_dataset_folder_whose_path_is_not_utf8_is_one_line_exit_2(runner, tmp_path):
    root = files_tree(tmp_path / BAD)
    out = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", "files", str(root), "-t", FILES_T, "-o", str(out)])
    assert r.exit_code == 2, r.output
    assert r.stderr == ("error: the dataset folder's path 'caf\\xe9' is not valid UTF-8, so a manifest cannot record "
                        "it; rename the folder (or a folder above it)\n")
    assert not out.exists()
    out = tmp_path / f"{BAD}.json"  # a manifest name that is not UTF-8 is fine, and shown escaped
    r = runner.invoke(app, ["ingest", "files", str(files_tree(tmp_path / "tree")), "-t", FILES_T, "-o", str(out),
                            "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["manifest"].endswith("caf\\xe9.json") and out.exists()


# ---------------------------------------------------------------------------------------------------------
# a tree deeper than Python's recursion limit
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def deep_chain():
    """Makes ``top``/d/d/.../d (1,100 folders, past the interpreter's recursion limit) holding an empty x.dat,
    and removes it after the test one level at a time (shutil.rmtree, which cleans pytest's temporary folders,
    recurses once per level too)."""
    made = []

    def make(top: Path, levels: int = 1100) -> Path:
        folder = str(top)
        os.makedirs(folder, exist_ok=True)
        for _ in range(levels):  # one at a time: os.makedirs itself recurses once per level
            folder += "/d"
            os.mkdir(folder)
        leaf = Path(folder) / "x.dat"
        leaf.write_bytes(b"")
        made.append((leaf, levels))
        return leaf

    yield make
    for leaf, levels in made:
        leaf.unlink()
        folder = str(leaf.parent)
        for _ in range(levels):
            os.rmdir(folder)
            folder = os.path.dirname(folder)


@pytest.mark.parametrize("kind", list(INGESTS))
def test_a_folder_chain_past_the_recursion_limit_is_walked(runner, tmp_path, kind, deep_chain):
    """A thousand nested folders anywhere in the tree were a RecursionError traceback (the walk, counting a
    left-out folder's files, recursed once per level); now the folder is one problem like any other."""
    root = INGESTS[kind][0](tmp_path / "tree")
    where = {"widar": "CSI/20181109/", "mmfi": "E01/S01/"}.get(kind, "")  # inside the folders each walks
    deep_chain(root / where)
    out = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", kind, str(root), "-o", str(out), "--json"] + INGESTS[kind][2])
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output and out.exists()
    problems = read_manifest(out).problems
    assert any(p["path"].startswith(where + "d") for p in problems), problems


def test_parse_walks_a_folder_chain_past_the_recursion_limit(runner, tmp_path, deep_chain):
    """``rfbench parse FOLDER`` used os.walk, which recurses once per level: one line for the empty log at the
    bottom, not a traceback."""
    deep_chain(tmp_path / "logs")
    put(tmp_path / "logs" / "a.dat", synthetic_log(4, seed=1))
    r = runner.invoke(app, ["parse", str(tmp_path / "logs"), "-o", str(tmp_path / "out")])
    assert "RecursionError" not in r.output and not isinstance(r.exception, RecursionError), r.output
    assert "x.dat: empty file" in r.output and (tmp_path / "out" / "a.npz").exists(), r.output


def test_an_output_that_is_a_dangling_link_is_refused_without_force(runner, tmp_path):
    """``-o`` a link to nothing read as absent (Path.exists follows the link): the user's link was replaced
    without --force."""
    root = files_tree(tmp_path / "tree")
    out = tmp_path / "m.json"
    out.symlink_to(tmp_path / "not-yet.json")
    r = runner.invoke(app, ["ingest", "files", str(root), "-o", str(out)] + INGESTS["files"][2])
    assert r.exit_code == 2 and "already exists" in r.output, r.output
    assert out.is_symlink() and os.readlink(out) == str(tmp_path / "not-yet.json")
    assert not (tmp_path / "not-yet.json").exists()
