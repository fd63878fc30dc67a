"""``python -m rfbench`` runs the command-line interface (under verify's limits when it is a re-run)."""

from rfbench._rerun import apply_rerun_limits

if __name__ == "__main__":  # pragma: no cover - exercised by a subprocess test
    apply_rerun_limits()
    from rfbench._entry import main

    main()
