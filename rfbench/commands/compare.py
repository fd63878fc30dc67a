"""``rfbench compare``: can a report's number be lined up with published ones?"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from rfbench.commands._common import emit_json, guard, stdout_console
from rfbench.commands._progress import progress
from rfbench.commands.ingest import DropDuplicates, Label, Location, Orientation, RecordingBy, Room, Subject, fields_of

COMMAND_NAME = "compare"


def compare(
    report: Annotated[Path, typer.Argument(help="A report.json written by rfbench score.", show_default=False)],
    claims: Annotated[Optional[List[str]], typer.Argument(help="Claims files (TOML), or claims:NAME for a set "
                                                          "shipped with rfbench.", show_default=False)] = None,
    builtin: Annotated[bool, typer.Option("--builtin", help="Compare with every claims set shipped with rfbench "
                                          "too.")] = False,
    batch_size: Annotated[Optional[int], typer.Option("--batch-size", help="Batch size for re-scoring a "
                                                      "batch-mean claim that does not give one (shown as an "
                                                      "assumption); at most rfbench score's bound on its "
                                                      "--batch-size.")] = None,
    root: Annotated[Optional[Path], typer.Option("--root", help="Read the report's inputs from under this folder "
                                                 "(default: the report's folder), as rfbench verify --root does.",
                                                 show_default=False)] = None,
    verify: Annotated[bool, typer.Option("--verify", help="Verify REPORT first, as rfbench verify does (same "
                                         "--root): its evidence tag and the fields compared are then re-made from "
                                         "its chain, not taken on its word; a MISMATCH exits 1.")] = False,
    dataset: Annotated[Optional[List[Path]], typer.Option("--dataset", help="With --verify, as rfbench verify "
                                                          "--dataset: your own copy of the dataset tree (a folder "
                                                          "under --root; repeat for more); every manifest of the "
                                                          "chain must name it, else MISMATCH.",
                                                          show_default=False)] = None,
    template: Annotated[Optional[str], typer.Option(
        "--template", show_default=False,
        help="With --verify, as rfbench verify --template: the file-name convention you hold a template corpus to "
             "(with --recording-by, the roles and --drop-duplicates); every manifest of the chain must record "
             "exactly it, else MISMATCH.")] = None,
    recording_by: RecordingBy = None,
    label: Label = None,
    subject: Subject = None,
    location: Location = None,
    room: Room = None,
    orientation: Orientation = None,
    drop_duplicates: DropDuplicates = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
) -> None:
    """Compare REPORT with published numbers: per claim, comparable or not, point by point.

    Every part that decides it is listed: metric, normalization and its joints, k, PCK-AUC's k_max and threshold
    count, OKS's area and sigmas, comparison, averaging, normalizer floor, visibility, per-axis normalisation,
    precision, Procrustes fit, skeleton, dimensions, units, dataset, protocol, setting, leakage status,
    selection. A part one side does not state is 'unknown', never guessed. A report whose layout is not verified
    (LAYOUT NOT VERIFIED) never has a claim's skeleton, and compare repeats its warning.
    Where the report's inputs are beside it (same files, same sha256), its predictions are re-scored under the
    claim's convention or spec: your number in the claim's terms (MEASURED, or SYNTHETIC for generated data)
    beside the claim (CLAIMED). Without --verify the evidence tag and the fields compared are the report's own
    word, shown as unverified. With --verify the report is read once and verify re-runs those very bytes (a
    report changed in between is a MISMATCH); the dataset trees the chain was ingested again from are named,
    with verify's notes, and --dataset and --template hold the chain to your copy of the data as rfbench verify
    does. Inputs are read inside the report's folder, or --root. Exit 0 whatever the verdict (nothing comparable
    is an answer); 1 when --verify finds a MISMATCH; 2 for an unreadable report, a bad claims file, or
    verify's options without --verify.
    """
    with guard():
        from rfbench.report import verify as V

        if verify:  # the process verify's re-runs start from, prepared as rfbench verify prepares its own
            V.prepare_process(report, root)
        from rfbench.errors import ValidationError
        from rfbench.report.claims import load_claims
        from rfbench.report.compare import compare_report
        from rfbench.report.verify import Convention

        roles = {"label": label, "subject": subject, "location": location, "room": room, "orientation": orientation}
        given = (["--dataset"] * bool(dataset) + ["--template"] * (template is not None)
                 + [f"--{k}" for k, v in roles.items() if v] + ["--recording-by"] * bool(recording_by)
                 + ["--drop-duplicates"] * drop_duplicates)
        if given and not verify:
            raise ValidationError(f"{given[0]} holds the re-run of --verify to your copy of the data; without "
                                  "--verify nothing is re-run: give it with --verify")
        convention = Convention.from_options(template, fields_of(recording_by), roles, drop_duplicates)
        if not claims and not builtin:
            raise ValidationError("give one or more claims files (or claims:NAME), or --builtin for the sets "
                                  "shipped with rfbench")
        files = load_claims(claims or [], builtin=builtin)
        total = sum(len(cf.claims) for cf in files)
        with progress(total, "comparing", enabled=not json_out) as advance, \
                (V.rerun_guard() if verify else contextlib.nullcontext()):  # re-runs killed if compare is stopped
            result = compare_report(report, files, batch_size=batch_size, root=root, on_claim=advance,
                                    verify=verify, datasets=tuple(dataset or ()), convention=convention)
    if json_out:
        emit_json(result.to_dict())
        return
    from rfbench.commands.verify import _print_trees

    console = stdout_console()
    if not console.is_terminal:
        console.width = 200
    doc = result.to_dict()
    for line in render_head(doc):
        console.print(line, markup=False, highlight=False)
    if doc["verification"] is not None:  # what the MATCH rests on, in rfbench verify's words
        _print_trees(console, doc["verification"]["datasets"])
        for line in render_verification(doc["verification"]):
            console.print(line, markup=False, highlight=False)
    for line in render_claims(doc):
        console.print(line, markup=False, highlight=False)


def _value(v, scale) -> str:
    if v is None:
        return "unscoreable"
    return f"{v:.4g}%" if scale == "percent" else f"{v:.4g}"


def render_head(doc: dict) -> list[str]:
    """The first lines of a comparison (from its ``to_dict()``): the report, its tag, the verdict's count."""
    tag = doc["evidence"] if doc.get("verified") else f"{doc['evidence']}, unverified"
    out = [f"rfbench compare {doc['report']} ({tag}): {doc['claims']} claim(s), {doc['comparable']} comparable"]
    if doc.get("layout_warning"):
        out.append(f"  {doc['layout_warning']}")
    if not doc.get("verified"):
        out.append("  unverified: the report's evidence tag and the fields compared are its own word; --verify "
                   "re-runs it first (rfbench verify)")
    return out


def render_verification(verification: dict) -> list[str]:
    """Verify's notes and what it did not compare (but the fixed environment fields), as rfbench verify shows
    them under its MATCH; the dataset trees are shown by rfbench verify's own lines."""
    from rfbench.report.verify import ENVIRONMENT

    out = [f"note: {note}" for note in verification.get("notes") or []]
    out += [f"not compared: {item['field']}: {item['why']}" for item in verification.get("uncompared") or []
            if item["field"] not in ENVIRONMENT]
    return out


def render_claims(doc: dict) -> list[str]:
    """The lines of each claim beside the report (from the comparison's ``to_dict()``)."""
    tag = doc["evidence"] if doc.get("verified") else f"{doc['evidence']}, unverified"
    out: list[str] = []
    for c in doc["comparisons"]:
        claim = c["claim"]
        src = claim["source"]
        out.append("")
        out.append(f"claim {claim['id']}: {claim['title']} (CLAIMED)")
        out.append(f"  source: {src.get('citation')}" + (f"; {src['table']}" if src.get("table") else ""))
        res = c["result"]
        verdict = "COMPARABLE" if c["comparable"] else "NOT COMPARABLE"
        if res is not None:
            value = res["value"]
            shown = "unscoreable" if value is None else f"{value:.4g}"
            out.append(f"  {verdict} with {res['label']} = {shown} ({tag})")
        else:
            out.append(f"  {verdict}: the report has no result to line it up with")
        width = max((len(p["part"]) for p in c["parts"]), default=0)
        for p in c["parts"]:
            if p["status"] == "same":
                continue
            out.append(f"    {p['part']:<{width}}  {p['status']:<12}  report: {p['report']}  |  claim: {p['claim']}")
        same = [p["part"] for p in c["parts"] if p["status"] == "same"]
        if same:
            out.append(f"    same: {', '.join(same)}")
        r = c["rescore"]
        if r["status"] == "done":
            ev = r["evidence"] if doc.get("verified") else f"{r['evidence']}, unverified"
            line = (f"  re-scored: {_value(r['value_in_claim_scale'], r['claim_scale'])} ({ev}) beside "
                    f"{c['claim_value']} (CLAIMED) — {r['label']}")
            out.append(line)
            if r.get("assumed"):
                out.append(f"    assumed: {'; '.join(r['assumed'])}")
            if r.get("still_differs"):
                out.append(f"    still differs or unknown: {', '.join(r['still_differs'])}")
            if r.get("layout_warning"):
                out.append(f"    {r['layout_warning']}")
        else:
            out.append(f"  not re-scored: {r['reason']}")
    return out
