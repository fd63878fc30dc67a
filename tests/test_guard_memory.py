"""Running out of memory inside a command is one line and exit 2: under an address-space limit (``prlimit --as``,
a container's), a model of 25 million empty nodes made ``rfbench predict`` end in a 33-line MemoryError traceback
with exit 1 (found by an adversarial probe; the model itself is now refused before: test_onnx_untrusted.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import typer

from rfbench.commands._common import guard


def test_a_memory_error_under_the_guard_is_one_line_and_exit_2(capsys):
    with pytest.raises(typer.Exit) as ended:
        with guard():
            raise MemoryError
    assert ended.value.exit_code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: out of memory:") and err.count("\n") == 1, err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS as Linux applies it")
def test_a_command_that_meets_its_address_space_limit_says_so(tmp_path):
    """The whole process: work under the guard that needs more than the process's address-space limit allows (4 GB
    under 2 GiB; the interpreter and rfbench's imports fit) ends with the one line and exit 2."""
    script = textwrap.dedent("""
        import resource, sys
        from rfbench.commands import _common

        def hungry():
            with _common.guard():
                soft, hard = resource.getrlimit(resource.RLIMIT_AS)
                resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), hard))
                blocks = [bytearray(64 << 20) for _ in range(64)]  # 4 GB: past the limit
                print(len(blocks))

        try:
            hungry()
        except BaseException as exc:  # (typer.Exit outside a Typer app: its code; anything else: 99)
            raise SystemExit(getattr(exc, "exit_code", 99))
    """)
    limit = 2 << 30  # 2 GiB of address space
    result = subprocess.run([sys.executable, "-c", script, str(limit)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert result.stderr.startswith("error: out of memory:") and result.stderr.count("\n") == 1, result.stderr


@pytest.mark.parametrize("raised, code, said", [(KeyboardInterrupt, 130, "error: interrupted\n")])
def test_an_interrupt_while_a_class_is_made_is_one_line(capsys, raised, code, said):
    """A Ctrl-C (or SIGTERM, which rfbench turns into one while it writes) that lands while a class is made — a
    dataclass's fields, on the first import of a module — reaches the guard as a RuntimeError ("Error calling
    __set_name__"), and ended the command with a traceback."""

    class Raises:
        def __set_name__(self, owner, name):
            raise raised

    with pytest.raises(typer.Exit) as ended:
        with guard():
            class Made:
                field = Raises()
    assert ended.value.exit_code == code
    assert capsys.readouterr().err == said


def test_an_os_error_naming_no_file_says_what_happened(capsys, monkeypatch):
    """With no usable temporary folder (a full disk everywhere), Python's tempfile raises FileNotFoundError naming
    no file: the line read "error: : no such file or directory" (found by an adversarial probe)."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setattr(tempfile, "_candidate_tempdir_list", lambda: [])
    with pytest.raises(typer.Exit) as ended:
        with guard():
            tempfile.gettempdir()
    assert ended.value.exit_code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no usable temporary directory found in") and err.count("\n") == 1, err
    with pytest.raises(typer.Exit):
        with guard():
            open("/nonexistent-folder-rfbench/x")
    assert capsys.readouterr().err == "error: /nonexistent-folder-rfbench/x: no such file or directory\n"
