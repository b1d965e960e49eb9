"""Running a fuzz case through ``manage.py analyze`` in-process, and what its result must satisfy (docs/FUZZ.md).

The oracle holds for every input, however hostile:

* the command returns within the case's budget (a watchdog turns a hang into a failure instead of a stuck run),
  and the process's peak memory rises by less than ``MEMORY_BUDGET_MIB`` while it runs;
* nothing escapes it but ``SystemExit`` with a documented code: 0, or 2 with at least one error line (1, a report
  the database refused, and 3, a bad configuration, never come from an input);
* stderr holds only ``hindsight: PATH: reason`` lines, never a traceback and never the catch-all
  ``cannot read ...: SomeError: ...`` that marks a reader bug swallowed to save the other inputs;
* with ``--format json`` every stdout line is strict JSON (no NaN), an object with the contract's keys, and its
  numbers are physically possible: durations, counts and sizes >= 0, utilization and shares in [0, 1], no string
  longer than ``MAX_STRING_CHARS``;
* what the case promises (fuzz_corpus ``FLAGGED`` / ``ERROR`` / ``WARNED``) is kept.
"""

from __future__ import annotations

import io
import math
import re
import resource
import shutil
import signal
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson
from django.core.management import call_command
from fuzz_corpus import ERROR, FLAGGED, WARNED, Case

HANG_S: Final = 30.0  # the watchdog: a case still running after this is a hang, whatever its budget
# Inputs are at most a few MB (bombs expand to 8 MB): reading one may cost a multiple of that, not hundreds of MB
# (F12: a 200 MB line peaked at 1.5 GB).
MEMORY_BUDGET_MIB: Final = 256
MAX_STRING_CHARS: Final = 64 << 10  # far above any name cap the parsers set; a 256 KiB name is not capped
ERROR_LINE: Final = re.compile(r"^hindsight: .+: .+$")
SWALLOWED: Final = re.compile(r"cannot read (?:Spark event logs|MapReduce job histories): [A-Za-z_.]+: ")
# numpy says so when a cast or a sum silently produced a wrong number (e.g. a float past int64 cast to int64).
_WRAPPED: Final = re.compile(r"invalid value encountered in cast|overflow encountered")
CONTRACT_KEYS: Final = ("app_id", "app_type", "status", "partial", "metrics", "heuristics", "warnings", "parse_stats")
FAILURES_DIR: Final = Path(__file__).resolve().parents[2] / "var" / "fuzz-failures"

# Numbers that cannot be negative, by the key's name; and the ones that are fractions of a whole.
_NON_NEGATIVE: Final = re.compile(r"(_ms|_bytes|_gb_hours|^num_|_tasks$|^score$|^lines$|^events$|_executors$|^cores)")
_FRACTION: Final = re.compile(r"(utilization|^share_of_)")


class Hang(Exception):
    """The case ran past the watchdog."""


@dataclass
class Outcome:
    code: int | None = None
    stdout: str = ""
    stderr: str = ""
    elapsed_s: float = 0.0
    crash: str = ""  # the exception that escaped the command, formatted
    hung: bool = False
    records: list[dict[str, Any]] = field(default_factory=list)
    peak_growth_mib: float = 0.0  # how far the process's peak RSS rose while the case ran
    wrapped: list[str] = field(default_factory=list)  # numpy's warnings that a number was silently wrapped


def _on_alarm(signum: int, frame: object) -> None:
    raise Hang


def run_case(case: Case, workdir: Path, *, store: bool = False, hang_s: float = HANG_S) -> Outcome:
    """The case written under ``workdir`` and analyzed in this process, under a SIGALRM watchdog."""
    paths = case.materialize(workdir)
    args = [*paths, "--format", case.output_format]
    if not store:
        args.append("--no-store")
    return run_command("analyze", args, hang_s=hang_s)


def run_command(command: str, args: list[str], *, hang_s: float = HANG_S) -> Outcome:
    """A management command run in this process under a SIGALRM watchdog, its output and fate captured."""
    stdout, stderr = io.StringIO(), io.StringIO()
    outcome = Outcome()
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # pytest-timeout (--timeout, signal method) shares SIGALRM: its pending alarm is put back afterwards.
    pending, _ = signal.getitimer(signal.ITIMER_REAL)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, hang_s)
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            call_command(command, *args, stdout=stdout, stderr=stderr)
            outcome.code = 0
        except SystemExit as exc:
            outcome.code = exc.code if isinstance(exc.code, int) else 1
        except Hang:
            outcome.hung = True
        except BaseException as exc:  # the finding itself: report it, do not let it end the run
            outcome.crash = f"{type(exc).__name__}: {str(exc)[:500]}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            outcome.elapsed_s = time.perf_counter() - started
            if pending:
                signal.setitimer(signal.ITIMER_REAL, max(pending - outcome.elapsed_s, 0.001))
    outcome.stdout, outcome.stderr = stdout.getvalue(), stderr.getvalue()
    # The process's peak only grows: a rise during the case is what the case itself needed on top (KiB on Linux).
    outcome.peak_growth_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
    outcome.wrapped = sorted(
        {f"{w.filename}:{w.lineno}: {w.message}" for w in caught if _WRAPPED.search(str(w.message))}
    )
    return outcome


def _numbers(value: Any, key: str = "", where: str = "") -> Iterator[tuple[str, str, Any]]:
    """(key, path, value) of every scalar inside a parsed record; list items take their list's key."""
    if isinstance(value, dict):
        for name, item in value.items():
            yield from _numbers(item, str(name), f"{where}.{name}")
    elif isinstance(value, list):
        for position, item in enumerate(value):
            yield from _numbers(item, key, f"{where}[{position}]")
    else:
        yield key, where, value


# Keys whose numbers are thresholds or estimates that may legitimately be negative or above 1.
_FREE_PATHS: Final = re.compile(r"\.thresholds\.|\.observed\.|\.replay_error$|\.details\[")


def check_record(record: Any) -> list[str]:
    """What is wrong with one JSON object of ``--format json``."""
    if not isinstance(record, dict):
        return [f"a stdout line is JSON but not an object: {str(record)[:100]}"]
    problems = [f"missing key {key!r}" for key in CONTRACT_KEYS if key not in record]
    for key, where, value in _numbers(record):
        if isinstance(value, str):
            if len(value) > MAX_STRING_CHARS:
                problems.append(f"{where} is a string of {len(value)} characters (cap {MAX_STRING_CHARS})")
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or _FREE_PATHS.search(where):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            problems.append(f"{where} = {value}")
        elif _FRACTION.search(key) and not -1e-9 <= value <= 1 + 1e-9:
            problems.append(f"{where} = {value}, outside [0, 1]")
        elif _NON_NEGATIVE.search(key) and value < 0:
            problems.append(f"{where} = {value} < 0")
    start, end = record.get("start_ms"), record.get("end_ms")
    if isinstance(start, int) and isinstance(end, int) and end < start and not record.get("warnings"):
        problems.append(f"the app ends before it starts ({end} < {start}) and nothing warns")
    return problems


def _flagged(outcome: Outcome) -> bool:
    """Something told the user the input was bad: an error line, or a report that says so."""
    if outcome.code == 2 or "\n  warning: " in outcome.stdout or " (partial log), " in outcome.stdout:
        return True
    return any(
        r.get("partial") or r.get("warnings") or (r.get("parse_stats") or {}).get("malformed_lines")
        for r in outcome.records
    )


def check(case: Case, outcome: Outcome) -> list[str]:
    """Every way the outcome breaks the oracle; empty when it holds."""
    if outcome.hung:
        return [f"hang: still running after the {HANG_S:.0f} s watchdog"]
    problems = []
    if outcome.crash:
        problems.append(f"uncaught exception: {outcome.crash}")
    if outcome.code not in (0, 2) and not outcome.crash:
        problems.append(f"exit code {outcome.code}, not 0 or 2")
    problems += [f"a number silently wrapped: {where}" for where in outcome.wrapped]
    if outcome.peak_growth_mib > MEMORY_BUDGET_MIB:
        problems.append(f"peak memory rose {outcome.peak_growth_mib:.0f} MiB, over the {MEMORY_BUDGET_MIB} MiB budget")
    if outcome.elapsed_s > case.budget_s:
        problems.append(f"took {outcome.elapsed_s:.1f} s, over the case budget of {case.budget_s:.0f} s")
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    if "Traceback" in outcome.stderr:
        problems.append("a traceback on stderr")
    for line in lines:
        if not ERROR_LINE.match(line):
            problems.append(f"stderr line not 'hindsight: PATH: reason': {line[:200]!r}")
        elif SWALLOWED.search(line):
            problems.append(f"a reader bug swallowed by the catch-all: {line[:300]!r}")
    if outcome.code == 2 and not lines:
        problems.append("exit 2 without an error line")
    if case.output_format == "json":
        for number, line in enumerate(outcome.stdout.splitlines()):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                problems.append(f"stdout line {number} is not JSON ({exc}): {line[:120]!r}")
                continue
            outcome.records.append(record)
            problems += [f"app {str(record.get('app_id'))[:40]!r}: {p}" for p in check_record(record)]
        if outcome.code == 0 and not outcome.records and not outcome.crash:
            problems.append("exit 0 but no report printed")
    if case.expect == ERROR and outcome.code != 2:
        problems.append(f"expected exit 2 with an error line, got {outcome.code}")
    if case.expect == FLAGGED and outcome.code is not None and not _flagged(outcome):
        problems.append("bad input analyzed without an error line, warning, partial mark or malformed count")
    if case.expect == WARNED and outcome.code == 0 and case.output_format == "json":
        pattern = re.compile(case.warning)
        silent = [r.get("app_id") for r in outcome.records if not any(map(pattern.search, r.get("warnings") or ()))]
        if silent:
            problems.append(f"reports without a warning matching {case.warning!r}: {[str(s)[:40] for s in silent]}")
    return problems


def save_failure(case: Case, outcome: Outcome, problems: list[str], where: Path = FAILURES_DIR) -> Path:
    """The case's input tree and what went wrong, under ``where/seed<S>-case<I>``; that directory."""
    target = where / f"seed{case.seed}-{case.suite}-case{case.index}"
    shutil.rmtree(target, ignore_errors=True)
    tree = target / "input"
    tree.mkdir(parents=True)
    for entry in case.entries:  # FIFOs and links are recorded, not recreated: the report must open safely
        path = tree / entry.path
        path.parent.mkdir(parents=True, exist_ok=True)
        if entry.kind == "file":
            path.write_bytes(entry.data)
        elif entry.kind == "dir":
            path.mkdir(exist_ok=True)
        else:
            path.with_name(path.name + f".{entry.kind}").write_text(entry.target or entry.kind)
    (target / "report.txt").write_text(
        f"{case.label}\nnote: {case.note}\ninputs: {case.inputs}\nformat: {case.output_format}\n"
        f"exit: {outcome.code}  elapsed: {outcome.elapsed_s:.2f} s\n\nproblems:\n"
        + "".join(f"  {p}\n" for p in problems)
        + f"\nstderr:\n{outcome.stderr[:20000]}\nstdout (head):\n{outcome.stdout[:5000]}\n"
    )
    return target


def describe(case: Case, problems: list[str], saved: Path | None) -> str:
    where = f"\ninput saved to {saved}" if saved else ""
    rerun = f"scripts/fuzz.py --seed {case.seed} --suite {case.suite} --case {case.index}"
    return f"fuzz {case.label} ({case.note[:300]}):\n  " + "\n  ".join(problems[:20]) + f"{where}\nreproduce: {rerun}"
