"""``rfbench config show`` / ``rfbench config check``: the effective configuration and its bounds."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from rfbench.commands._common import emit_json, fail, guard, stdout_console

COMMAND_NAME = "config"

config = typer.Typer(
    help="Show or check rfbench's configuration: rfbench.toml, or the tool.rfbench table of pyproject.toml.",
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
    add_completion=False,
)

_PATH_HELP = ("Config file (default: rfbench.toml, else pyproject.toml with a tool.rfbench table, in the current "
              "folder or the nearest parent that has one).")


def _rows(cfg) -> list[dict]:
    from rfbench.config import FIELDS

    return [{"key": f.key, "value": str(cfg[f.key]) if isinstance(cfg[f.key], Path) else cfg[f.key],
             "default": f.default, "allowed": f.allowed(), "minimum": f.minimum, "maximum": f.maximum,
             "from_file": f.key in cfg.from_file, "help": f.help} for f in FIELDS]


@config.command("show")
def show(
    path: Annotated[Optional[Path], typer.Option("--config", help=_PATH_HELP, show_default=False)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
) -> None:
    """Print every setting: its value, where it came from, and its allowed range."""
    with guard():
        from rfbench.config import load_config

        cfg = load_config(path)
    rows = _rows(cfg)
    if json_out:
        emit_json({"source": str(cfg.source) if cfg.source else None, "settings": rows})
        return
    from rich.table import Table

    table = Table(title=f"rfbench config ({cfg.source or 'no file: defaults'})", title_justify="left")
    for col in ("key", "value", "source", "allowed", "meaning"):
        table.add_column(col, no_wrap=col in ("key", "source"))
    for r in rows:
        table.add_row(r["key"], "-" if r["value"] is None else str(r["value"]),
                      "file" if r["from_file"] else "default", r["allowed"], r["help"])
    stdout_console().print(table)


@config.command("check")
def check(
    path: Annotated[Optional[Path], typer.Argument(help=_PATH_HELP, show_default=False)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
) -> None:
    """Validate the config: known keys, types, every number within its bounds, dataset roots that exist.

    Exit 0 when valid, 2 with one line naming the key, its value and the allowed range otherwise.
    """
    with guard():
        from rfbench.config import check_paths, load_config

        cfg = load_config(path)
        problems = check_paths(cfg)
        if problems:
            where = f"{cfg.source}: " if cfg.source else ""
            raise fail(where + "; ".join(problems))
    n_set = len(cfg.from_file)
    message = (f"{cfg.source}: valid ({n_set} key(s) set, all within bounds)" if cfg.source
               else "no config file found: the defaults apply, and they are valid")
    if json_out:
        emit_json({"valid": True, "source": str(cfg.source) if cfg.source else None, "keys_set": sorted(cfg.from_file),
                   "message": message})
    else:
        stdout_console().print(message, markup=False)
