"""Classification metrics (rfbench.metrics.classify): kernels against naive twins, every metric against
scikit-learn's documented definitions (tests/naive.py) on random and adversarial label sets, hand cases, the
label set, and the conventions for undefined precision, recall and F1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import naive
from rfbench.errors import FormatError, ValidationError
from rfbench.metrics import classify as cl
from rfbench.metrics import kernels as K
from rfbench.metrics.stats import make_segments

ROOT = Path(__file__).resolve().parents[1]


# -- kernels against their twins ---------------------------------------------------------------------------


@pytest.mark.parametrize("n,c,seed", [(1, 1, 0), (1, 4, 1), (40, 5, 2), (200, 9, 3)])
def test_argmax_rank_matches_naive(n, c, seed):
    rng = np.random.default_rng(seed)
    scores = np.round(rng.normal(size=(n, c)), 1)  # rounding plants ties
    if n > 3 and c > 2:
        scores[0] = 0.5  # a row of equal scores
        scores[1, :2] = np.inf  # +inf ties
        scores[2, -1] = -np.inf
    true = rng.integers(0, c, n)
    pred = np.empty(n, np.int64)
    rank = np.empty(n, np.int64)
    K._argmax_rank(scores, true, pred, rank)
    want_pred, want_rank = naive.naive_argmax_rank(scores, true)
    np.testing.assert_array_equal(pred, want_pred)
    np.testing.assert_array_equal(rank, want_rank)
    np.testing.assert_array_equal(pred, np.argmax(scores, axis=1))  # NumPy's first maximum
    assert ((rank == 0) == (pred == true)).all()  # top-1 is exactly argmax accuracy


def test_argmax_rank_ties_by_hand():
    # Row [1, 1, 0] with true class 1: one column ties it and comes first (index 0) -> rank 1: a top-1 miss
    # and a top-2 hit; argmax is 0. Row [0, 2, 2] with true class 2: column 1 ties it first -> rank 1.
    scores = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 2.0], [-np.inf, -np.inf, -np.inf]])
    true = np.array([1, 2, 0])
    pred, rank = np.empty(3, np.int64), np.empty(3, np.int64)
    K._argmax_rank(scores, true, pred, rank)
    assert pred.tolist() == [0, 1, 0] and rank.tolist() == [1, 1, 0]


def _segments(rng, n, n_seg):
    ids = rng.integers(0, n_seg, n)
    seg = make_segments(n, np.array([f"s{i:02d}" for i in ids]))
    rows = [seg.order[seg.start[s]:seg.start[s + 1]].tolist() for s in range(seg.count)]
    return seg, rows


@pytest.mark.parametrize("n,c,n_seg,seed", [(1, 1, 1, 0), (7, 3, 4, 1), (300, 6, 11, 2)])
def test_class_sums_match_naive(n, c, n_seg, seed):
    rng = np.random.default_rng(seed)
    true = rng.integers(0, c, n)
    pred = rng.integers(0, c, n)
    rank = rng.integers(0, c, n)
    ks = np.array([1, 2, 3], dtype=np.int64)
    seg, rows = _segments(rng, n, n_seg)
    s = seg.count
    out = [np.zeros(s, np.int64), np.zeros((s, c), np.int64), np.zeros((s, c), np.int64), np.zeros((s, c), np.int64),
           np.zeros((s, 3), np.int64)]
    K._class_sums(true, pred, rank, ks, seg.order, seg.start, *out)
    got = np.hstack([out[0][:, None]] + out[1:])
    np.testing.assert_array_equal(got, np.array(naive.naive_class_sums(true, pred, rank, ks, rows, c)))
    # Unclustered rows (empty order): consecutive blocks, one of them empty.
    start = np.array([0, n // 2, n // 2, n], dtype=np.int64)
    out = [np.zeros(3, np.int64), np.zeros((3, c), np.int64), np.zeros((3, c), np.int64), np.zeros((3, c), np.int64),
           np.zeros((3, 0), np.int64)]
    K._class_sums(true, pred, np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64), start, *out)
    blocks = [list(range(0, n // 2)), [], list(range(n // 2, n))]
    want = np.array(naive.naive_class_sums(true, pred, [], [], blocks, c))
    np.testing.assert_array_equal(np.hstack([out[0][:, None]] + out[1:]), want)


def test_confusion_blocks_match_naive_and_count_bad_labels():
    rng = np.random.default_rng(5)
    n, c = 500, 7
    true = rng.integers(0, c, n)
    pred = rng.integers(0, c, n)
    rank = rng.integers(0, c, n)
    pred[[3, 9]] = [c, -1]  # out of range: counted as bad, nowhere else
    start = np.array([0, 100, 100, 500], dtype=np.int64)
    conf = np.zeros((3, c, c), np.int64)
    hist = np.zeros((3, c), np.int64)
    bad = np.zeros(3, np.int64)
    K._confusion_blocks(true, pred, rank, c, start, conf, hist, bad)
    keep = np.ones(n, bool)
    keep[[3, 9]] = False
    assert bad.tolist() == [2, 0, 0]
    np.testing.assert_array_equal(conf.sum(0), naive.naive_confusion(true[keep], pred[keep], c))
    np.testing.assert_array_equal(hist.sum(0), np.bincount(rank[keep], minlength=c))
    # No rows at all.
    conf = np.zeros((0, c, c), np.int64)
    K._confusion_blocks(true[:0], pred[:0], rank[:0], c, np.array([0], np.int64), conf, np.zeros((0, c), np.int64),
                        np.zeros(0, np.int64))


def test_kernels_run_without_jit():
    """The same small case under NUMBA_DISABLE_JIT=1 (plain Python kernels) gives the same numbers."""
    code = (
        "import json, numpy as np\n"
        "from rfbench.metrics.classify import evaluate_classification\n"
        "rng = np.random.default_rng(0)\n"
        "gt = rng.integers(0, 4, 30); sc = rng.normal(size=(30, 4)); sc[:3] = 0.0\n"
        "ev = evaluate_classification(sc, gt, list('abcd'), top_k=[2], clusters=np.arange(30) % 4)\n"
        "print(json.dumps([[s.value for s in ev.scores], ev.confusion.tolist(), ev.table.tolist()]))\n"
    )
    outs = []
    for flag in ("0", "1"):
        env = {**os.environ, "NUMBA_DISABLE_JIT": flag, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        outs.append(json.loads(proc.stdout))
    assert outs[0] == outs[1]


# -- every metric against scikit-learn's definitions -------------------------------------------------------


def _check_against_sklearn_definitions(y_true, y_pred, names):
    """All four label metrics and per-class numbers against tests/naive.py's scikit-learn twins."""
    ev = cl.evaluate_classification(np.array(y_pred), np.array(y_true), names)
    got = {s.spec.metric: s.value for s in ev.scores}
    assert got["accuracy"] == pytest.approx(naive.sk_accuracy(y_true, y_pred), abs=1e-15)
    assert got["balanced-accuracy"] == pytest.approx(naive.sk_balanced_accuracy(y_true, y_pred), abs=1e-14)
    assert got["macro-f1"] == pytest.approx(naive.sk_f1(y_true, y_pred, "macro"), abs=1e-14)
    assert got["weighted-f1"] == pytest.approx(naive.sk_f1(y_true, y_pred, "weighted"), abs=1e-14)
    # Per class over the declared labels: where scikit-learn divides by zero (zero_division) rfbench says None.
    nan = float("nan")
    _, prec, rec, f1, sup = naive.sk_precision_recall_f1(y_true, y_pred, labels=list(names), zero_division=nan)
    for entry, p, r, f, s in zip(ev.classes, prec, rec, f1, sup):
        for key, want in (("precision", p), ("recall", r), ("f1", f)):
            if np.isnan(want):
                assert entry[key] is None, (entry, key)
            else:
                assert entry[key] == pytest.approx(want, abs=1e-15)
        assert entry["support"] == s
    idx = {n: i for i, n in enumerate(names)}
    np.testing.assert_array_equal(ev.confusion, naive.naive_confusion([idx[t] for t in y_true],
                                                                      [idx[p] for p in y_pred], len(names)))
    return ev


@pytest.mark.parametrize("seed", range(6))
def test_random_label_sets_match_sklearn_definitions(seed):
    rng = np.random.default_rng(seed)
    c = int(rng.integers(2, 9))
    names = [f"g{i}" for i in range(c)] + ["never-seen"]
    n = int(rng.integers(1, 80))
    # Skewed class frequencies, so some classes are missing from truth or predictions.
    p = rng.dirichlet(np.full(c, 0.5))
    y_true = [names[i] for i in rng.choice(c, n, p=p)]
    y_pred = [t if rng.random() < 0.5 else names[int(rng.integers(0, c))] for t in y_true]
    _check_against_sklearn_definitions(y_true, y_pred, names)


@pytest.mark.parametrize("case", ["single-class-right", "single-class-wrong", "all-wrong", "one-row",
                                  "never-predicted", "only-predicted", "disjoint"])
def test_adversarial_label_sets(case):
    names = ["a", "b", "c", "d"]
    y_true, y_pred = {
        "single-class-right": (["b"] * 5, ["b"] * 5),
        "single-class-wrong": (["b"] * 5, ["c"] * 5),
        "all-wrong": (["a", "b", "c", "a"], ["b", "c", "a", "c"]),
        "one-row": (["d"], ["a"]),
        "never-predicted": (["a", "b", "b"], ["a", "a", "a"]),
        "only-predicted": (["a", "a"], ["a", "c"]),
        "disjoint": (["a", "a", "b"], ["c", "d", "d"]),
    }[case]
    ev = _check_against_sklearn_definitions(y_true, y_pred, names)
    got = {s.spec.metric: s.value for s in ev.scores}
    if case == "single-class-right":
        assert got == {"accuracy": 1.0, "balanced-accuracy": 1.0, "macro-f1": 1.0, "weighted-f1": 1.0}
        assert [e["f1"] for e in ev.classes] == [None, 1.0, None, None]
    if case in ("single-class-wrong", "all-wrong", "disjoint", "one-row"):
        assert got == {"accuracy": 0.0, "balanced-accuracy": 0.0, "macro-f1": 0.0, "weighted-f1": 0.0}


def test_hand_computed_case_and_undefined_conventions():
    # Label set a b c d; truth  a b b c c c; predictions a a b c c b.
    # Confusion (rows true): a:[1,0,0,0] b:[1,1,0,0] c:[0,1,2,0] d:[0,0,0,0].
    # tp = (1,1,2,0), support = (1,2,3,0), predicted = (2,2,2,0).
    # precision a 1/2, b 1/2, c 2/2; recall a 1, b 1/2, c 2/3; F1 = 2tp/(support+predicted): a 2/3, b 2/4, c 4/5.
    # accuracy 4/6; balanced (1 + 1/2 + 2/3)/3 = 13/18; macro-F1 (2/3 + 1/2 + 4/5)/3 = 59/90;
    # weighted (1*2/3 + 2*1/2 + 3*4/5)/6 = 61/90. Class d: support 0 and never predicted: no precision,
    # recall or F1, and not in any average (3 classes averaged).
    names = ["a", "b", "c", "d"]
    ev = cl.evaluate_classification(np.array(list("aabccb")), np.array(list("abbccc")), names)
    got = {s.spec.metric: s for s in ev.scores}
    assert got["accuracy"].value == pytest.approx(4 / 6, abs=1e-15)
    assert got["balanced-accuracy"].value == pytest.approx(13 / 18, abs=1e-15)
    assert got["macro-f1"].value == pytest.approx(59 / 90, abs=1e-15)
    assert got["weighted-f1"].value == pytest.approx(61 / 90, abs=1e-15)
    assert got["macro-f1"].classes_averaged == 3 and got["balanced-accuracy"].classes_averaged == 3
    assert ev.confusion.tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 2, 0], [0, 0, 0, 0]]
    d = ev.classes[3]
    assert (d["support"], d["predicted"], d["precision"], d["recall"], d["f1"]) == (0, 0, None, None, None)
    assert ev.classes[0]["precision"] == 0.5 and ev.classes[2]["recall"] == pytest.approx(2 / 3)
    # The label renders the convention; the spec holds it all.
    assert got["macro-f1"].label == "macro-F1 over classes in test truth or predictions (4 classes, declared)"
    spec = got["macro-f1"].spec.to_dict()
    assert spec["n_classes"] == 4 and spec["label_set_sha256"] == cl.LabelSet(tuple(names)).sha256
    assert "left out" in spec["undefined"]


def test_class_with_support_but_no_prediction_has_f1_zero_and_enters_the_average():
    # Truth a a b, predictions a a a: b has recall 0, precision undefined (never predicted), F1 2*0/(1+0) = 0.
    # a: tp 2, support 2, predicted 3: F1 4/5. Macro-F1 = (4/5 + 0)/2 = 0.4 (scikit-learn: the same).
    ev = cl.evaluate_classification(np.array(list("aaa")), np.array(list("aab")), ["a", "b"])
    assert ev.find("macro-f1").value == pytest.approx(0.4)
    b = ev.classes[1]
    assert (b["precision"], b["recall"], b["f1"]) == (None, 0.0, 0.0)


def test_top_k_against_both_tie_conventions():
    rng = np.random.default_rng(3)
    names = list("abcdef")
    y = rng.integers(0, 6, 120)
    scores = rng.normal(size=(120, 6))
    ev = cl.evaluate_classification(scores, y, names, top_k=[1, 2, 3, 6])
    for k in (1, 2, 3, 6):
        want = naive.sk_top_k_accuracy(y.tolist(), scores, k)
        assert ev.find("top-k", k=k).value == pytest.approx(want, abs=1e-15)
        # Without ties, scikit-learn's convention gives the same.
        assert want == naive.sk_top_k_accuracy(y.tolist(), scores, k, tie="higher-index")
    assert ev.find("top-k", k=1).value == ev.find("accuracy").value
    assert ev.find("top-k", k=6).value == 1.0
    # With ties the conventions differ, and rfbench follows its documented one.
    tied = np.zeros((4, 3))
    y = np.array([0, 1, 2, 2])
    assert cl.top_k_accuracy(tied, y, 1, list("abc")).value == 0.25  # only class 0 ranks first
    assert naive.sk_top_k_accuracy(y.tolist(), tied, 1, tie="higher-index") == 0.5
    assert cl.top_k_accuracy(tied, y, 2, list("abc")).value == naive.sk_top_k_accuracy(y.tolist(), tied, 2)


def test_public_single_metric_functions():
    y, p = np.array(list("abca")), np.array(list("abcc"))
    assert cl.accuracy(p, y).value == 0.75
    assert cl.balanced_accuracy(p, y).value == pytest.approx((0.5 + 1 + 1) / 3)
    assert cl.macro_f1(p, y).value == pytest.approx(naive.sk_f1(list(y), list(p), "macro"))
    assert cl.weighted_f1(p, y).value == pytest.approx(naive.sk_f1(list(y), list(p), "weighted"))
    assert cl.confusion_matrix(p, y).tolist() == [[1, 0, 1], [0, 1, 0], [0, 0, 1]]
    assert str(cl.accuracy(p, y)) == "accuracy (3 classes, inferred): 0.75"
    with pytest.raises(ValidationError, match="needs scores"):
        cl.top_k_accuracy(p, y, 1, list("abc"))


# -- the label set -----------------------------------------------------------------------------------------


def test_label_set_fixes_order_and_maps_integers(tmp_path):
    f = tmp_path / "names.txt"
    f.write_text("Sweep\n\n  Push&Pull  \nClap\n", encoding="utf-8")
    ls = cl.LabelSet.from_file(f)
    assert ls.names == ("Sweep", "Push&Pull", "Clap") and ls.source == "declared"
    assert ls.encode(np.array(["Clap", "Sweep"])).tolist() == [2, 0]
    assert ls.encode(np.array([2, 0], dtype=np.uint8)).tolist() == [2, 0]
    # Integer labels and names give the same numbers.
    a = cl.evaluate_classification(np.array([0, 2, 2, 1]), np.array([0, 1, 2, 2]), f)
    b = cl.evaluate_classification(np.array(["Sweep", "Clap", "Clap", "Push&Pull"]),
                                   np.array(["Sweep", "Push&Pull", "Clap", "Clap"]), f)
    assert [s.value for s in a.scores] == [s.value for s in b.scores]
    assert a.confusion.tolist() == b.confusion.tolist()


@pytest.mark.parametrize("labels,message", [
    (np.array(["Clap", "Slide"]), "1 label(s) not in the label set (e.g. 'Slide')"),
    (np.array([0, 3]), "label index 3 is outside the label set's 0..2"),
    (np.array([-1, 0]), "label index -1 is outside"),
    (np.array([0.0, 1.0]), "found floats"),
    (np.array([True, False]), "boolean labels"),
    (np.array([["Clap"]]), "1-D"),
])
def test_labels_outside_the_set_are_errors(labels, message):
    ls = cl.LabelSet(("Sweep", "Push&Pull", "Clap"))
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace(".", r"\.")):
        ls.encode(labels)
    # Through the metric as predictions too (integer labels are range-checked in the counting pass).
    if labels.ndim == 1:
        with pytest.raises(ValidationError):
            cl.evaluate_classification(labels, np.array([0, 1]), ls)


@pytest.mark.parametrize("text,message", [("", "empty"), ("a\nb\na\n", "'a' appears twice")])
def test_bad_label_set_files(tmp_path, text, message):
    f = tmp_path / "names.txt"
    f.write_text(text)
    with pytest.raises(ValidationError, match=message):
        cl.LabelSet.from_file(f)
    with pytest.raises(FormatError, match="no such file"):
        cl.LabelSet.from_file(tmp_path / "none.txt")


def test_inferred_label_sets_and_their_limits():
    ev = cl.evaluate_classification(np.array(["c", "a"]), np.array(["b", "a"]))
    assert ev.plan.label_set.names == ("a", "b", "c") and ev.plan.label_set.source == "inferred"
    with pytest.raises(ValidationError, match="integer labels need a declared label set.*Widar3.0 gesture number"):
        cl.evaluate_classification(np.array([1, 1]), np.array([1, 2]))
    with pytest.raises(ValidationError, match="class names \\(strings\\) or integer indices, found dtype float64"):
        cl.evaluate_classification(np.array([0.5, 1.5]), np.array([0.5, 1.5]))
    with pytest.raises(ValidationError, match="scores need a declared label set"):
        cl.evaluate_classification(np.zeros((2, 2)), np.array(["a", "b"]))


@pytest.mark.parametrize("pred,message", [
    (np.array(["a"]), "predictions have 1 rows but the ground truth has 2"),
    (np.zeros((2, 3)), r"scores have shape \(2, 3\) but .* 2 classes"),
    (np.array([[0.1, np.nan], [0.2, 0.3]]), "scores hold NaN at 1 place.*row 0 class 1"),
    (np.zeros((2, 2, 1)), "labels \\(N,\\) or scores \\(N, C\\)"),
])
def test_bad_predictions(pred, message):
    with pytest.raises(ValidationError, match=message):
        cl.evaluate_classification(pred, np.array(["a", "b"]), ["a", "b"])


def test_no_rows_and_bad_top_k():
    with pytest.raises(ValidationError, match="no rows"):
        cl.evaluate_classification(np.array([], dtype=str), np.array([], dtype=str), ["a"])
    y, s = np.array([0, 1]), np.zeros((2, 3))
    with pytest.raises(ValidationError, match="k = 4 is outside 1..3"):
        cl.evaluate_classification(s, y, list("abc"), top_k=[4])
    with pytest.raises(ValidationError, match="must be integers"):
        cl.evaluate_classification(s, y, list("abc"), top_k=[1.5])
    with pytest.raises(ValidationError, match="top-k accuracy needs scores"):
        cl.evaluate_classification(y, y, list("abc"), top_k=[1])
    with pytest.raises(ValidationError, match="unknown metric 'f1'"):
        cl.evaluate_classification(y, y, list("abc"), metrics=["f1"])
    # Default top-k: 3 and 5 only where below the number of classes.
    assert [s.spec.k for s in cl.evaluate_classification(np.zeros((2, 4)), y, list("abcd")).scores
            if s.spec.metric == "top-k"] == [3]
    ev = cl.evaluate_classification(s, y, list("abc"))
    assert "top-k not computed" in ev.plan.notes[0]


# -- tables, baselines and the bootstrap's view of them ----------------------------------------------------


def test_cluster_table_totals_equal_the_one_pass_counts():
    rng = np.random.default_rng(9)
    names = [f"g{i}" for i in range(5)]
    y = rng.integers(0, 5, 400)
    scores = rng.normal(size=(400, 5))
    clusters = np.array([f"rec{i}" for i in rng.integers(0, 17, 400)])
    a = cl.evaluate_classification(scores, y, names, top_k=[1, 2], clusters=clusters)
    b = cl.evaluate_classification(scores, y, names, top_k=[1, 2])
    assert a.table.shape == (17, 1 + 15 + 2) and b.table.shape == (1, 18)
    np.testing.assert_array_equal(a.table.sum(axis=0), b.table[0])
    assert [s.value for s in a.scores] == [s.value for s in b.scores]


def test_majority_and_prior_tables_against_naive():
    rng = np.random.default_rng(4)
    c = 5
    plan = cl.ClassPlan.create(cl.LabelSet(tuple("abcde")), has_scores=True, top_k=[1, 2])
    y = rng.integers(0, 4, 60)  # class e never in the test truth
    lab = cl.prepare_labels(rng.normal(size=(60, c)), y, plan.label_set)
    table = plan.table(lab, make_segments(60, np.arange(60) % 7))
    counts = np.array([5, 9, 9, 0, 2])  # training counts: b and c tie for the majority -> b (lower index)
    prior = counts / counts.sum()
    class_rank = np.array([2, 0, 1, 4, 3])  # b, c, a, e, d
    maj = plan.scores(cl.majority_table(table, plan, 1, class_rank))
    got = {(s.spec.metric, s.spec.k): s.value for s in maj}
    y_l, maj_l = y.tolist(), [1] * 60
    assert got[("accuracy", None)] == pytest.approx(naive.sk_accuracy(y_l, maj_l))
    assert got[("macro-f1", None)] == pytest.approx(naive.sk_f1(y_l, maj_l, "macro"))
    assert got[("weighted-f1", None)] == pytest.approx(naive.sk_f1(y_l, maj_l, "weighted"))
    assert got[("balanced-accuracy", None)] == pytest.approx(naive.sk_balanced_accuracy(y_l, maj_l))
    assert got[("top-k", 2)] == pytest.approx(np.isin(y, [1, 2]).mean())
    pri = {(s.spec.metric, s.spec.k): s.value for s in plan.scores(cl.prior_table(table, plan, prior))}
    acc, bal, macro, weighted = naive.naive_expected_prior_metrics(y_l, prior.tolist(), c)
    assert pri[("accuracy", None)] == pytest.approx(acc, abs=1e-14)
    assert pri[("balanced-accuracy", None)] == pytest.approx(bal, abs=1e-14)
    assert pri[("macro-f1", None)] == pytest.approx(macro, abs=1e-14)
    assert pri[("weighted-f1", None)] == pytest.approx(weighted, abs=1e-14)
    assert pri[("top-k", 1)] is None
    # The expected accuracy is the mean over random draws (checked by simulation, loosely).
    sim = np.mean([(rng.choice(c, 60, p=prior) == y).mean() for _ in range(4000)])
    assert sim == pytest.approx(acc, abs=0.01)
