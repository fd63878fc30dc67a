"""``rfbench proof``: the deterministic training proof (PASS exit 0, FAIL exit 1, SKIP exit 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from rfbench.commands._common import emit_json, finite_float, guard, stdout_console
from rfbench.commands._progress import progress


def proof(
    hash_file: Annotated[
        Optional[Path],
        typer.Option("--hash-file", help="Baseline to compare with (default: fixtures/expected_proof.sha256 "
                                         "of the source tree).", show_default=False),
    ] = None,
    generate_hash: Annotated[
        bool, typer.Option("--generate-hash", help="Write the baseline from this run instead of checking it "
                                                    "(refused when the loss does not fall enough).")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="With --generate-hash: replace an existing baseline.")] = False,
    steps: Annotated[int, typer.Option("--steps", min=0, max=10000, help="Gradient steps.")] = 40,
    lr: Annotated[float, typer.Option("--lr", "--learning-rate", parser=finite_float(0.0, 10.0),
                                      help="Learning rate (0 to 10).")] = 0.1,
    seed: Annotated[int, typer.Option("--seed", min=0, max=2**32 - 1, help="Seed of data and weights.")] = 0,
    samples: Annotated[int, typer.Option("--samples", min=1, max=4096, help="Synthetic training samples.")] = 64,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
) -> None:
    """Train a small conv + attention pose regressor on seeded synthetic data and check the weights' sha256.

    PASS (exit 0): the training loss fell by at least MIN_LOSS_DECREASE = 1e-4 and the sha256 of the trained
    weights (and of the synthetic data) equals the committed baseline. FAIL (exit 1): a smaller decrease (even
    with no baseline), a different hash, or an unreadable baseline. SKIP (exit 3): no baseline to compare
    with; never a pass.

    It proves that training is bit-for-bit deterministic and that the optimiser moves the loss. It does NOT
    prove accuracy: the data are synthetic and the model tiny.

    Determinism depends on: numpy, numba and llvmlite at the versions in constraints.txt; IEEE-754 double
    arithmetic on x86-64 (default rounding, no flush-to-zero); Numba code without fastmath (no reassociation,
    no fused multiply-add); serial kernels with a fixed summation order (no threads); no BLAS and no libm
    exp (rfbench computes exp from + - * / itself). The defaults are the settings the baseline was made
    with; changing --steps, --lr, --seed or --samples changes the hash.
    """
    with guard():
        from rfbench.train import proof as P

        with progress(steps, "training", enabled=not json_out) as advance:
            result = P.prove(hash_file, generate=generate_hash, force=force, seed=seed, steps=steps, lr=lr,
                             samples=samples, advance=advance)
    if json_out:
        emit_json(result.to_dict())
    else:
        _render(result)
    raise typer.Exit(result.exit_code)


def _render(result) -> None:
    from rich.markup import escape

    from rfbench.nn.model import param_count
    from rfbench.train import proof as P

    run, name, path = result.run, result.verdict, result.hash_file
    margin = f"{P.MIN_LOSS_DECREASE:.0e}".replace("e-0", "e-")
    console = stdout_console()
    style = {"PASS": "bold green", "FAIL": "bold red", "SKIP": "bold yellow", "GENERATED": "bold cyan"}[name]
    label = {"SKIP": "SKIP (not a pass: nothing was compared)", "GENERATED": "baseline generated"}.get(name, name)
    console.print(f"rfbench proof: [{style}]{label}[/]")
    s = run.settings
    console.print(f"  loss            {run.loss_initial:.6f} -> {run.loss_final:.6f} "
                  f"(decrease {run.loss_decrease:.6g}, margin {margin})")
    by_name = {c["name"]: c for c in result.checks}

    def mark(check_name):
        c = by_name.get(check_name)
        if c is None or c["passed"] is None:
            return "not compared"
        return "matches the baseline" if c["passed"] else "[red]differs from the baseline[/]"

    console.print(f"  weights sha256  {mark('weights_hash')}\n    {run.weights_sha256}")
    console.print(f"  data sha256     {mark('data_hash')}\n    {run.data_sha256}")
    console.print(f"  baseline        {escape(str(path))}")
    console.print(f"  run             seed {s['seed']}, {s['steps']} steps, lr {s['lr']:g}, {s['samples']} samples, "
                  f"{param_count(P.PROOF_SPEC)} parameters, {run.wall_time_s:.2f} s")
    for r in result.reasons:
        console.print(f"  - {escape(r)}")
    console.print(f"Proves: {P.PROVES}.")
    console.print(f"Does not prove: {P.DOES_NOT_PROVE}.")
    console.print("Determinism depends on: " + "; ".join(P.DETERMINISM_DEPENDS_ON) + ".")
