"""Run README.md as a transcript: every ```console and ```python block, in order, in one folder.

Conventions (README.md says them too, in "About the examples"):

- ```console blocks: lines starting with ``$ `` are commands (a trailing ``\\`` continues a command on the
  next line; ``# ...`` after a command is a comment); the lines up to the next command are its expected
  output. A line ``...`` stands for any number of lines, and ``...`` inside a line for any text. Commands
  run in-process: ``rfbench ...`` through the Typer app, ``python -m rfbench.<module> ...`` through that
  module's ``main``, ``python FILE.py`` as a script, ``python -c CODE`` with exec; ``cat FILE``, ``ls DIR`` and ``echo $?`` are
  emulated. A command followed by ``echo $?`` must exit with the code shown; otherwise one whose expected
  output holds an ``error:`` line must exit non-zero, and every other command 0.
- ```python blocks are executed (stdout is discarded).
- ``<!-- file: NAME -->`` on the line before a block writes the block to NAME instead of running it.
- ``<!-- not-run -->`` on the line before a block skips it (illustrations, shell set-up, output-only).
- Any other block must carry one of these two markers, so nothing is skipped silently.

Output is compared after removing trailing spaces, with the terminal width fixed by ``COLUMNS=100``.
``python tests/readme_runner.py [README.md]`` prints what every console command really prints, for
writing the README.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import runpy
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
COLUMNS = "100"
RUN_LANGS = ("console", "python")

_FENCE = re.compile(r"^```(\S*)\s*$")
_MARK = re.compile(r"^<!--\s*(not-run|file:\s*(\S+))\s*-->\s*$")


@dataclass
class Block:
    lang: str
    lines: list[str]
    line_no: int  # 1-based line of the opening fence
    marker: str | None = None  # "not-run", "file" or None
    file: str | None = None


@dataclass
class Step:
    command: str
    expected: list[str] = field(default_factory=list)


def blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown text (nested fences are not supported)."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        b = Block(m.group(1), lines[start + 1:j], start + 1)
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mark = _MARK.match(lines[k]) if k >= 0 else None
        if mark:
            b.marker = "file" if mark.group(2) else "not-run"
            b.file = mark.group(2)
        out.append(b)
        i = j + 1
    return out


def steps(block: Block) -> list[Step]:
    """The commands of a console block with their expected output."""
    out: list[Step] = []
    lines = iter(block.lines)
    for line in lines:
        if line.startswith("$ "):
            cmd = line[2:]
            while cmd.rstrip().endswith("\\"):
                cmd = cmd.rstrip()[:-1] + " " + next(lines).strip()
            out.append(Step(cmd))
        elif out:
            out[-1].expected.append(line)
        elif line.strip():
            raise ValueError(f"README line {block.line_no}: console block output before any '$ ' command")
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether actual lines fit expected lines, where a line ``...`` is any number of lines and ``...`` in
    a line is any text (trailing spaces ignored)."""
    exp = [e.rstrip() for e in expected]
    act = [a.rstrip() for a in actual]
    while exp and not exp[-1]:
        exp.pop()
    while act and not act[-1]:
        act.pop()

    def line_ok(e: str, a: str) -> bool:
        if "..." not in e:
            return e == a
        pattern = ".*".join(re.escape(part) for part in e.split("..."))
        return re.fullmatch(pattern, a) is not None

    memo: dict = {}

    def go(i: int, j: int) -> bool:
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(exp):
            ok = j == len(act)
        elif exp[i].strip() == "...":
            ok = any(go(i + 1, jj) for jj in range(j, len(act) + 1))
        else:
            ok = j < len(act) and line_ok(exp[i], act[j]) and go(i + 1, j + 1)
        memo[key] = ok
        return ok

    return go(0, 0)


class Session:
    """Runs commands in one folder, remembering the last exit code (for ``echo $?``)."""

    def __init__(self, cwd: Path):
        self.cwd = Path(cwd)
        self.last_code = 0

    @contextlib.contextmanager
    def _here(self):
        old = os.getcwd()
        old_cols = os.environ.get("COLUMNS")
        os.chdir(self.cwd)
        os.environ["COLUMNS"] = COLUMNS
        try:
            yield
        finally:
            os.chdir(old)
            if old_cols is None:
                os.environ.pop("COLUMNS", None)
            else:
                os.environ["COLUMNS"] = old_cols

    def run(self, command: str) -> tuple[int, str]:
        """Run one console command; returns (exit code, printed text)."""
        argv = shlex.split(command, comments=True)
        with self._here():
            if argv[0] == "rfbench":
                code, text = self._rfbench(argv[1:])
            elif argv[:2] == ["python", "-c"]:
                code, text = self._python(lambda: exec(argv[2], {"__name__": "__main__"}))
            elif argv[:2] == ["python", "-m"]:
                code, text = self._python(lambda: _module_main(argv[2])(argv[3:]))
            elif argv[0] == "python":
                code, text = self._python(lambda: runpy.run_path(argv[1], run_name="__main__") and 0)
            elif argv[0] == "cat":
                code, text = 0, Path(argv[1]).read_text(encoding="utf-8")
            elif argv[0] == "ls":
                code, text = 0, "  ".join(sorted(p.name for p in Path(argv[1]).iterdir())) + "\n"
            elif argv == ["echo", "$?"]:
                code, text = 0, f"{self.last_code}\n"
            else:
                raise ValueError(f"the README runner does not know how to run: {command}")
        self.last_code = code
        return code, text

    def _rfbench(self, args: list[str]) -> tuple[int, str]:
        from typer.testing import CliRunner

        from rfbench.cli import app

        result = CliRunner().invoke(app, args, env={"COLUMNS": COLUMNS}, catch_exceptions=False)
        return result.exit_code, result.output

    def _python(self, call) -> tuple[int, str]:
        buf = io.StringIO()
        code = 0
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            try:
                rc = call()
                code = rc if isinstance(rc, int) else 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return code, buf.getvalue()

    def exec_python(self, source: str, name: str) -> None:
        with self._here(), contextlib.redirect_stdout(io.StringIO()):
            exec(compile(source, name, "exec"), {"__name__": "__readme__"})

    def write(self, name: str, lines: list[str]) -> None:
        path = self.cwd / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _module_main(module: str):
    import importlib

    mod = importlib.import_module(module)
    if not hasattr(mod, "main"):
        raise ValueError(f"python -m {module}: the module has no main(argv)")
    return mod.main


def expected_code(step: Step, following: Step | None) -> int | None:
    """The exit code ``echo $?`` shows right after the command; else non-zero (None) when its output holds an
    ``error:`` line; else 0."""
    if following is not None and following.command.strip() == "echo $?" and following.expected:
        return int(following.expected[0].strip())
    if any(line.startswith("error:") for line in step.expected):
        return None
    return 0


def run_page(text: str, session: Session, name: str) -> tuple[int, list[str]]:
    """Run every block of a Markdown page (README.md or a ``docs/`` page) in ``session``, in order, as
    ``tests/test_readme.py`` runs README.md; returns ``(commands and python blocks run, failure messages)``."""
    failures: list[str] = []
    ran = 0
    for b in blocks(text):
        if b.marker == "not-run":
            continue
        if b.marker == "file":
            session.write(b.file, b.lines)
            continue
        if b.lang == "python":
            try:
                session.exec_python("\n".join(b.lines), f"{name}:{b.line_no}")
            except Exception as exc:  # report every failing example, not only the first
                failures.append(f"{name}: python block at line {b.line_no}: {exc.__class__.__name__}: {exc}")
            ran += 1
            continue
        if b.lang != "console":
            continue
        page_steps = steps(b)
        for i, step in enumerate(page_steps):
            code, out = session.run(step.command)
            ran += 1
            want = expected_code(step, page_steps[i + 1] if i + 1 < len(page_steps) else None)
            if (want is None and code == 0) or (want is not None and code != want):
                failures.append(f"{name} line {b.line_no}: `{step.command}` exited {code}, expected "
                                f"{'non-zero' if want is None else want}:\n{out}")
            elif not matches(step.expected, out.splitlines()):
                failures.append(f"{name} line {b.line_no}: `{step.command}` printed:\n{out}\n--- the page shows:\n"
                                + "\n".join(step.expected))
    return ran, failures


def main(argv: list[str] | None = None) -> int:
    """Print what every console command of the README prints (run in a fresh temporary folder)."""
    import tempfile

    args = argv if argv is not None else sys.argv[1:]
    readme = Path(args[0]) if args else README
    with tempfile.TemporaryDirectory() as tmp:
        session = Session(Path(tmp))
        for b in blocks(readme.read_text(encoding="utf-8")):
            if b.marker == "not-run":
                continue
            if b.marker == "file":
                session.write(b.file, b.lines)
            elif b.lang == "python":
                session.exec_python("\n".join(b.lines), f"README.md:{b.line_no}")
            elif b.lang == "console":
                print(f"```console  (README line {b.line_no})")
                for s in steps(b):
                    code, text = session.run(s.command)
                    print(f"$ {s.command}" + (f"    [exit {code}]" if code else ""))
                    print("\n".join(line.rstrip() for line in text.rstrip("\n").splitlines()))
                print("```")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
