"""Markdown and terminal renderings of a report, made from the JSON document alone.

Both show the evidence tag first, any leakage or layout warning next, then every number with its label,
its interval, the baseline and the difference. Nothing here computes a number.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any, Mapping, Sequence

__all__ = ["render_markdown", "render_terminal", "headline", "fmt_value", "markdown_path"]

#: The lead of a gesture report's note on test rows of classes the training side does not hold.
UNSEEN_WARNING = "UNSEEN CLASSES SCORED"
#: The notes shown as warnings, above the numbers (report.md, the terminal, a robustness summary's warnings).
_WARN_PREFIXES = ("LEAKAGE-PRONE", "LAYOUT NOT VERIFIED", UNSEEN_WARNING)


def fmt_value(x: Any, missing: str = "—") -> str:
    """A report number for display: 4 decimals, ``inf``/``nan`` as stored, None as ``missing``."""
    if x is None:
        return missing
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    return f"{x:.4f}"


def _interval(ci: Mapping | None, side: str) -> str:
    """The interval ``ci[side]`` as text (``side``: model, baseline, delta, or a gesture baseline's value or
    delta): a dash when there is none, "undefined" when the bootstrap could not give one."""
    if not ci or not ci.get(side):
        return "—"
    iv = ci[side]
    if iv.get("low") is None:
        return "undefined"
    return f"[{fmt_value(iv['low'])}, {fmt_value(iv['high'])}]"


def _level(report: Mapping) -> str:
    b = report.get("bootstrap") or {}
    lv = b.get("level")
    return f"{100 * lv:g}% CI" if isinstance(lv, (int, float)) and b.get("method") else "CI"


def _held_out(split: Mapping) -> str:
    """What a split held out and the gestures it kept, as the Split line shows them after the protocol's name:
    `` (subject user4 held out), gestures common6``; empty for a split that holds out no domain value."""
    held = split.get("held_out") if isinstance(split.get("held_out"), Mapping) else {}
    values = held.get("values") if isinstance(held.get("values"), list) else []
    text = f" ({held.get('key')} {', '.join(map(str, values))} held out)" if held.get("key") and values else ""
    gestures = split.get("params").get("gestures") if isinstance(split.get("params"), Mapping) else None
    if isinstance(gestures, list):
        text += ", gestures " + ", ".join(map(str, gestures))
    elif gestures is not None:
        text += f", gestures {gestures}"
    return text


def headline(report: Mapping) -> list[tuple[str, str]]:
    """``(field, text)`` lines summarising the context of the numbers."""
    rows = []
    split = report.get("split")
    if split:
        audit = split.get("audit") or {}
        checks = audit.get("checks") or []
        text = (f"protocol {split.get('protocol')}{_held_out(split)}, seed {split.get('seed')}, audit "
                f"{'passed' if audit.get('passed') else 'FAILED'} ({len(checks)} checks), "
                f"{split.get('train_recordings')} train / {split.get('test_recordings')} test recordings")
        if split.get("leakage_prone"):
            text += ", LEAKAGE-PRONE"
        if split.get("synthetic"):
            text += ", synthetic corpus"
        shared = [x for x in audit.get("shared") or [] if isinstance(x, Mapping)]
        if shared:  # what the protocol does not hold out: a reader sees the same person on both sides
            text += "; on both sides: " + ", ".join(f"{x.get('key')} {x.get('shared')}/{x.get('values')}"
                                                   for x in shared)
        rows.append(("Split", text))
    else:
        rows.append(("Split", "none given"))
    prov = report.get("provenance")
    if prov:
        rows.append(("Provenance", str(prov.get("data"))))
        if prov.get("ground_truth"):
            rows.append(("Ground truth", str(prov.get("ground_truth"))))
    cov = report.get("coverage")
    if cov:
        text = f"{cov.get('scored_recordings')} of {cov.get('test_recordings')} test recordings scored"
        excluded = cov.get("excluded_by_windows") or []
        if excluded:
            kinds = ", ".join(f"{g.get('count')} ({g.get('what')})"
                              for g in cov.get("excluded_by_windows_counts") or [])
            text += f"; {len(excluded)} excluded by windows: {kinds}"
        if cov.get("missing_count"):
            text += " (a subset, allowed with --allow-partial: these numbers do not cover the whole test side)"
        rows.append(("Coverage", text))
        dropped = cov.get("dropped_by_windows") or []
        if dropped:
            rows.append(("Dropped", "by windows, from scored test recordings: " + "; ".join(
                f"{g.get('count')} {g.get('what')}{'s' if g.get('count') != 1 else ''} ({g.get('reason')}) in "
                f"{g.get('recordings')} recording{'s' if g.get('recordings') != 1 else ''}" for g in dropped)))
    shared = report.get("shared_files")
    if isinstance(shared, Mapping) and shared.get("count"):
        rows.append(("Shared files", f"{shared.get('count')} byte-identical dataset file(s) on both sides of the "
                                     f"split" + (", scored anyway (--allow-shared-files)" if shared.get("allowed")
                                                 else "")))
    skel = report.get("skeleton")
    lay = report.get("layout_check")
    if skel:
        text = f"{skel.get('name')} ({skel.get('source')})"
        if lay:
            verdict = {True: "passed", False: "FAILED", None: "not verified"}[lay.get("passed")]
            text += f"; layout check {verdict}: {lay.get('reason')}"
            if lay.get("overridden"):
                text += " — OVERRIDDEN with --trust-layout"
        rows.append(("Skeleton", text))
    labels = report.get("labels")
    if labels:
        text = f"{labels.get('size')} classes, {labels.get('source')} (sha256 {str(labels.get('sha256'))[:12]}…)"
        if labels.get("checked_against_manifest"):
            text += (f"; every label checked against its recording's {labels['checked_against_manifest']} in the "
                     "manifest")
        rows.append(("Labels", text))
    base = report.get("baseline") or {}
    if base.get("kinds"):
        text = (f"majority class ({base.get('majority_class')}) and class prior, from {base.get('train_rows')} rows "
                f"of {base.get('train_recordings')} training recordings")
        if base.get("classes_absent_from_training"):
            text += f" (absent from training: {', '.join(base['classes_absent_from_training'])})"
        rows.append(("Baseline", text))
    elif base.get("kind") == "mean-pose":
        text = (f"mean training pose from {base.get('train_rows')} rows of {base.get('train_recordings')} training "
                f"recordings")
        if base.get("joints_never_visible"):
            text += f" (never visible in training: {', '.join(base['joints_never_visible'])})"
        rows.append(("Baseline", text))
    elif base.get("kind"):
        rows.append(("Baseline", str(base.get("kind"))))
    else:
        rows.append(("Baseline", f"none — {base.get('reason')}"))
    boot = report.get("bootstrap") or {}
    if boot.get("method"):
        rows.append(("Bootstrap", f"{boot.get('replicates')} replicates, {100 * boot.get('level'):g}% percentile "
                                  f"interval over {boot.get('clusters')} {boot.get('cluster_by')} clusters, seed "
                                  f"{boot.get('seed')}{', paired with the baseline' if boot.get('paired') else ''}"))
    else:
        rows.append(("Bootstrap", f"none — {boot.get('reason')}"))
    data = report.get("data")
    if data and report.get("task") == "gesture":
        rows.append(("Data", f"{data.get('rows')} rows, {data.get('classes')} classes, predictions from "
                             f"{data.get('predictions')}"))
    elif data:
        rows.append(("Data", f"{data.get('rows')} rows × {data.get('joints')} joints, {data.get('dims')}D, units "
                             f"{data.get('units')}"))
    return rows


#: A picture report.md may link: a PNG file name beside the report (no folder, no scheme, no ``//``).
PICTURE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.png")


def markdown_path(report_path: Path) -> Path:
    """Where a report's Markdown lives: beside the JSON report, its name with ``.md`` for the last suffix
    (``score`` writes it there, ``verify`` checks it there)."""
    return report_path.with_suffix(".md")


def render_markdown(report: Mapping[str, Any], pictures: Sequence[tuple[str, str]] | None = None) -> str:
    """The report as Markdown (a file beside the JSON), made from the JSON alone: ``rfbench verify`` renders it
    again and compares the bytes.

    ``pictures`` are ``(caption, path relative to the Markdown file)`` pairs, embedded as images in a
    "Pictures" section; by default the report's own ``pictures`` list (``[{caption, file}]``).
    """
    if pictures is None:
        pictures = [(p.get("caption"), p.get("file")) for p in report.get("pictures") or [] if isinstance(p, Mapping)]
    out = [f"# rfbench report — {_md(report.get('task'))}", ""]
    out.append(f"**Evidence: {_md(report.get('evidence'))}** — {_md(report.get('evidence_rule', ''))}")
    out.append("")
    notes = list(report.get("notes") or [])
    for note in notes:
        if note.startswith(_WARN_PREFIXES):
            out.append(f"> **Warning:** {_md(note)}")
            out.append("")
    out += ["| | |", "|---|---|"]
    out += [f"| {k} | {_md(v)} |" for k, v in headline(report)]
    windows = _windows_settings(report)
    if windows is not None:  # which rows of the test side were scored: the window length, stride and target
        out.append(f"| Windows | {_md(windows)} |")
    if pictures:  # first after the context: a picture is read before a table
        out += ["", "## Pictures", ""]
        from urllib.parse import quote

        for caption, rel in pictures:
            if isinstance(rel, str) and PICTURE_NAME.fullmatch(rel):
                out += [f"![{_md(caption)}]({quote(rel)})", "", f"*{_md(caption)}* ({_code(rel)}; drawn from the "
                        f"inputs; its sha256 is in the JSON report)", ""]
            else:  # only a file beside the report is ever linked (no scheme, no //, no absolute path)
                out += [f"*{_md(caption)}* (not shown: {_code(str(rel))} is not a picture file beside the report)",
                        ""]
    out += ["", "## Results", ""]
    out_tail = _coverage_markdown(report)
    lvl = _level(report)
    if report.get("task") == "gesture":
        out += _gesture_markdown(report, lvl)
        return _markdown_tail(report, out + out_tail, notes)
    out.append(f"| metric | model | {lvl} | baseline | {lvl} | Δ model − baseline | {lvl} | better | scoreable | "
               f"unscoreable samples |")
    out.append("|---|---:|---|---:|---|---:|---|---|---:|---:|")
    rows = _pose_rows(report.get("results", []))
    for label, cells in rows:
        out.append(f"| {_md(label)} | " + " | ".join(cells) + " |")
    if any(label.endswith(_SAME_AVERAGING) for label, _ in rows):
        out += ["", f"A row labelled *{_md(_SAME_AVERAGING.strip())}* stands for both averagings, which agree in "
                    "every figure shown (the JSON report holds each with its full precision)."]
    macro = [r for r in report.get("results", []) if (r.get("model") or {}).get("per_joint")]
    if macro:
        joints = list((report.get("skeleton") or {}).get("joints") or macro[0]["model"]["per_joint"].keys())
        out += ["", "## Per joint (model, macro entries)", ""]
        out.append("| joint | " + " | ".join(_md(r["label"]) for r in macro) + " |")
        out.append("|---|" + "---:|" * len(macro))
        for j in joints:
            out.append(f"| {_md(j)} | " + " | ".join(fmt_value(r["model"]["per_joint"].get(j), "unscoreable")
                                               for r in macro) + " |")
    return _markdown_tail(report, out + out_tail, notes)


def _windows_settings(report: Mapping[str, Any]) -> str | None:
    """The settings the scored rows were made with: the stride and target pick which frames of the test side are
    scored, so report.md says them. Only what ``rfbench verify`` compares is shown: the chain's first step, when
    it is ``rfbench windows SPLIT --side test -o OUT`` with the settings from position 7 on (the split path and
    the output folder are not compared, so nothing of them is shown), a path option's value replaced by ``FILE``
    (verify compares the option, not the path as typed)."""
    chain = report.get("chain")
    step = chain[0] if isinstance(chain, list) and chain else None
    argv = step.get("argv") if isinstance(step, Mapping) and step.get("step") == "windows" else None
    if not isinstance(argv, list) or len(argv) < 7 or not all(isinstance(a, str) for a in argv) \
            or any(argv[k] != word for k, word in _WINDOWS_FIXED.items()):
        return None
    settings = list(argv[7:])
    paths = False
    for k, a in enumerate(settings[:-1]):
        if a in _WINDOWS_PATH_OPTIONS:
            settings[k + 1], paths = "FILE", True
    text = "the test side's rows as rfbench windows made them: " + (" ".join(settings) or "its defaults")
    if paths:
        text += " (FILE: the label-set file; its path is not compared, its class names are the report's label set)"
    return text


#: The words of the chain's windows step at fixed places (``rfbench windows SPLIT --side test -o OUT``), as
#: :func:`rfbench.report.verify._check_chain` requires them; its settings follow from position 7.
_WINDOWS_FIXED = {0: "rfbench", 1: "windows", 3: "--side", 4: "test", 5: "-o"}
#: Options of the windows step whose value is a path (verify compares them with the value masked).
_WINDOWS_PATH_OPTIONS = ("--label-set",)


#: Test recordings excluded by windows listed one by one in report.md (report.json lists every one).
MD_EXCLUDED_SHOWN = 100


def _coverage_markdown(report: Mapping[str, Any]) -> list[str]:
    """The test recordings windows excluded, each with its reason, and what it dropped (none: no section)."""
    cov = report.get("coverage") or {}
    excluded = cov.get("excluded_by_windows") or []
    dropped = cov.get("dropped_by_windows") or []
    if not excluded and not dropped:
        return []
    out = ["", "## Coverage", ""]
    if excluded:
        out += [f"{len(excluded)} test recording(s) excluded by windows, not scored:", "",
                "| recording | kind | reason |", "|---|---|---|"]
        out += [f"| {_code(e.get('id'))} | {_md(e.get('kind'))} | {_md(e.get('reason'))} |"
                for e in excluded[:MD_EXCLUDED_SHOWN]]
        if len(excluded) > MD_EXCLUDED_SHOWN:
            out += ["", f"… and {len(excluded) - MD_EXCLUDED_SHOWN} more, listed in the JSON report "
                        "(coverage.excluded_by_windows)."]
    if dropped:
        out += ["", "Dropped by windows from the scored test recordings (each listed in the windows index):", "",
                "| what | reason | count | recordings |", "|---|---|---:|---:|"]
        out += [f"| {_md(g.get('what'))} | {_md(g.get('reason'))} | {g.get('count')} | {g.get('recordings')} |"
                for g in dropped]
    return out


#: The end of a pose row's label that stands for its micro and macro entries at once.
_SAME_AVERAGING = " micro = macro"


def _pose_cells(r: Mapping) -> list[str]:
    m = r.get("model") or {}
    b = r.get("baseline") or {}
    return [fmt_value(m.get("value"), "unscoreable"), _interval(r.get("ci"), "model"),
            fmt_value(b.get("value")) if r.get("baseline") else "—", _interval(r.get("ci"), "baseline"),
            fmt_value(r.get("delta")), _interval(r.get("ci"), "delta"), str(r.get("better")),
            f"{m.get('scoreable')} {m.get('scoreable_unit', '')}", str(m.get("unscoreable_samples"))]


def _pose_rows(results) -> list[tuple[str, list[str]]]:
    """``(label, cells)`` of the pose results table: a macro entry whose every cell reads as its micro sibling's
    (same spec but the averaging) is not repeated; the micro row's label then ends in " micro = macro"."""
    def spec_key(r):
        spec = dict(r.get("spec") or {})
        spec.pop("averaging", None)
        return repr(sorted(spec.items(), key=lambda kv: kv[0]))

    micro = {spec_key(r): k for k, r in enumerate(results) if (r.get("spec") or {}).get("averaging") == "micro"}
    rows: list = [[r["label"], _pose_cells(r)] for r in results]
    keep = []
    for k, r in enumerate(results):
        j = micro.get(spec_key(r))
        if (r.get("spec") or {}).get("averaging") == "macro" and j is not None and rows[j][1] == rows[k][1] \
                and rows[j][0].endswith(" micro"):
            rows[j][0] += _SAME_AVERAGING[len(" micro"):]
            continue
        keep.append(k)
    return [(rows[k][0], rows[k][1]) for k in keep]


def _markdown_tail(report: Mapping[str, Any], out: list[str], notes: list[str]) -> str:
    """Notes, inputs, reproducer and version: the end of every Markdown report."""
    if notes:
        out += ["", "## Notes", ""] + [f"- {_md(n)}" for n in notes]
    out += ["", "## Inputs", "", "| role | path | bytes | sha256 |", "|---|---|---:|---|"]
    for i in report.get("inputs", []):
        out.append(f"| {_md(i.get('role'))} | {_code(i.get('path'))} | {_md(i.get('bytes'))} | "
                   f"{_code(i.get('sha256'))} |")
    rep = report.get("reproducer")
    out += ["", "## Reproduce", ""]
    if rep:
        out += _fenced(" ".join(_shell_word(str(a)) for a in rep["argv"])) + [
            "", f"Recorded as run in {_code(rep.get('cwd'))}"
            + ("" if str(rep.get("cwd", "")).startswith("/") else " (relative to this report's folder)")
            + ". That folder and the paths above are as they were typed, and nothing checks them: `rfbench verify "
              "REPORT.json` re-runs the command on the inputs listed above (each checked by size and sha256) and "
              "compares every number."]
    else:
        out.append("No reproducer: these numbers are CLAIMED and cannot be re-run.")
    out += ["", f"rfbench {_md(report.get('rfbench_version'))}, schema {_code(report.get('schema'))}", ""]
    return "\n".join(out)


#: Characters that could start Markdown structure inside a line: escaped with a backslash.
_MD_PUNCT = set("\\`*_[]|#~!")
_MD_HTML = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def _md(text: Any) -> str:
    """Free text (a unit, a joint or class name, a note, a domain value) as inert Markdown on one line:
    line breaks become spaces, HTML is entity-escaped and Markdown punctuation backslash-escaped, so no value
    can start a heading, a link, emphasis, HTML or a new table cell. Text between single backticks, as rfbench's
    own notes write commands (`rfbench verify`), becomes a code span (:func:`_code`, which nothing can close);
    any other backtick is escaped."""
    line = " ".join(str(text).splitlines())
    pieces = line.split("`")
    if len(pieces) >= 3 and len(pieces) % 2 == 1 and all(pieces[1::2]):
        return "".join(_code(p) if k % 2 else _md_plain(p) for k, p in enumerate(pieces))
    return _md_plain(line)


#: Characters a reader would not see but that change what is seen (a regular-expression class, without its
#: brackets): bidirectional overrides and isolates (which reorder the text around them), zero-width characters,
#: marks and the soft hyphen, and the letters and symbols that print as nothing or a blank
#: (:data:`rfbench.names.INVISIBLE`: the Hangul fillers, the braille blank, variation selectors).
#: report.md writes each as its escape (``\u202e``) in free text and code spans alike,
#: and so every control character but the tab (C0, DEL, C1: a terminal showing the file with ``cat`` would run an
#: escape sequence — move the cursor, rewrite a line, make a link); the terminal's set
#: (:func:`rfbench.commands._common.clean_text`) is the same.
INVISIBLE_CHARS = ("\u061c\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u034f\u115f\u1160\u17b4\u17b5"
                   "\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef")
_INVISIBLE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{INVISIBLE_CHARS}]")


def _visible(text: str) -> str:
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _INVISIBLE.search(text) else text


def _md_plain(line: str) -> str:
    line = _visible(line)
    out = []
    for ch in line:
        if ch in _MD_HTML:
            out.append(_MD_HTML[ch])
        elif ch in _MD_PUNCT:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _code(text: Any) -> str:
    """Text as an inline code span that no content can close (a fence longer than any backtick run inside);
    on one line, with table pipes escaped."""
    s = _visible(" ".join(str(text).splitlines())).replace("|", "\\|")
    run = longest = 0
    for ch in s:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    return f"{fence} {s} {fence}" if longest else f"`{s}`"


def _shell_word(word: str) -> str:
    """One argument as the shell reads it: ``shlex.quote``, or ``$'...'`` quoting when it holds control
    characters (a line break stays on the command's line)."""
    if not any(ord(c) < 32 or ord(c) == 127 for c in word):
        return shlex.quote(word)
    out = []
    for c in word:
        if c in "\\'":
            out.append("\\" + c)
        elif ord(c) < 32 or ord(c) == 127:
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(c, f"\\x{ord(c):02x}"))
        else:
            out.append(c)
    return "$'" + "".join(out) + "'"


def _fenced(text: str) -> list[str]:
    """A fenced code block no content can close."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return [fence, text, fence]


def _baseline_entry(r: Mapping, kind: str) -> Mapping:
    for e in r.get("baselines") or []:
        if e.get("kind") == kind:
            return e
    return {}


def _gesture_markdown(report: Mapping[str, Any], lvl: str) -> list[str]:
    """Results beside both baselines, per-class numbers, the confusion matrix and the per-domain breakdown."""
    out = [f"| metric | model | {lvl} | majority class | Δ | Δ {lvl} | class prior | Δ | Δ {lvl} | classes averaged |",
           "|---|---:|---|---:|---:|---|---:|---:|---|---:|"]
    for r in report.get("results", []):
        m = r.get("model") or {}
        maj, pri = _baseline_entry(r, "majority-class"), _baseline_entry(r, "class-prior")
        averaged = m.get("classes_averaged")
        out.append(
            f"| {_md(r['label'])} | {fmt_value(m.get('value'), 'undefined')} | {_interval(r.get('ci'), 'model')} | "
            f"{fmt_value(maj.get('value'))} | {fmt_value(maj.get('delta'))} | {_interval(maj.get('ci'), 'delta')} | "
            f"{fmt_value(pri.get('value'))} | {fmt_value(pri.get('delta'))} | {_interval(pri.get('ci'), 'delta')} | "
            f"{'—' if averaged is None else averaged} |")
    domains = report.get("domains") or {}
    out += ["", "## Per domain (accuracy / macro-F1)", ""]
    if domains.get("keys"):
        out.append("| key | value | held out | rows | recordings | model accuracy | model macro-F1 | majority accuracy "
                   "| majority macro-F1 | prior accuracy | prior macro-F1 |")
        out.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for block in domains["keys"]:
            for v in block["values"]:
                cells = []
                for side in ("model", "majority-class", "class-prior"):
                    d = v.get(side) or {}
                    cells += [fmt_value(d.get("accuracy")), fmt_value(d.get("macro_f1"), "undefined" if d else "—")]
                held = "yes" if v.get("held_out") else ""
                out.append(f"| {_md(block['key'])} | {_md(v['value'])} | {held} | {v['rows']} | "
                           f"{v['recordings']} | " + " | ".join(cells) + " |")
    else:
        out.append(f"None — {domains.get('reason')}")
    classes = report.get("classes") or []
    if classes:
        out += ["", "## Per class (model)", "",
                "| class | train | test support | predicted | precision | recall | F1 |",
                "|---|---:|---:|---:|---:|---:|---:|"]
        for c in classes:
            out.append(f"| {_md(c['class'])} | {fmt_value(c.get('train'))} | {c['support']} | {c['predicted']} | "
                       f"{fmt_value(c['precision'], 'undefined')} | {fmt_value(c['recall'], 'undefined')} | "
                       f"{fmt_value(c['f1'], 'undefined')} |")
    conf = report.get("confusion") or {}
    if conf.get("matrix") is not None:
        names = conf.get("classes") or []
        out += ["", "## Confusion matrix (rows: true class, columns: predicted class)", "",
                "| true \\ predicted | " + " | ".join(_md(n) for n in names) + " |",
                "|---|" + "---:|" * len(names)]
        for n, row in zip(names, conf["matrix"]):
            out.append(f"| {_md(n)} | " + " | ".join(str(x) for x in row) + " |")
    return out


def _gesture_tables(report: Mapping[str, Any], lvl: str) -> list:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="rfbench score — gesture", title_justify="left")
    for name, just in (("metric", "left"), ("model", "right"), (lvl, "left"), ("majority", "right"), ("Δ", "right"),
                       (f"Δ {lvl}", "left"), ("prior", "right"), ("Δ prior", "right")):
        table.add_column(name, justify=just, no_wrap=name == "metric")
    for r in report.get("results", []):
        m = r.get("model") or {}
        maj, pri = _baseline_entry(r, "majority-class"), _baseline_entry(r, "class-prior")
        table.add_row(escape(r["label"]), fmt_value(m.get("value"), "undefined"), _interval(r.get("ci"), "model"),
                      fmt_value(maj.get("value")), fmt_value(maj.get("delta")), _interval(maj.get("ci"), "delta"),
                      fmt_value(pri.get("value")), fmt_value(pri.get("delta")))
    parts = [table]
    domains = report.get("domains") or {}
    if domains.get("keys"):
        dt = Table(title="per domain: accuracy / macro-F1", title_justify="left")
        for name in ("key", "value", "rows", "recordings", "model", "majority", "prior"):
            dt.add_column(name, justify="left" if name in ("key", "value") else "right")
        for block in domains["keys"]:
            for v in block["values"]:
                cells = []
                for side in ("model", "majority-class", "class-prior"):
                    d = v.get(side)
                    cells.append("—" if not d else f"{fmt_value(d.get('accuracy'))} / "
                                                   f"{fmt_value(d.get('macro_f1'), 'undefined')}")
                held = " (held out)" if v.get("held_out") else ""
                dt.add_row(block["key"], escape(f"{v['value']}{held}"), str(v["rows"]), str(v["recordings"]), *cells)
        parts.append(dt)
    return parts


def render_terminal(report: Mapping[str, Any]):
    """A Rich renderable (print it with a Console): header, results table, notes."""
    from rich.console import Group
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    colour = {"MEASURED": "green", "SYNTHETIC": "yellow", "CLAIMED": "red"}.get(report.get("evidence"), "white")
    parts = [Text.from_markup(f"[bold {colour}]Evidence: {report.get('evidence')}[/] — "
                              f"{escape(str(report.get('evidence_rule', '')))}")]
    for note in report.get("notes") or []:
        if note.startswith(_WARN_PREFIXES):
            parts.append(Text.from_markup(f"[bold red]WARNING:[/] {escape(note)}"))
    for k, v in headline(report):
        parts.append(Text.from_markup(f"[bold]{k}:[/] {escape(v)}"))
    lvl = _level(report)
    if report.get("task") == "gesture":
        parts += _gesture_tables(report, lvl)
        for n in [n for n in report.get("notes") or [] if not n.startswith(_WARN_PREFIXES)]:
            parts.append(Text.from_markup(f"[dim]note:[/] {escape(n)}"))
        return Group(*parts)
    table = Table(title=f"rfbench score — {report.get('task')}", title_justify="left")
    table.add_column("metric", no_wrap=True)
    table.add_column("model", justify="right")
    table.add_column(lvl)
    table.add_column("baseline", justify="right")
    table.add_column("Δ", justify="right")
    table.add_column(f"Δ {lvl}")
    table.add_column("scoreable", justify="right")
    table.add_column("unscoreable", justify="right")
    for label, cells in _pose_rows(report.get("results", [])):  # the Markdown's cells but the baseline's interval
        table.add_row(escape(label), *(cells[i] for i in (0, 1, 2, 4, 5, 7, 8)))
    parts.append(table)
    others = [n for n in report.get("notes") or [] if not n.startswith(_WARN_PREFIXES)]
    for n in others:
        parts.append(Text.from_markup(f"[dim]note:[/] {escape(n)}"))
    return Group(*parts)
