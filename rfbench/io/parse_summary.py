"""The text summary of a ``rfbench parse`` job: its table, its notes and the line an interruption prints.

Plain text, no Rich: this is the one output of a long job, and Rich's import and table layout cost more than the
rest of the rendering. The command prints what these functions return; nothing here prints.
"""

from __future__ import annotations

import os
import signal

__all__ = ["TABLE_ROWS", "summary_lines", "interrupted_line", "plain", "hardware_notes"]

def _spans(names: list) -> str:
    """Consecutive runs of inputs as ``first … last`` (or one name), comma-separated, at most 4 runs."""
    runs: list = []
    for k, name in names:
        if runs and runs[-1][2] == k - 1:
            runs[-1][1], runs[-1][2] = name, k
        else:
            runs.append([name, name, k])
    text = ", ".join(a if a == b else f"{a} … {b}" for a, b, _ in runs[:4])
    return text + (f" and {len(runs) - 4} more runs" if len(runs) > 4 else "")


def interrupted_line(signum: int, files: list) -> str:
    done = [(k, f["name"]) for k, f in enumerate(files) if f["status"] != "not finished"]
    left = [(k, f["name"]) for k, f in enumerate(files) if f["status"] == "not finished"]
    name = signal.Signals(signum).name
    parts = [f"interrupted by {name}: {len(done)} of {len(files)} inputs finished"
             + (f" ({_spans(done)})" if done else "")]
    if left:
        parts.append(f"{len(left)} not finished ({_spans(left)})")
    return "; ".join(parts) + "; no temporary file left behind; re-run with --skip-existing to finish"


_COLUMNS = ("file", "records", "shapes", "skipped", "non-CSI", "span s", "Hz")


#: Up to this many inputs the table lists every one; beyond, it lists those with something to say (failed,
#: not finished, records skipped or kept unpermuted), at most this many, and a row of totals.
TABLE_ROWS = 20


def _noteworthy(r: dict) -> bool:
    s = r.get("summary") or {}
    return r["status"] in ("failed", "not finished") or any(v for v in (s.get("skipped") or {}).values())


def _total_row(files: list) -> tuple:
    """One row adding up the written inputs."""
    shapes: dict = {}
    skipped: dict = {}
    non_csi: dict = {}
    records = 0
    for r in files:
        s = r.get("summary")
        if r["status"] != "written" or not s:
            continue
        records += s["records"]
        for total, part in ((shapes, s["shapes"]), (skipped, s["skipped"]), (non_csi, s["non_csi"])):
            for k, v in part.items():
                total[k] = total.get(k, 0) + v
    written = sum(r["status"] == "written" for r in files)
    return (f"all {written} written", str(records), "\n".join(f"{k}: {v}" for k, v in sorted(shapes.items())),
            "\n".join(f"{k} {v}" for k, v in skipped.items() if v and k != "invalid_perm") or "-",
            "\n".join(f"{k}: {v}" for k, v in sorted(non_csi.items())) or "-", "", "")


def _rows(files: list) -> tuple[list, list, int]:
    """The table's rows (cells as plain text, one line per entry), the notes printed below it, and how many
    noteworthy inputs were left out of a long table."""
    rows, notes = [], []
    shown = files
    left_out = 0
    if len(files) > TABLE_ROWS:
        shown = [r for r in files if _noteworthy(r)]
        left_out = max(0, len(shown) - TABLE_ROWS)
        shown = shown[:TABLE_ROWS]
    for r in shown:
        s = r.get("summary") or {}
        if r["status"] == "kept":  # counted in the title; nothing new to show
            continue
        if r["status"] != "written":
            rows.append((r["name"], "failed" if r["status"] == "failed" else "not done", "-", "-", "-", "-", "-"))
            continue
        if s.get("format"):
            notes.extend(hardware_notes(r["name"], s))
        if s["skipped"].get("invalid_perm"):
            notes.append(f"{r['name']}: {s['skipped']['invalid_perm']} record(s) kept unpermuted (invalid_perm: "
                         "their antenna permutation is not one the reference applies)")
        rate = s.get("packet_rate_hz")
        rows.append((
            r["name"],
            str(s["records"]),
            "\n".join(f"{k}: {v}" for k, v in s["shapes"].items()),
            "\n".join(f"{k} {v}" for k, v in s["skipped"].items() if v and k != "invalid_perm") or "-",
            "\n".join(f"{k}: {v}" for k, v in s["non_csi"].items()) or "-",
            f"{s['time_span_s']:.3f}",
            f"{rate:.1f}" if rate else "-",
        ))
    if len(files) > TABLE_ROWS:
        rows.append(_total_row(files))
    return rows, notes, left_out


def hardware_notes(name: str, s: dict) -> list[str]:
    """The lines saying how a log of another hardware than the Intel 5300 was read: its format, variant, chip
    and bandwidth and why each, and the problems counted in records it kept."""
    what = [s["variant"]]
    if s.get("chip"):
        what.append(f"chip {s['chip']}")
    what.append(f"{s['bandwidth_mhz']} MHz" if s.get("bandwidth_mhz") else "bandwidth unknown")
    why = "; ".join(f"{k}: {v}" for k, v in s.get("decided", {}).items())
    lines = [f"{name}: {s['format']} log read as {', '.join(what)}" + (f" ({why})" if why else "")]
    if s.get("problems"):
        kinds = ", ".join(f"{k} {v}" for k, v in s["problems"].items())
        lines.append(f"{name}: records kept with problems: {kinds}")
    return lines


def _wrap_path(path: str, width: int) -> str:
    """``path`` in lines of at most ``width`` characters, broken after a ``/`` where possible."""
    lines, line = [], ""
    for part in path.replace("/", "/\0").split("\0"):
        while len(part) > width:  # a single name longer than the column
            if line:
                lines.append(line)
                line = ""
            lines.append(part[:width])
            part = part[width:]
        if len(line) + len(part) > width:
            lines.append(line)
            line = ""
        line += part
    return "\n".join(lines + [line] if line else lines)


def plain(text: str) -> str:
    """``text`` printable on any terminal: a file name that is not valid UTF-8 shows U+FFFD, never crashes."""
    try:  # a byte of a name that is not UTF-8 (Python keeps it as a lone surrogate) becomes one U+FFFD
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _table(rows: list, width: int, totals: bool) -> list:
    """The summary table as lines: columns one space apart, sized to their content, a rule under the header
    (and above the totals row); the file's path gets the rest of the line and, when longer, breaks after a
    "/"."""
    widths = [max(len(line) for cell in [name, *(row[k] for row in rows)] for line in cell.split("\n"))
              for k, name in enumerate(_COLUMNS)]
    room = width - sum(widths[1:]) - (len(_COLUMNS) - 1)
    widths[0] = min(widths[0], max(room, 16))
    right = [name in ("records", "span s", "Hz") for name in _COLUMNS]

    def line(cells) -> str:
        return " ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    rule = "─" * (sum(widths) + len(widths) - 1)
    out = [line(_COLUMNS), rule]
    for k, row in enumerate(rows):
        if totals and k == len(rows) - 1:
            out.append(rule)
        cells = [_wrap_path(row[0], widths[0]).split("\n"), *(cell.split("\n") for cell in row[1:])]
        for i in range(max(len(c) for c in cells)):
            out.append(line([c[i] if i < len(c) else "" for c in cells]))
    return out


def summary_lines(files: list, counts: dict, found, width: int) -> list[str]:
    """The lines the command prints: a title with the counts, the table (sized to ``width`` columns), the notes,
    what the folders held that no pattern took, and where the archives went."""
    head = [f"{counts['written']} written"]
    if counts["kept"]:
        head.append(f"{counts['kept']} kept (up to date)")
    if counts["failed"]:
        head.append(f"{counts['failed']} failed")
    if counts["not finished"]:
        head.append(f"{counts['not finished']} not finished")
    lines = ["rfbench parse: " + ", ".join(head)]
    rows, notes, left_out = _rows(files)
    if len(files) > TABLE_ROWS:
        lines[0] += " (inputs with something to report, then the totals; --json lists every input)"
    if rows:
        lines += _table(rows, width, totals=len(files) > TABLE_ROWS)
        if left_out:
            lines.append(f"… and {left_out} more input(s) with something to report (--json lists them)")
    lines += notes
    if found.not_taken:
        more = len(found.not_taken) - 3
        shown = ", ".join(str(p) for p in found.not_taken[:3]) + (f" and {more} more" if more > 0 else "")
        logs = f", nor a CSI log named {' or '.join(found.sniffed)}" if found.sniffed else ""
        lines.append(f"{len(found.not_taken)} file(s) in the folders not taken (not {' or '.join(found.patterns)}"
                     f"{logs}): {shown}; choose them with --glob PATTERN")
    if found.unlisted:
        more = len(found.unlisted) - 3
        shown = ", ".join(str(f) for f, _ in found.unlisted[:3]) + (f" and {more} more" if more > 0 else "")
        lines.append(f"{len(found.unlisted)} folder(s) could not be listed, their files not searched: {shown}")
    written = [r for r in files if r["status"] == "written"]
    if written:
        lines.append(f"wrote {_where(written)}")
    return lines


def _where(written: list) -> str:
    """Where the archives went, in one line: the file for one, else the count and their common folder."""
    def short(path: str) -> str:  # relative to the working folder when inside it
        rel = os.path.relpath(path)
        return path if rel.startswith("..") else rel

    if len(written) == 1:
        return short(written[0]["output"])
    return f"{len(written)} archives under {short(os.path.commonpath([os.path.dirname(r['output']) for r in written]))}"
