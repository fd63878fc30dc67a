"""Leave-one-domain-out over a key that is not a domain of a cross-domain claim (repetition, date, capture,
release, a template field without a role) keeps every person, room, place and orientation on both sides: the
in-domain leak. It needs --allow-leaky and is tagged leakage_prone, as `in-domain` is; `compare` compares the
held-out key, not only the protocol's name. Also: audit refuses window bounds past int64 in one line (exit 2),
and split's title names a held-out capture the test side holds."""

from __future__ import annotations

import json

import pytest

from rfbench.cli import app
from rfbench.datasets.manifest import Manifest
from rfbench.errors import ValidationError
from rfbench.protocols.split import make_splits
from rfbench.protocols.splitfile import check_split_file
from rfbench.report.claims import Claim
from rfbench.report.compare import _data_parts


def _recordings():
    """2 subjects × 2 rooms × 2 gestures × 3 repetitions, each its own date; one capture per recording."""
    recs = []
    for s in ("u1", "u2"):
        for room in (1, 2):
            for g in ("Push", "Clap"):
                for rep in (1, 2, 3):
                    rid = f"{s}-{room}-{g}-{rep}"
                    recs.append({"id": rid, "files": [], "frames": 10, "subject": s, "room": room, "gesture": g,
                                 "label": g, "repetition": rep, "date": f"2018110{rep}", "session": f"x{rep}",
                                 "person": s.upper()})
    return recs


def _manifest(roles=None, capture=False):
    recs = _recordings()
    if capture:
        for r in recs:
            r["capture"] = f"c-{r['id']}"
    doc = Manifest("toy", "data", recs).to_dict()  # (its tree beside it: nothing is written into a corpus)
    doc["template"] = {"text": "{person}_{session}.dat", "fields": [{"name": "person"}, {"name": "session"}]}
    if roles:
        doc["roles"] = roles
    else:  # no role: 'person' is a field of its own (the subject key is written by hand above)
        for r in doc["recordings"]:
            r["person"] = r["person"] + "-" + str(r["room"])
    return doc


@pytest.mark.parametrize("key", ["repetition", "date", "session"])
def test_lodo_over_a_key_that_is_no_domain_needs_allow_leaky(key):
    with pytest.raises(ValidationError, match="--allow-leaky|allow_leaky") as info:
        make_splits(_manifest(), "leave-one-domain-out", domain=key)
    assert key in str(info.value) and "\n" not in str(info.value)
    outcomes = make_splits(_manifest(), "leave-one-domain-out", domain=key, allow_leaky=True)
    assert outcomes and all(o.document["leakage_prone"] is True for o in outcomes)
    assert all(o.assignment.leakage_prone is True for o in outcomes)


@pytest.mark.parametrize("key", ["subject", "room"])
def test_lodo_over_a_domain_is_not_leakage_prone(key):
    outcomes = make_splits(_manifest(), "leave-one-domain-out", domain=key)
    assert len(outcomes) == 2 and all(o.document["leakage_prone"] is False for o in outcomes)


def test_lodo_over_a_template_field_with_a_domain_role_is_that_domain():
    doc = _manifest(roles={"subject": "person"})  # 'person' copied as 'subject': the same grouping
    outcomes = make_splits(doc, "leave-one-domain-out", domain="person")
    assert [o.document["held_out"] for o in outcomes] == [["U1"], ["U2"]]
    assert all(o.document["leakage_prone"] is False for o in outcomes)


def test_cli_lodo_over_repetition_is_refused_then_tagged(tmp_path, runner):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(_manifest()))
    out = tmp_path / "lodo"
    r = runner.invoke(app, ["split", str(path), "-p", "leave-one-domain-out", "--domain", "repetition", "--test",
                            "1", "-o", str(out)])
    assert r.exit_code == 2, r.output
    assert "--allow-leaky" in r.stderr and "Traceback" not in r.output and not out.exists()
    r = runner.invoke(app, ["split", str(path), "-p", "leave-one-domain-out", "--domain", "repetition", "--test",
                            "1", "--allow-leaky", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "LEAKAGE-PRONE" in r.output
    doc = json.loads((out / "split-repetition-1.json").read_text())
    assert doc["leakage_prone"] is True


def test_a_split_file_claiming_no_leak_is_rederived_leakage_prone(tmp_path):
    """A file of leave-one-domain-out over repetition edited to leakage_prone false: re-derived, it is tagged."""
    path = tmp_path / "m.json"
    path.write_text(json.dumps(_manifest()))
    from rfbench.protocols.split import write_splits

    ((target, _),) = write_splits(path, "leave-one-domain-out", tmp_path / "lodo", domain="repetition",
                                  test=["1"], allow_leaky=True)
    doc = json.loads(target.read_text())
    doc["leakage_prone"] = False
    target.write_text(json.dumps(doc))
    assert check_split_file(target).info(target).leakage_prone is True


def _claim(protocol):
    return Claim(id="c", value=80.0, source={"citation": "x"}, where="c.toml", task="gesture",
                 metric="accuracy", protocol=protocol, leakage_prone=False)


def _report(domain, leakage_prone=False):
    return {"task": "gesture", "split": {"protocol": "leave-one-domain-out", "params": {"domain": domain},
                                         "leakage_prone": leakage_prone, "audit": {"passed": True}}}


def _protocol_part(report, claim):
    (part,) = [p for p in _data_parts(report, claim) if p.name == "protocol"]
    return part


def test_compare_protocol_part_holds_the_held_out_key():
    part = _protocol_part(_report("repetition"), _claim("leave-one-domain-out"))
    assert part.status == "differs" and "repetition" in part.report
    part = _protocol_part(_report("subject"), _claim("leave-one-domain-out"))
    assert part.status == "same" and "subject" in part.report
    part = _protocol_part(_report("room"), _claim("leave-one-domain-out --domain room"))
    assert part.status == "same"
    part = _protocol_part(_report("room"), _claim("leave-one-domain-out --domain subject"))
    assert part.status == "differs"


def test_audit_of_windows_past_int64_is_one_line_exit_2(tmp_path, runner):
    mpath = tmp_path / "m.json"
    mpath.write_text(json.dumps(_manifest()))
    ids = [r["id"] for r in _recordings()]
    split = {"train": [ids[0], {"id": ids[2], "start": 0, "stop": 2**70}],
             "test": [ids[1], {"id": ids[2], "start": 2**64, "stop": 2**70}]}
    spath = tmp_path / "big.json"
    spath.write_text(json.dumps(split))
    r = runner.invoke(app, ["audit", str(spath), "--manifest", str(mpath)])
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert "Traceback" not in r.output and len(r.stderr.strip().splitlines()) == 1
    assert "2**63" in r.stderr


def test_split_title_names_a_held_out_capture_the_test_side_holds(tmp_path, runner):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(_manifest(capture=True)))
    r = runner.invoke(app, ["split", str(path), "-p", "leave-one-domain-out", "--domain", "capture", "--test",
                            "c-u1-1-Push-1", "--allow-leaky", "-o", str(tmp_path / "lodo")])
    assert r.exit_code == 0, r.output
    title = r.stdout.splitlines()[0]
    assert "(test: c-u1-1-Push-1)" in title and "not in this corpus" not in title, title
