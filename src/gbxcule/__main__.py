"""``python -m gbxcule``: the command line (see gbxcule.cli)."""

from gbxcule.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
