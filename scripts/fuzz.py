#!/usr/bin/env python
"""The nightly fuzz run: ``--cases`` hostile inputs from ``--seed`` through ``manage.py analyze`` (docs/FUZZ.md).

    .venv/bin/python scripts/fuzz.py --seed 20261127 --cases 2000       # a nightly-style run
    .venv/bin/python scripts/fuzz.py --seed 7 --case 123                # one case again, from a failure message
    .venv/bin/python scripts/fuzz.py --seed 20261127 --suite cheap --cases 330   # the CI run's cheap cases

Each failing case is written to ``var/fuzz-failures/seed<S>-<suite>-case<I>/`` (its input tree and what went wrong) and
listed at the end; the exit status is 1 when any case failed. Runs in-process on the local settings with
``--no-store``: no database needed.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "fuzz")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=int(time.strftime("%Y%m%d")), help="default: today's date")
    parser.add_argument("--cases", type=int, default=1000, help="how many cases (default 1000)")
    parser.add_argument("--case", type=int, action="append", help="run only this case index (repeatable)")
    parser.add_argument(
        "--suite", default="all", help="mutator list: all (default), cheap, expensive, stored, polled, mapreduce"
    )
    parser.add_argument("--out", type=Path, default=None, help="where failing inputs go (var/fuzz-failures)")
    parser.add_argument("--quiet", action="store_true", help="no line per case")
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import fuzz_corpus
    import fuzz_oracle

    if args.suite not in fuzz_corpus.SUITES:
        parser.error(f"unknown suite {args.suite!r}; known: {', '.join(fuzz_corpus.SUITES)}")
    names = fuzz_corpus.SUITES[args.suite]
    indexes = args.case if args.case else range(args.cases)
    out = args.out or fuzz_oracle.FAILURES_DIR
    tally: collections.Counter[tuple[str, bool]] = collections.Counter()
    slowest: list[tuple[float, str]] = []
    failures: list[str] = []
    hungriest = (0.0, "")
    started = time.perf_counter()
    for index in indexes:
        case = fuzz_corpus.make_case(args.seed, index, args.suite)
        with tempfile.TemporaryDirectory(prefix="hindsight-fuzz-") as workdir:
            outcome = fuzz_oracle.run_case(case, Path(workdir))
        problems = fuzz_oracle.check(case, outcome)
        tally[(case.mutator, not problems)] += 1
        slowest.append((outcome.elapsed_s, case.label))
        hungriest = max(hungriest, (outcome.peak_growth_mib, case.label))
        if problems:
            saved = fuzz_oracle.save_failure(case, outcome, problems, out)
            failures.append(fuzz_oracle.describe(case, problems, saved))
        if not args.quiet:
            print(f"{'FAIL' if problems else 'ok  '} {outcome.elapsed_s:6.2f}s {case.label} {case.note[:80]}")
    total = time.perf_counter() - started
    print(f"\n{len(indexes)} cases, seed {args.seed}, {total:.1f} s")
    for name in names:
        passed, failed = tally[(name, True)], tally[(name, False)]
        if passed or failed:
            print(f"  {name:<20} {passed:4d} ok {failed:4d} failed")
    print("slowest:", *(f"{s:.2f}s {label}" for s, label in sorted(slowest, reverse=True)[:5]), sep="\n  ")
    print(f"largest rise of the peak memory: {hungriest[0]:.0f} MiB ({hungriest[1] or 'none'})")
    for text in failures:
        print("\n" + text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
