"""Padding amplification in the ESP32, PicoScenes and Atheros readers, and a MemoryError in one input of a parse
job: the attacks an adversarial tester found, rebuilt small.

Each reader pads its records to the file's widest one. A few wide records among many narrow ones made that one
array gigabytes from a file of a megabyte (ESP32: one 200,000-value list among 2,000 ``[1 2]`` lines asked for
3.3 GB, a 10.6 MB file for 74.5 GiB; PicoScenes: one 4096 x 8 x 8 SDR frame among 1,900 1 x 1 ones, 3.71 GiB
under the 4 GiB limit). :func:`rfbench.io.hwlog.check_padding` now refuses, before allocating, an array over
the per-array limit, or over :data:`~rfbench.io.hwlog.PAD_RATIO` times its values and 1/64 of that limit. The
tests lower ``RFBENCH_MAX_ARRAY_BYTES`` (to 64 MiB: 1 MiB for mostly-padding arrays) so that the attack stays
small and the old readers, which allocated it, fail them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rfbench
from rfbench.cli import app
from rfbench.errors import FormatError
from rfbench.io import atheros, esp32, hwlog, parse_files
from rfbench.io import picoscenes as ps
from rfbench.io.writer import synthetic_log
from tests.conftest import conformance_path

LIMIT = 64 << 20  # RFBENCH_MAX_ARRAY_BYTES in these tests: mostly-padding arrays refused above 1 MiB
HEAD = "CSI_DATA,{role},3C:71:BF:6D:2A:78,-73,11,1,0,1,1,1,0,0,0,0,-93,0,1,1,80272146,0,101,0,0,80.363225,{n},[{v}]"


def _line(values, role="AP") -> str:
    return HEAD.format(role=role, n=len(values), v=" ".join(str(v) for v in values) + " ")


@pytest.fixture
def limit(monkeypatch):
    monkeypatch.setenv("RFBENCH_MAX_ARRAY_BYTES", str(LIMIT))
    return LIMIT


def _esp32_attack(wide_values: int = 40_000, narrow_lines: int = 200) -> bytes:
    """One line of ``wide_values`` values, then ``narrow_lines`` of two: padded, 201 x 20,000 tones x 8 bytes =
    32 MB (under the 64 MiB limit) from an 80 KB file, 200 times what the values need."""
    lines = [_line([1] * wide_values)] + [_line([1, 2])] * narrow_lines
    return ("\n".join(lines) + "\n").encode()


def test_esp32_one_wide_list_among_narrow_ones_is_refused_before_allocating(limit):
    data = _esp32_attack()
    with pytest.raises(FormatError) as err:
        esp32.read(data)
    message = str(err.value)
    assert "\n" not in message and message.startswith("input: the records' widths vary so much")
    assert f"would take {201 * 20_000 * 8} bytes" in message
    assert f"{201 * 20_000 * 8 // len(data)} times the file's size" in message
    assert f"set it to {201 * 20_000 * 8 * hwlog.PAD_FREE_SHARE} or more" in message


def test_esp32_past_the_array_limit_is_refused_too(monkeypatch):
    # the ESP32 reader checked no per-array limit at all (the 10.6 MB file asked for 74.5 GiB); one width here
    monkeypatch.setenv("RFBENCH_MAX_ARRAY_BYTES", "1000000")
    with pytest.raises(FormatError, match="RFBENCH_MAX_ARRAY_BYTES"):
        esp32.read(("\n".join([_line([1] * 10_000)] * 50) + "\n").encode())


def test_esp32_the_way_around_reads_it(monkeypatch):
    data = _esp32_attack(wide_values=4_000, narrow_lines=2_000)  # 2,001 x 2,000 tones x 8 = 32 MB padded
    monkeypatch.setenv("RFBENCH_MAX_ARRAY_BYTES", str(LIMIT))
    with pytest.raises(FormatError, match="vary so much"):
        esp32.read(data)
    monkeypatch.setenv("RFBENCH_MAX_ARRAY_BYTES", str(2_001 * 2_000 * 8 * hwlog.PAD_FREE_SHARE))
    log = esp32.read(data)
    assert log.csi.shape == (2_001, 2_000, 1, 1) and log.num_tones.tolist() == [2_000] + [1] * 2_000


def test_esp32_real_mixes_of_list_lengths_still_read(limit):
    # ESP32-CSI-Tool prints 128 values (LLTF only), 256 or 384 (with HT-LTF, STBC-HT-LTF): 3x at most, far under
    # PAD_RATIO, on an array (3,000 x 192 x 8 = 4.6 MB) well over the 1 MiB free share
    lines = [_line([1] * 384)] + [_line([2] * 128)] * 2_999
    log = esp32.read(("\n".join(lines) + "\n").encode())
    assert log.csi.shape == (3_000, 192, 1, 1) and log.problems == {"short_list": 2_999}


def test_esp32_subcarrier_rows_of_mixed_lists():
    lines = [_line([1] * 128), _line([2] * 126), _line([3] * 4)]
    log = esp32.read(("\n".join(lines) + "\n").encode())
    block = np.r_[np.arange(32), np.arange(-32, 0)]
    expected = np.array([np.where(np.arange(64) < t, block, 0) for t in (64, 63, 2)], dtype=np.int32)
    assert log.subcarriers.dtype == np.int32
    np.testing.assert_array_equal(log.subcarriers, expected)


def test_esp32_one_huge_role_field_is_refused(limit):
    # the role column is a str array as wide as its longest role on every line: 1,001 x 5,000 x 4 bytes = 20 MB
    # (and the gather's int64 indices twice that) from a 100 KB file; a 300,000-character role among 3,000 lines
    # asked for 6.7 GiB
    lines = [_line([1, 2], role="A" * 5_000)] + [_line([1, 2])] * 1_000
    with pytest.raises(FormatError, match="the role fields' lengths vary so much"):
        esp32.read(("\n".join(lines) + "\n").encode())


def test_esp32_long_roles_of_different_lengths_read_one_by_one():
    roles = ["STATION-A", "LONGER-ROLE-NAME", "AP", "STATION-A", "LONGER-ROLE-NAME", "X" * 40]
    log = esp32.read(("\n".join(_line([1, 2], role=r) for r in roles) + "\n").encode())
    assert log.meta["role"].tolist() == roles


def _sdr_frame(shape, i) -> bytes:
    device = 0x1234  # USRP: the signal matrix gives each frame's tones x rx x tx
    return ps.encode_frame([ps.basic_segment(device, timestamp=i, num_rx=shape[1]),
                            ps.csi_segment(device, np.ones(shape, dtype=complex), version=2)], sequence=i)


def test_picoscenes_one_wide_frame_among_narrow_ones_is_refused_before_allocating(limit):
    # 301 x 1,024 x 4 x 4 x 8 = 39 MB padded, under the 64 MiB limit the old reader checked, from a 300 KB file
    data = _sdr_frame((1024, 4, 4), 0) + b"".join(_sdr_frame((1, 1, 1), i) for i in range(1, 301))
    with pytest.raises(FormatError) as err:
        ps.read(data)
    message = str(err.value)
    assert "\n" not in message and message.startswith("input: the records' widths vary so much")
    assert f"would take {301 * 1024 * 16 * 8} bytes" in message


@pytest.mark.long
def test_picoscenes_shared_captures_read_under_a_tight_limit(monkeypatch):
    # rx_by_iwl5300.csi pads 1-3 rx x 1-2 tx to 3 x 2 (2.95 times its values): read even where every array
    # over 32 KiB must be under PAD_RATIO times its values
    monkeypatch.setenv("RFBENCH_MAX_ARRAY_BYTES", str(2 << 20))
    log = ps.read(conformance_path("hardware", "rx_by_iwl5300.csi"))
    assert log.csi.shape == (383, 30, 3, 2)
    log = ps.read(conformance_path("hardware", "rx_by_qca9300.csi"))
    assert log.csi.shape == (1000, 56, 3, 1)


def _atheros(rng, n, tones, nr, nc) -> bytes:
    return atheros.synthesize(rng, n, tones=tones, nr=nr, nc=nc)


def test_atheros_one_wide_record_among_narrow_ones_is_refused_before_allocating(limit):
    # one 114-tone 3 x 3 record, then 400 of 56 tones 1 x 1: 401 x 8,208 = 3.3 MB padded from 68 KB, 48 times
    rng = np.random.default_rng(5)
    data = _atheros(rng, 1, 114, 3, 3) + _atheros(rng, 400, 56, 1, 1)
    with pytest.raises(FormatError) as err:
        atheros.read(data)
    message = str(err.value)
    assert "\n" not in message and message.startswith("input: the records' widths vary so much")
    assert f"would take {401 * 114 * 9 * 8} bytes, {401 * 114 * 9 * 8 // len(data)} times" in message


def test_atheros_real_mixes_still_read(limit):
    # a receiver's 3 chains with 1 or 3 streams, at 20 or 40 MHz: 6.1 times the values at most
    rng = np.random.default_rng(6)
    data = _atheros(rng, 1, 114, 3, 3) + _atheros(rng, 400, 56, 3, 1)
    log = atheros.read(data)
    assert log.csi.shape == (401, 114, 3, 3) and log.n_tx.tolist() == [3] + [1] * 400


@pytest.mark.long
def test_shared_atheros_and_esp32_captures_read_under_a_tight_limit(monkeypatch):
    monkeypatch.setenv("RFBENCH_MAX_ARRAY_BYTES", str(2 << 20))  # (1 MB and 7 KB arrays, one width each)
    assert atheros.read(conformance_path("hardware", "ath_csi_1.dat")).csi.shape == (401, 56, 3, 2)
    assert esp32.read(conformance_path("hardware", "example_csi.csv")).csi.shape == (13, 64, 1, 1)


def test_parse_cli_refuses_the_attack_in_one_line_and_parses_the_rest(tmp_path):
    (tmp_path / "a.dat").write_bytes(synthetic_log(5, seed=1))
    (tmp_path / "b.csv").write_bytes(_esp32_attack())
    env = dict(os.environ, RFBENCH_MAX_ARRAY_BYTES=str(LIMIT),  # (the rfbench under test, not the installed one)
               PYTHONPATH=os.pathsep.join([str(Path(rfbench.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-m", "rfbench", "parse", "a.dat", "b.csv", "-o", "out"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: b.csv: the records' widths vary so much"), run.stderr
    assert (tmp_path / "out" / "a.npz").exists() and not (tmp_path / "out" / "b.csv.npz").exists()


def _out_of_memory(*args, **kwargs):
    raise MemoryError("Unable to allocate 3.32 GiB for an array with shape (2001, 200000, 1, 1)")


def test_memory_error_in_one_input_fails_that_input_only(tmp_path, monkeypatch):
    # as numpy's _ArrayMemoryError from the ESP32 reader stopped a whole job with a traceback
    monkeypatch.setattr(esp32, "read", _out_of_memory)
    (tmp_path / "a.dat").write_bytes(synthetic_log(5, seed=1))
    (tmp_path / "c.csv").write_bytes(esp32.synthesize(np.random.default_rng(1), 5))
    (tmp_path / "d.dat").write_bytes(synthetic_log(6, seed=2))
    files = [(tmp_path / n, None) for n in ("a.dat", "c.csv", "d.dat")]
    job = parse_files.parse_many(files, parse_files.ParseOptions(out_dir=tmp_path / "out", workers=1))
    assert [f["status"] for f in job.files] == ["written", "failed", "written"]
    assert job.files[1]["error"].startswith("not enough memory to read it")
    assert (tmp_path / "out" / "d.npz").exists() and not job.cancelled


def test_memory_error_in_one_input_exits_2_with_one_line(tmp_path, monkeypatch, runner):
    monkeypatch.setattr(esp32, "read", _out_of_memory)
    (tmp_path / "a.dat").write_bytes(synthetic_log(5, seed=1))
    (tmp_path / "c.csv").write_bytes(esp32.synthesize(np.random.default_rng(1), 5))
    result = runner.invoke(app, ["parse", str(tmp_path / "a.dat"), str(tmp_path / "c.csv"), "-o",
                                 str(tmp_path / "out"), "--workers", "1"])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"error: {tmp_path / 'c.csv'}: not enough memory to read it" in result.output
    assert (tmp_path / "out" / "a.npz").exists()
