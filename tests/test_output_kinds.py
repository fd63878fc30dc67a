"""An output path that exists as a device, a FIFO or a socket is never replaced, ``--force`` or not; one ending
in ``/`` names a folder and is refused, by the library and by every command's option naming one file to write
(a ``Path`` option loses the slash before the library sees it).

``-o /dev/null --force`` run as root renamed a regular file over the system's ``/dev/null`` (``check_writable``
refused only folders, and the rename replaced whatever was there); ``-o out/`` wrote a file named ``out``
(``ingest``, ``split``, ``predict``, ``score``, ``adapt``) until the commands kept the slash.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat

import pytest

from rfbench.cli import app
from rfbench.errors import OutputExistsError
from rfbench.io.files import check_writable, write_text

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def _is_fifo(path) -> bool:
    return stat.S_ISFIFO(os.lstat(path).st_mode)


def test_a_fifo_or_a_socket_is_never_replaced_even_with_force(tmp_path):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    for force in (False, True):
        with pytest.raises(OutputExistsError, match="is a FIFO, not a regular file: rfbench writes only regular "
                                                    "files and never replaces anything else, even with `force`"):
            write_text(fifo, "{}", force=force)
    assert _is_fifo(fifo)
    assert os.listdir(tmp_path) == ["out.json"]  # no temporary file left beside it
    sock_path = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        with pytest.raises(OutputExistsError, match="is a socket"):
            check_writable(sock_path, force=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_is_never_replaced_even_with_force(tmp_path):
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    with pytest.raises(OutputExistsError, match="is a device"):
        write_text(null, "x", force=True)
    assert stat.S_ISCHR(os.lstat(null).st_mode)


def test_a_link_is_still_replaced_with_force_and_never_followed(tmp_path):
    target = tmp_path / "kept.txt"
    target.write_text("mine")
    link = tmp_path / "out.json"
    link.symlink_to(target)
    write_text(link, "{}", force=True)
    assert target.read_text() == "mine" and not link.is_symlink() and link.read_text() == "{}"


def test_a_folder_at_the_output_says_so_before_asking_for_force(tmp_path):
    """The refusal said "already exists; pass `force`", and with `force` then "is a directory"."""
    (tmp_path / "outdir").mkdir()
    for force in (False, True):
        with pytest.raises(OutputExistsError, match="outdir is a directory, not a file"):
            check_writable(tmp_path / "outdir", force=force)


def test_a_path_ending_in_a_slash_names_a_folder(tmp_path):
    with pytest.raises(OutputExistsError, match="ends with '/': it names a folder, not the file to write"):
        check_writable(f"{tmp_path}/splits/")
    assert not (tmp_path / "splits").exists()


def _in(folder, argv, runner):
    here = os.getcwd()
    os.chdir(folder)
    try:
        return runner.invoke(app, argv)
    finally:
        os.chdir(here)


def test_every_file_output_option_refuses_a_folder_name(runner, tiny_demo, tmp_path):
    """``-o NAME/`` names a folder: no command writes a file called NAME instead."""
    manifest = str(tiny_demo / "widar-manifest.json")
    report = json.loads((tiny_demo / "gesture" / "report.json").read_text())["reproducer"]["argv"]
    cases = {
        "ingest": (["ingest", "widar", str(tiny_demo / "data" / "widar")], tmp_path),
        "split": (["split", manifest, "-p", "cross-room", "--test", "3"], tmp_path),
        "adapt": (["adapt", "--synthetic"], tmp_path),
        "score": (report[1:report.index("-o")], tiny_demo / "gesture"),
    }
    for name, (argv, where) in cases.items():
        target = tmp_path / f"{name}-out"
        result = _in(where, [*argv, "-o", f"{target}/"], runner)
        assert result.exit_code == 2, (name, result.output)
        assert "ends with '/': it names a folder, not the file to write" in " ".join(result.output.split()), name
        assert not os.path.lexists(target), name
    model, windows = str(tiny_demo / "bvp" / "centroid.onnx"), str(tiny_demo / "windows" / "bvp-test")
    result = runner.invoke(app, ["predict", model, "--windows", windows, "-o", f"{tmp_path}/p.npy/"])
    assert result.exit_code == 2 and "it names a folder" in " ".join(result.output.split()), result.output
    assert not os.path.lexists(tmp_path / "p.npy") and not os.path.lexists(tmp_path / "p.json")
    lodo = tmp_path / "lodo"
    result = runner.invoke(app, ["split", manifest, "-p", "leave-one-domain-out", "--domain", "room", "-o",
                                 f"{lodo}/", "--json"])  # a folder is what leave-one-domain-out writes into
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(lodo)) == ["split-room-1.json", "split-room-2.json", "split-room-3.json"]


def test_split_and_score_refuse_a_fifo_output_with_force(runner, tiny_demo, tmp_path):
    fifo = tmp_path / "split.json"
    os.mkfifo(fifo)
    result = runner.invoke(app, ["split", str(tiny_demo / "widar-manifest.json"), "-p", "cross-room", "--test", "3",
                                 "-o", str(fifo), "--force"])
    assert result.exit_code == 2 and "is a FIFO, not a regular file" in result.output, result.output
    assert _is_fifo(fifo)
    out = tmp_path / "report.json"
    os.mkfifo(out)
    argv = json.loads((tiny_demo / "gesture" / "report.json").read_text())["reproducer"]["argv"]
    assert argv[:2] == ["rfbench", "score"]
    here = os.getcwd()
    os.chdir(tiny_demo / "gesture")
    try:
        result = runner.invoke(app, [*argv[1:argv.index("-o")], "-o", str(out), "--force"])
    finally:
        os.chdir(here)
    assert result.exit_code == 2 and "is a FIFO, not a regular file" in result.output, result.output
    assert _is_fifo(out) and not (tmp_path / "report.md").exists()


def test_windows_force_over_an_x_that_is_a_fifo_is_refused(runner, tiny_demo, tmp_path):
    out = tmp_path / "w"
    made = runner.invoke(app, ["windows", str(tiny_demo / "bvp-split.json"), "--side", "test", "-o", str(out)])
    assert made.exit_code == 0, made.output
    (out / "X.npy").unlink()
    os.mkfifo(out / "X.npy")
    result = runner.invoke(app, ["windows", str(tiny_demo / "bvp-split.json"), "--side", "test", "-o", str(out),
                                 "--force"])
    assert result.exit_code == 2 and "is a FIFO, not a regular file" in result.output, result.output
    assert _is_fifo(out / "X.npy")


def test_parse_force_over_an_output_that_is_a_fifo_fails_that_input(runner, tiny_demo, tmp_path):
    logs = sorted((tiny_demo / "data").rglob("*.dat"))[:2]
    assert len(logs) == 2
    for log in logs:
        shutil.copy(log, tmp_path / log.name)
    out = tmp_path / "out"
    out.mkdir()
    fifo = out / logs[0].with_suffix(".npz").name
    os.mkfifo(fifo)
    result = runner.invoke(app, ["parse", str(tmp_path / logs[0].name), str(tmp_path / logs[1].name), "-o",
                                 str(out), "--force"])
    assert result.exit_code != 0 and "is a FIFO, not a regular file" in " ".join(result.output.split())
    assert _is_fifo(fifo) and (out / logs[1].with_suffix(".npz").name).is_file()
