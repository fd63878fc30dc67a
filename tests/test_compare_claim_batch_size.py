"""``rfbench compare``: a claim's ``spec.batch_size`` is held to ``rfbench score --batch-size``'s bound (declared
once, in :class:`rfbench.report.settings.PoseSettings`)."""

from __future__ import annotations

import pytest

from rfbench.cli import app
from rfbench.errors import FormatError
from rfbench.report.claims import parse_claims

BATCH_MEAN_CLAIM = """
[[claim]]
id = "bm"
metric = "pck"
value = 50
spec = {{ k = 0.2, normalization = "hip-width", averaging = "batch-mean", batch_size = {b} }}
source = {{ citation = "x" }}
"""


def _one_error_line(result) -> str:
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    return lines[0]


@pytest.mark.parametrize("b", ["10000001", "9223372036854775807", "99999999999999999999"])
def test_a_claims_batch_size_past_scores_bound_is_refused_naming_the_file_and_claim(b):
    """spec.batch_size = 99999999999999999999 was taken, and re-scoring it was an OverflowError traceback
    (metrics/stats.make_segments); 9223372036854775807 was taken and re-scored. --batch-size on the command
    line is at most 10,000,000 (rfbench score's bound): a claim's is held to the same."""
    with pytest.raises(FormatError, match=r"^bm\.toml: claim 1 \(bm\): spec\.batch_size .*at most 10000000"):
        parse_claims(BATCH_MEAN_CLAIM.format(b=b), "bm.toml")
    edge = parse_claims(BATCH_MEAN_CLAIM.format(b=10_000_000), "bm.toml")
    assert edge.claims[0].spec["batch_size"] == 10_000_000


def test_the_claims_cap_is_the_one_compare_and_score_declare():
    from rfbench.report import claims, compare
    from rfbench.report.settings import PoseSettings
    from rfbench.settings import options_of

    (option,) = [o for f, o in options_of(PoseSettings) if f.name == "batch_size"]
    assert claims.MAX_BATCH_SIZE == compare.MAX_BATCH_SIZE == option.max == 10_000_000


def test_compare_with_a_huge_claim_batch_size_is_one_error_line_exit_2(runner, tiny_demo, tmp_path):
    claims = tmp_path / "bm.toml"
    claims.write_text(BATCH_MEAN_CLAIM.format(b="99999999999999999999"))
    result = runner.invoke(app, ["compare", str(tiny_demo / "pose" / "report.json"), str(claims),
                                 "--root", str(tiny_demo)])
    assert result.exit_code == 2, result.output
    line = _one_error_line(result)
    assert "bm.toml: claim 1 (bm): spec.batch_size" in line and "10000000" in line, line
