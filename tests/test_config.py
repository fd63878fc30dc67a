"""rfbench.config and ``rfbench config show|check``: discovery, bounds on every number, clear errors."""

from __future__ import annotations

import json
import sys
import types

import pytest

from rfbench import config as C
from rfbench.cli import app
from rfbench.errors import ConfigError

NUMERIC = [f for f in C.FIELDS if f.kind != "path"]


def test_every_numeric_field_has_both_bounds_and_a_valid_default():
    assert len(NUMERIC) >= 12
    for f in NUMERIC:
        assert f.minimum is not None and f.maximum is not None and f.minimum <= f.default <= f.maximum, f.key
    assert C.validate({}).values == {f.key: f.default for f in C.FIELDS}


def _past(f, side):
    step = 1 if f.kind == "int" else max(abs(f.maximum if side == "above" else f.minimum) * 0.5, 1e-12)
    return (f.maximum + step) if side == "above" else (f.minimum - step)


@pytest.mark.parametrize("side", ["below", "above"])
@pytest.mark.parametrize("field", NUMERIC, ids=[f.key for f in NUMERIC])
def test_every_bound_is_enforced_and_the_error_names_key_value_and_range(field, side):
    section, name = field.key.split(".")
    value = _past(field, side)
    with pytest.raises(ConfigError) as err:
        C.validate({section: {name: value}}, where="rfbench.toml: ")
    message = str(err.value)
    assert message.startswith(f"rfbench.toml: {field.key} = {value!r} is outside the allowed range ")
    assert field.allowed() in message


def test_values_at_the_bounds_are_accepted():
    for f in NUMERIC:
        section, name = f.key.split(".")
        for value in (f.minimum, f.maximum):
            assert C.validate({section: {name: value}})[f.key] == value


@pytest.mark.parametrize(
    "table, message",
    [
        ({"adapt": {"rank": 2.5}}, "adapt.rank = 2.5: expected an integer in 1..64"),
        ({"adapt": {"rank": True}}, "adapt.rank = True: expected an integer"),
        ({"adapt": {"rank": "64"}}, "adapt.rank = '64': expected an integer"),
        ({"adapt": {"learning_rate": float("inf")}}, "adapt.learning_rate = inf: expected a finite number"),
        ({"adapt": {"rnk": 8}}, "unknown key adapt.rnk; keys of [adapt]: rank, steps"),
        ({"adpat": {}}, "unknown section [adpat]"),
        # sections that configured nothing are gone, and an old file naming them is told so
        ({"train": {"batch_size": 8}}, "unknown section [train]; known sections: adapt, datasets, window"),
        ({"window": 3}, "window must be a table"),
        ({"datasets": {"widar_root": 3}}, "datasets.widar_root = 3: expected a non-empty path string"),
    ],
)
def test_wrong_types_and_unknown_keys_are_refused(table, message):
    with pytest.raises(ConfigError) as err:
        C.validate(table)
    assert message in str(err.value)


def test_rfbench_toml_is_found_from_a_subfolder_and_relative_roots_resolve(tmp_path, monkeypatch):
    (tmp_path / "data" / "widar").mkdir(parents=True)
    (tmp_path / "rfbench.toml").write_text('[window]\nlength = 128\n[datasets]\nwidar_root = "data/widar"\n')
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    cfg = C.load_config()
    assert cfg.source == (tmp_path / "rfbench.toml").resolve()
    assert cfg["window.length"] == 128 and cfg["window.stride"] == 32
    assert cfg["datasets.widar_root"] == (tmp_path / "data" / "widar").resolve()
    assert cfg.from_file == {"window.length", "datasets.widar_root"}
    assert C.check_paths(cfg) == []


def test_pyproject_tool_table_and_precedence(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.rfbench.adapt]\nrank = 8\n')
    cfg = C.load_config(start=tmp_path)
    assert cfg.source.name == "pyproject.toml" and cfg["adapt.rank"] == 8
    (tmp_path / "rfbench.toml").write_text("[adapt]\nrank = 16\n")
    assert C.load_config(start=tmp_path)["adapt.rank"] == 16  # rfbench.toml wins in the same folder


def test_pyproject_without_tool_table_is_skipped_in_search_but_refused_when_named(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert C.find_config(tmp_path) is None or C.find_config(tmp_path).parent != tmp_path
    with pytest.raises(ConfigError, match="no \\[tool.rfbench\\] table"):
        C.load_config(tmp_path / "pyproject.toml")


def test_malformed_toml_names_the_file(tmp_path):
    path = tmp_path / "rfbench.toml"
    path.write_text("[adapt\nrank = 3\n")
    with pytest.raises(ConfigError, match="rfbench.toml: not valid TOML"):
        C.load_config(path)
    with pytest.raises(ConfigError, match="config file .*: no such file"):
        C.load_config(tmp_path / "missing.toml")


def test_tomli_is_used_when_tomllib_is_missing(monkeypatch, tmp_path):
    import tomllib

    calls = []
    fake = types.ModuleType("tomli")
    fake.TOMLDecodeError = tomllib.TOMLDecodeError

    def loads(text):
        calls.append(text)
        return tomllib.loads(text)

    fake.loads = loads
    monkeypatch.setitem(sys.modules, "tomllib", None)  # "import tomllib" now raises ImportError
    monkeypatch.setitem(sys.modules, "tomli", fake)
    path = tmp_path / "rfbench.toml"
    path.write_text("[adapt]\nrank = 4\n")
    assert C.load_config(path)["adapt.rank"] == 4
    assert calls == ["[adapt]\nrank = 4\n"]


def test_override_obeys_the_same_bounds():
    cfg = C.validate({"adapt": {"rank": 4}})
    assert C.override(cfg, {"adapt.steps": 7, "adapt.rank": None}).section("adapt")["steps"] == 7
    assert C.override(cfg, {"adapt.steps": 7})["adapt.rank"] == 4
    with pytest.raises(ConfigError, match="command line: adapt.rank = 65 is outside the allowed range 1..64"):
        C.override(cfg, {"adapt.rank": 65})


# --------------------------------------------------------------------------------------------------- CLI


def test_cli_check_valid_invalid_and_missing_root(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["config", "check"])
    assert result.exit_code == 0 and "defaults apply" in result.output
    good = tmp_path / "rfbench.toml"
    good.write_text("[adapt]\nrank = 32\n")
    result = runner.invoke(app, ["config", "check", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"valid": True, "source": str(good.resolve()), "keys_set": ["adapt.rank"],
                                         "message": f"{good.resolve()}: valid (1 key(s) set, all within bounds)"}
    bad = tmp_path / "bad.toml"
    bad.write_text("[window]\nlength = 100000\n")
    result = runner.invoke(app, ["config", "check", str(bad)])
    assert result.exit_code == 2
    assert "window.length = 100000 is outside the allowed range 1..8192" in result.output
    assert len(result.output.strip().splitlines()) == 1
    roots = tmp_path / "roots.toml"
    roots.write_text('[datasets]\nmmfi_root = "nowhere"\n')
    result = runner.invoke(app, ["config", "check", str(roots)])
    assert result.exit_code == 2 and "datasets.mmfi_root" in result.output and "not an existing folder" in result.output


def test_cli_show(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rfbench.toml").write_text("[adapt]\nrank = 5\n")
    result = runner.invoke(app, ["config", "show", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rows = {r["key"]: r for r in report["settings"]}
    assert rows["adapt.rank"]["value"] == 5 and rows["adapt.rank"]["from_file"] is True
    assert rows["adapt.steps"]["from_file"] is False and rows["adapt.rank"]["allowed"] == "1..64"
    assert set(rows) == {f.key for f in C.FIELDS}
    text = runner.invoke(app, ["config", "show"])
    assert text.exit_code == 0 and "adapt.rank" in text.output and "file" in text.output
    assert runner.invoke(app, ["config", "show", "--config", str(tmp_path / "nope.toml")]).exit_code == 2
    assert runner.invoke(app, ["config", "-h"]).exit_code == 0
