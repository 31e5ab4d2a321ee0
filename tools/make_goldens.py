"""Write tests/goldens/goldens.json: PyBoy 2.8.1's state digests of every golden case.

Runs each case of ``bench.goldens.golden_cases()`` (every suite ROM with its own
inputs, and the demo game under seeded random actions) on the PyBoy oracle, one env,
and records its config, ROM hash, rolling digest and per-step digests. A golden
changes only with a commit that says why (CONSTITUTION.md section 5).

Usage: python tools/make_goldens.py [--out PATH] [--only NAME ...] [--backend NAME]
``--only`` replaces just those cases in an existing file. ``--backend`` exists to
inspect another backend's digests (``--out`` elsewhere); the committed file is PyBoy's.
"""

from __future__ import annotations

import argparse
import sys
import time
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.goldens import (  # noqa: E402
    GOLDENS_PATH,
    case_record,
    golden_cases,
    load_goldens,
    run_rollout,
    write_goldens,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=GOLDENS_PATH)
    ap.add_argument("--only", nargs="*", help="case names to (re)generate")
    ap.add_argument("--backend", default="pyboy", help="registry name (default: pyboy)")
    args = ap.parse_args(argv)

    cases = golden_cases()
    known = {c.name for c in cases}
    unknown = sorted(set(args.only or ()) - known)
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    records = load_goldens(args.out) if args.only and args.out.is_file() else {}
    start = time.perf_counter()
    for case in cases:
        if args.only and case.name not in args.only:
            continue
        t0 = time.perf_counter()
        backend = case.make_backend(args.backend)
        try:
            rollout = run_rollout(backend, case.action_array())[0]
        finally:
            backend.close()
        records[case.name] = case_record(case, rollout)
        print(
            f"{case.name:28s} {case.steps:4d} steps  {rollout.digest[:16]}  "
            f"{time.perf_counter() - t0:.2f} s",
            flush=True,
        )
    order = [c.name for c in cases if c.name in records]
    meta = {
        "generator": {
            "tool": "tools/make_goldens.py",
            "backend": args.backend,
            "pyboy": metadata.version("pyboy"),
        }
    }
    write_goldens({n: records[n] for n in order}, meta, args.out)
    print(f"{len(order)} goldens -> {args.out} ({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
