"""Seeded hostile inputs for ``manage.py analyze``, made by mutating real logs (the fuzz suite, docs/FUZZ.md).

Every case is a small file tree (files, directories, FIFOs, symlinks) plus the paths given to ``analyze``. A case
depends only on ``(seed, index)``: ``make_case(seed, index)`` rebuilds it exactly, so a failure found by the
nightly run is reproduced from the two numbers it prints. The mutator is chosen by index (round robin), so any
run of at least ``len(MUTATORS)`` cases exercises every kind of damage.

The seeds are real: the Spark 4.1.1 sample logs under ``samples/`` and the MapReduce job histories copied from
Hadoop's and Dr. Elephant's test resources into ``tests/fuzz/seeds/`` (Apache-2.0; see the README there).
"""

from __future__ import annotations

import functools
import io
import json
import os
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import zstandard
from codec_writers import ENCODERS

REPO: Final = Path(__file__).resolve().parents[2]
SEEDS: Final = Path(__file__).resolve().parent / "seeds"
SPARK_SEEDS: Final = (
    "samples/failed_job",
    "samples/task_retries",
    "samples/cluster/fleet_rollup_run01_rollup_fleet_try1.zstd",
    "samples/recurring/inventory_sync_run01_reconcile_try1.zstd",
)
JHIST_WITH_CONF: Final = (
    "job_1526555215992_0001-1526555642677-user-QuasiMonteCarlo-1526555658299-1-1-SUCCEEDED-default-1526555648931.jhist"
)
CONF: Final = "job_1526555215992_0001_conf.xml"
JHIST_ALONE: Final = (
    "job_1393307629410_0001-1393307687476-user-Sleep+job-1393307723835-0-0-FAILED-default-1393307693920.jhist"
)

# What a case promises about the result beyond "no crash, valid output" (fuzz_oracle.check):
ANY: Final = "any"  # the damage may be harmless (a flipped byte inside a string)
FLAGGED: Final = "flagged"  # an error line, or a report that is partial, warns, or counts malformed lines
ERROR: Final = "error"  # exit 2 with a "hindsight: PATH: reason" line
WARNED: Final = "warned"  # every report printed carries a warning matching the case's ``warning`` (or exit 2)

# What the warnings for a budget, a cap or an impossible timing say (any of these words will do).
OVER_BUDGET: Final = r"(?i)budget|\bcap|limit|exceed|truncat|\bcut\b|too (long|large|big|many|deep)|stopped"
IMPOSSIBLE_TIMES: Final = r"(?i)clamp|impossible|before (it|they|its|their) start|negative|ends? before"


@dataclass(frozen=True)
class Entry:
    """One thing in a case's file tree: a file with bytes, a directory, a FIFO, or a symlink to ``target``."""

    path: str
    kind: str = "file"  # file | dir | fifo | symlink
    data: bytes = b""
    target: str = ""


@dataclass
class Case:
    seed: int
    index: int
    mutator: str
    entries: list[Entry]
    inputs: list[str]  # paths (relative to the case directory) given to analyze
    expect: str = ANY
    note: str = ""  # what was done, for the failure message
    output_format: str = "json"
    warning: str = "."  # with WARNED: a regex each report's warnings must match one of
    suite: str = "all"  # the mutator list the index was taken in (SUITES)
    budget_s: float = 5.0  # wall clock allowed for the whole case (the watchdog is separate and longer)

    @property
    def label(self) -> str:
        return f"seed={self.seed} suite={self.suite} case={self.index} mutator={self.mutator}"

    def materialize(self, root: Path) -> list[str]:
        """Write the tree under ``root``; the absolute input paths."""
        for entry in self.entries:
            path = root / entry.path
            path.parent.mkdir(parents=True, exist_ok=True)
            if entry.kind == "dir":
                path.mkdir(exist_ok=True)
            elif entry.kind == "fifo":
                os.mkfifo(path)
            elif entry.kind == "symlink":
                path.symlink_to(entry.target)
            else:
                path.write_bytes(entry.data)
        return [str(root / name) for name in self.inputs]


# ---------------------------------------------------------------------------------------------------- seed data


@functools.cache
def spark_seed(name: str) -> tuple[bytes, ...]:
    """The lines of a real Spark event log (decompressed), without their newlines."""
    data = (REPO / name).read_bytes()
    if name.endswith(".zstd"):
        data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True).read()
    return tuple(data.splitlines())


@functools.cache
def seed_file(name: str) -> bytes:
    return (SEEDS / name).read_bytes()


def spark_lines(rng: random.Random) -> list[bytes]:
    return list(spark_seed(rng.choice(SPARK_SEEDS)))


def jhist_lines(rng: random.Random) -> tuple[str, list[bytes]]:
    name = rng.choice((JHIST_WITH_CONF, JHIST_ALONE))
    return name, seed_file(name).splitlines()


def joined(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def app_id_of(lines: list[bytes]) -> str:
    for line in lines:
        if b"SparkListenerApplicationStart" in line:
            try:
                return str(json.loads(line).get("App ID") or "local-1")
            except (ValueError, AttributeError):
                break
    return "local-1"


# ---------------------------------------------------------------------------------------------------- JSON damage

# Values of the wrong type or out of range, each a JSON literal (NaN and Infinity are what Java's Jackson may
# write for a double and what Python's json module accepts).
HOSTILE_LITERALS: Final = (
    '"7"',
    '"not a number"',
    '""',
    "[]",
    "[1, 2]",
    "{}",
    '{"a": {"b": null}}',
    "null",
    "true",
    "false",
    "0",
    "-1",
    "-9223372036854775808",
    "9223372036854775807",
    "18446744073709551617",
    "1e308",
    "-1e308",
    "1e999",
    "3.5",
    "-0.0",
    "NaN",
    "Infinity",
    "-Infinity",
    '"\\u0000"',
    '"\\ud800"',
    '"\\u202e\\u001b[31mred"',
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path inside a parsed JSON value (dict keys and list indexes)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for position, item in enumerate(value[:8]):
            yield (*prefix, position)
            yield from _paths(item, (*prefix, position))


_MARK: Final = "\x00fuzz-literal\x00"


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        obj = obj[step]
    obj[path[-1]] = value


def with_literal(line: bytes, rng: random.Random, literal: str | None = None) -> bytes:
    """The JSON line with one value somewhere inside replaced by a hostile literal; the line as is if not JSON."""
    try:
        event = json.loads(line)
    except ValueError:
        return line
    paths = [p for p in _paths(event) if p != ("Event",) or rng.random() < 0.1]
    if not paths:
        return line
    _set(event, rng.choice(paths), _MARK)
    text = json.dumps(event, ensure_ascii=False)
    return text.replace(json.dumps(_MARK), literal or rng.choice(HOSTILE_LITERALS), 1).encode("utf-8", "surrogatepass")


def rewrite(line: bytes, change: Callable[[dict[str, Any]], None]) -> bytes:
    """The JSON line after ``change`` edited the parsed event in place (NaN/Infinity written as literals)."""
    try:
        event = json.loads(line)
    except ValueError:
        return line
    if not isinstance(event, dict):
        return line
    change(event)
    return json.dumps(event).encode()


def nested(depth: int, rng: random.Random) -> bytes:
    opener, closer = rng.choice((("[", "]"), ('{"a":', "}")))
    return (
        '{"Event":"SparkListenerJobStart","Job ID":1,"Properties":' + opener * depth + "1" + closer * depth + "}"
    ).encode()


def hostile_text(rng: random.Random, size: int) -> str:
    alphabet = "aZ09 \t\n\r\x00\x01\x1b\x7f\u202e\u200b\ufeff\U0001f600é漢\\\"'<>&%${}"
    return "".join(rng.choice(alphabet) for _ in range(size))


# ---------------------------------------------------------------------------------------------------- mutators

Made = tuple[list[Entry], list[str], str, str]  # entries, inputs, expectation, note
# Expectation WARNED, with the regex its warning must match.
_WARNING_OF: Final = {"end_before_start": IMPOSSIBLE_TIMES, "jhist_timewarp": IMPOSSIBLE_TIMES}


def _single(name: str, data: bytes, expect: str, note: str) -> Made:
    return [Entry(name, data=data)], [name], expect, note


def m_truncate(rng: random.Random) -> Made:
    data = joined(spark_lines(rng))
    cut = rng.randrange(1, len(data))
    torn = data[cut - 1 : cut] != b"\n"  # a torn last line must be reported (partial, or an error line)
    return _single("app-trunc", data[:cut], FLAGGED if torn else ANY, f"cut at byte {cut} of {len(data)}")


def m_flip_bytes(rng: random.Random) -> Made:
    data = bytearray(joined(spark_lines(rng)))
    flips = rng.choice((1, 3, 20, 200))
    for _ in range(flips):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return _single("app-flip", bytes(data), ANY, f"{flips} bits flipped")


def m_wrong_types(rng: random.Random) -> Made:
    lines = spark_lines(rng)
    touched = rng.sample(range(len(lines)), k=min(len(lines), rng.choice((1, 3, 10))))
    for position in touched:
        lines[position] = with_literal(lines[position], rng)
    return _single("app-types", joined(lines), ANY, f"hostile values on lines {sorted(touched)}")


def m_every_line_wrong(rng: random.Random) -> Made:
    """One literal, put in one random place of every line: each event kind meets the same wrong type."""
    literal = rng.choice(HOSTILE_LITERALS)
    lines = [with_literal(line, rng, literal) for line in spark_lines(rng)]
    return _single("app-alltypes", joined(lines), ANY, f"{literal} on every line")


def _swap_times(event: dict[str, Any], rng: random.Random) -> None:
    info = event.get("Task Info")
    if isinstance(info, dict) and isinstance(info.get("Finish Time"), int):
        info["Launch Time"], info["Finish Time"] = info["Finish Time"] + rng.randrange(1, 10**10), info["Launch Time"]
    stage = event.get("Stage Info")
    if isinstance(stage, dict) and isinstance(stage.get("Completion Time"), int):
        stage["Completion Time"] = stage.get("Submission Time", 0) - rng.randrange(1, 10**9)
    if event.get("Event") == "SparkListenerApplicationEnd":
        event["Timestamp"] = rng.choice((0, -1, 1))
    if event.get("Event") == "SparkListenerJobEnd" and isinstance(event.get("Completion Time"), int):
        event["Completion Time"] = -event["Completion Time"]


def m_invalid_utf8(rng: random.Random) -> Made:
    """Bytes that are not UTF-8 in the strings of events (a flipped high bit does this): always in the host of
    each TaskEnd, and at random letters of other lines."""
    lines = spark_lines(rng)
    bad = rng.choice((b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xca"))
    lines = [
        line.replace(b'"Host":"', b'"Host":"' + bad, 1) if b"SparkListenerTaskEnd" in line else line for line in lines
    ]
    for position in rng.sample(range(len(lines)), k=min(len(lines), 5)):
        line = bytearray(lines[position])
        letters = [i for i, byte in enumerate(line[:4096]) if 97 <= byte <= 122]
        for at in rng.sample(letters, k=min(len(letters), 3)):
            line[at : at + 1] = bad
        lines[position] = bytes(line)
    return _single("app-utf8", joined(lines), ANY, f"{bad!r} in TaskEnd hosts and random strings")


_COUNTER_WORDS: Final = ("Bytes", "Records", "Memory", "Spilled", "GC Time", "Run Time", "CPU Time", "Wait Time")


def _saturate(value: Any, number: int) -> None:
    """Every counter-like number inside a parsed event set to ``number`` (times that order events are left)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, int) and not isinstance(item, bool) and any(w in key for w in _COUNTER_WORDS):
                value[key] = number
            else:
                _saturate(item, number)
    elif isinstance(value, list):
        for item in value:
            _saturate(item, number)


def m_huge_counters(rng: random.Random) -> Made:
    """Task counters at the top of Java's long range: their sums pass 64 bits."""
    number = (1 << 63) - 1  # Java's Long.MAX_VALUE: two of them pass 64 bits
    lines = [
        rewrite(line, lambda event: _saturate(event, number)) if b"SparkListenerTaskEnd" in line else line
        for line in spark_lines(rng)
    ]
    return _single("app-counters", joined(lines), ANY, f"every TaskEnd counter {number}")


def m_end_before_start(rng: random.Random) -> Made:
    """Tasks, stages, jobs and the app end before they start (F17)."""
    lines = [rewrite(line, lambda e: _swap_times(e, rng)) for line in spark_lines(rng)]
    return _single("app-timewarp", joined(lines), WARNED, "every end time before its start")


def m_deep_nesting(rng: random.Random) -> Made:
    lines = spark_lines(rng)
    depth = rng.choice((1100, 5000, 50_000))
    lines.insert(rng.randrange(1, max(2, len(lines))), nested(depth, rng))
    return _single("app-deep", joined(lines), FLAGGED, f"one line nested {depth} deep")


def _rename(event: dict[str, Any], name: str) -> None:
    if event.get("Event") == "SparkListenerApplicationStart":
        event["App Name"] = name
        event["User"] = name
    stage = event.get("Stage Info")
    if isinstance(stage, dict):
        stage["Stage Name"] = name
        stage["Details"] = name
    if event.get("Event") == "SparkListenerJobStart" and isinstance(event.get("Properties"), dict):
        event["Properties"]["spark.job.description"] = name


def m_huge_names(rng: random.Random) -> Made:
    """App, user and stage names of 256 or 512 KiB (F11, scaled down from 200 MB)."""
    size = rng.choice((256, 512)) << 10
    name = rng.choice(("x", "名", "\u202e")) * size
    lines = [rewrite(line, lambda e: _rename(e, name)) for line in spark_lines(rng)]
    return _single("app-hugename", joined(lines), WARNED, f"names of {size} characters")


def m_control_characters(rng: random.Random) -> Made:
    text = hostile_text(rng, rng.choice((8, 64, 500)))
    lines = [rewrite(line, lambda e: _rename(e, text)) for line in spark_lines(rng)]
    raw = joined(lines)
    expect = ANY
    if rng.random() < 0.5:  # raw NULs and invalid UTF-8 between the lines as well: malformed lines, counted
        raw = raw.replace(b"\n", b"\n\x00\xff\xfe garbage\n", rng.randrange(1, 5))
        expect = FLAGGED
    return _single("app-ctrl", raw, expect, f"names {text!r}")


def m_duplicate_events(rng: random.Random) -> Made:
    lines = spark_lines(rng)
    for _ in range(rng.choice((1, 5, 50))):
        position = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines)), lines[position])
    return _single("app-dup", joined(lines), ANY, "events repeated at random places")


def m_reorder(rng: random.Random) -> Made:
    lines = spark_lines(rng)
    if rng.random() < 0.3:
        rng.shuffle(lines)
        note = "all lines shuffled"
    else:
        start = rng.randrange(len(lines))
        end = min(len(lines), start + rng.randrange(2, 30))
        segment = lines[start:end]
        rng.shuffle(segment)
        lines[start:end] = segment
        note = f"lines {start}..{end} shuffled"
    if rng.random() < 0.3:
        lines.reverse()
        note += ", then reversed"
    return _single("app-order", joined(lines), ANY, note)


def m_missing_events(rng: random.Random) -> Made:
    lines = spark_lines(rng)
    kinds = rng.sample(
        [
            b"SparkListenerApplicationStart",
            b"SparkListenerApplicationEnd",
            b"SparkListenerLogStart",
            b"SparkListenerEnvironmentUpdate",
            b"SparkListenerTaskStart",
            b"SparkListenerTaskEnd",
            b"SparkListenerStageSubmitted",
            b"SparkListenerStageCompleted",
            b"SparkListenerJobEnd",
            b"SparkListenerExecutorAdded",
        ],
        k=rng.choice((1, 2, 4)),
    )
    kept = [line for line in lines if not any(b'"' + kind + b'"' in line for kind in kinds)]
    if not kept:
        kept = lines[:1]
    return _single("app-missing", joined(kept), ANY, f"without {[k.decode() for k in kinds]}")


def m_unknown_events(rng: random.Random) -> Made:
    lines = spark_lines(rng)
    strangers = [
        b'{"Event":"com.example.MyListenerEvent","payload":{"x":[1,2,3]}}',
        b'{"Event":null}',
        b'{"Event":42,"Job ID":1}',
        b'{"Event":["SparkListenerJobStart"]}',
        b'{"Event":{"a":1}}',
        b'{"Event":"SparkListenerTaskEnd"}',
        b'{"Event":"SparkListenerApplicationStart"}',
        b'{"Event":"SparkListenerStageCompleted","Stage Info":[]}',
        b'{"Event":"SparkListenerExecutorAdded","Executor ID":null,"Executor Info":"x"}',
        b"[1,2,3]",
        b'"just a string"',
        b"null",
        b"{}",
        b'{"Event":"SparkListenerJobStart","Job ID":-5,"Stage IDs":[null,"a",1e400]}',
    ]
    for _ in range(rng.choice((1, 5, 40))):
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(strangers))
    return _single("app-unknown", joined(lines), ANY, "unknown and malformed events inserted")


_CODEC_SUFFIX: Final = {"zstd": ".zstd", "lz4": ".lz4", "snappy": ".snappy", "lzf": ".lzf", "gz": ".gz"}


def m_codec(rng: random.Random) -> Made:
    """A damaged log compressed with every codec the reader supports, then maybe cut, flipped or misnamed."""
    inner = rng.choice((m_truncate, m_wrong_types, m_unknown_events, m_duplicate_events, m_control_characters))
    entries, _, _, inner_note = inner(rng)
    codec = rng.choice(sorted(ENCODERS))
    data = bytearray(ENCODERS[codec](entries[0].data))
    note = f"{inner.__name__}({inner_note}) in {codec}"
    damage = rng.random()
    if damage < 0.3:
        cut = rng.randrange(1, len(data))
        data = data[:cut]
        note += f", cut at byte {cut}"
    elif damage < 0.5:
        for _ in range(rng.choice((1, 10))):
            data[rng.randrange(len(data))] ^= 0xFF
        note += ", bytes flipped"
    suffix = _CODEC_SUFFIX[codec]
    if rng.random() < 0.2:
        suffix = rng.choice([s for s in _CODEC_SUFFIX.values() if s != suffix] + ["", ".inprogress", ".bin"])
        note += f", named {suffix or 'without a suffix'}"
    return _single(f"app-codec{suffix}", bytes(data), ANY, note)


def m_rolling(rng: random.Random) -> Made:
    """A rolling (eventlog_v2_) directory whose parts are split from a real log, some of them bad."""
    lines = spark_lines(rng)
    app = app_id_of(lines)
    top = f"eventlog_v2_{app}"
    count = rng.randrange(2, 6)
    cuts = sorted(rng.sample(range(1, len(lines)), k=min(count - 1, len(lines) - 1)))
    parts = [lines[a:b] for a, b in zip([0, *cuts], [*cuts, len(lines)], strict=True)]
    codec = rng.choice(("plain", *sorted(ENCODERS)))
    suffix = "" if codec == "plain" else _CODEC_SUFFIX[codec]
    entries: list[Entry] = []
    bad = []
    for number, part in enumerate(parts, start=1):
        data = joined(part)
        name = f"{top}/events_{number}_{app}{suffix}"
        roll = rng.random()
        if roll < 0.12:
            bad.append(f"part {number} missing")
            continue
        if roll < 0.22:
            entries.append(Entry(name, data=b""))
            bad.append(f"part {number} empty")
            continue
        if roll < 0.3:
            entries.append(Entry(name, kind="dir"))
            bad.append(f"part {number} a directory")
            continue
        if roll < 0.36:
            entries.append(Entry(name, kind="fifo"))
            bad.append(f"part {number} a FIFO")
            continue
        encoded = data if codec == "plain" else ENCODERS[codec](data)
        if roll < 0.45:
            encoded = bytes(rng.randrange(256) for _ in range(200)) + encoded[200:]
            bad.append(f"part {number} garbage at the start")
        entries.append(Entry(name, data=encoded))
    extras = rng.random()
    if extras < 0.3:
        entries.append(Entry(f"{top}/appstatus_{app}.inprogress"))
        bad.append("in progress marker")
    elif extras < 0.5:
        entries.append(Entry(f"{top}/events_{len(parts)}_{app}{suffix}.compact", data=b"{not json\n"))
        bad.append("bad compact part")
    elif extras < 0.6:
        entries.append(Entry(f"{top}/events_0_{app}{suffix}", data=b'{"Event":"SparkListenerLogStart"}\n'))
        entries.append(Entry(f"{top}/events_x_{app}{suffix}", data=b"junk"))
        bad.append("misnumbered parts")
    else:
        entries.append(Entry(f"{top}/appstatus_{app}"))
    if rng.random() < 0.2:
        entries.append(Entry(f"{top}/.events_1_{app}.crc", data=b"crc\x00\x01"))
    return entries, [rng.choice((top, "."))], ANY, f"{len(parts)} {codec} parts; {', '.join(bad) or 'all good'}"


def m_empty_files(rng: random.Random) -> Made:
    content = rng.choice((b"", b"\n" * rng.randrange(1, 5000), b"   \t\r\n" * 50, b"\x00" * 100, b"\xef\xbb\xbf"))
    name = rng.choice(("app-empty", "local-1.zstd", "local-1.lz4", "empty.jhist", "eventlog"))
    if name.endswith(".zstd") and content:
        content = ENCODERS["zstd"](content)
    return _single(name, content, ERROR, f"{len(content)} bytes of nothing")


def m_no_spark_events(rng: random.Random) -> Made:
    """JSON lines, but none a Spark event: exits 2 (F10)."""
    rows = rng.choice(
        (
            [json.dumps({"id": i, "name": f"row {i}"}) for i in range(50)],
            ['{"event":"SparkListenerJobStart"}'] * 10,
            ["[]", "{}", "1", '"x"'],
            [json.dumps({"type": "JOB_SUBMITTED", "event": {}})],
        )
    )
    return _single("data.json", "\n".join(rows).encode() + b"\n", ERROR, "JSON without Spark events")


def m_binary_garbage(rng: random.Random) -> Made:
    size = rng.choice((1, 16, 4096, 100_000))
    data = bytes(rng.randrange(256) for _ in range(min(size, 4096))) * max(1, size // 4096)
    name = rng.choice(("app-garbage", "local-2", "local-2.zstd", "local-2.lz4", "local-2.snappy", "x.jhist"))
    start = rng.choice((b"", b'{"', b"\x28\xb5\x2f\xfd", b"LZ4Block", b"\x82SNAPPY\x00", b"ZV\x01", b"\x1f\x8b"))
    return _single(name, start + data, FLAGGED, f"{size} random bytes after {start!r}")


def m_special_files(rng: random.Random) -> Made:
    """FIFOs, symlinks and directories named like logs beside a good log (F6): never opened, never a hang."""
    good = joined(spark_lines(rng))
    entries = [Entry("logs/good-app", data=good)]
    specials = rng.sample(
        [
            Entry("logs/local-9", kind="fifo"),
            Entry("logs/job_1_0001-1-u-n-2-1-1-SUCCEEDED-q.jhist", kind="fifo"),
            Entry("logs/local-8.zstd", kind="dir"),
            Entry("logs/dangling", kind="symlink", target="nowhere"),
            Entry("logs/loop", kind="symlink", target="loop"),
            Entry("logs/to-fifo", kind="symlink", target="local-9"),
            Entry("logs/self-dir", kind="symlink", target="."),
            Entry("logs/eventlog_v2_local-7", kind="dir"),
            Entry("logs/eventlog_v2_local-6/events_1_local-6", kind="fifo"),
        ],
        k=rng.randrange(1, 5),
    )
    # A symlink to the FIFO needs the FIFO: keep it when it was not drawn.
    if any(e.path == "logs/to-fifo" for e in specials) and not any(e.path == "logs/local-9" for e in specials):
        specials.append(Entry("logs/local-9", kind="fifo"))
    entries += specials
    inputs = ["logs"]
    if rng.random() < 0.5:
        inputs.append(rng.choice(specials).path)
    expect = FLAGGED if any(e.kind == "fifo" for e in specials) else ANY  # an empty directory is no error
    return entries, inputs, expect, f"beside a good log: {[e.path + ' ' + e.kind for e in specials]}"


def m_newline_bomb(rng: random.Random) -> Made:
    """A few KB of zstd that expands to 8 MB of empty lines: empty lines cost nothing, so it is read in budget."""
    body = _bomb(joined(spark_lines(rng)), b"\n", 8 << 20)
    return _single("app-newlines.zstd", body, ANY, f"a real log, then {len(body)} bytes of zstd -> 8 MB of newlines")


def _bomb(head: bytes, filler: bytes, size: int) -> bytes:
    writer = zstandard.ZstdCompressor(level=3).compressobj()
    body = bytearray(writer.compress(head))
    block = filler * ((1 << 20) // len(filler))
    for _ in range(size >> 20):
        body += writer.compress(block)
    return bytes(body + writer.flush())


def m_compression_bomb(rng: random.Random) -> Made:
    """A few KB of zstd that expands to 8 MB of unknown events or one line of spaces (F4, scaled down from 2 GB):
    a stream thousands of times its compressed size is cut at a budget with a warning."""
    filler, note = rng.choice(
        ((b'{"Event":"com.example.Noise","x":1}\n', "unknown events"), (b" ", "one line of spaces"))
    )
    body = _bomb(joined(spark_lines(rng)[:3]), filler, 8 << 20)
    return _single("app-bomb.zstd", body, WARNED, f"{len(body)} bytes of zstd -> 8 MB of {note}")


def m_long_line(rng: random.Random) -> Made:
    """One environment line of several MB (F12, scaled down from 200 MB)."""
    lines = spark_lines(rng)
    size = rng.choice((2, 8)) << 20
    blob = "v" * size

    def grow(event: dict[str, Any]) -> None:
        if event.get("Event") == "SparkListenerEnvironmentUpdate":
            props = event.setdefault("Spark Properties", {})
            if isinstance(props, dict):
                props["spark.fuzz.blob"] = blob

    lines = [rewrite(line, grow) for line in lines]
    if rng.random() < 0.3:
        lines.insert(1, b'{"Event":"SparkListenerLogStart","Spark Version":"' + b"9" * size)  # never closed
    return _single("app-longline", joined(lines), ANY, f"a {size >> 20} MB property value")


def m_redaction_regex(rng: random.Random) -> Made:
    """The log's own spark.redaction.regex is catastrophic for a backtracking engine (F3)."""
    evil = rng.choice(("^(a|aa)+$", "(a+)+$", "(.*a){12}", "((a*)*)*b", "[", "(?P<x>", "a{1000000}"))

    def set_regex(event: dict[str, Any]) -> None:
        if event.get("Event") == "SparkListenerEnvironmentUpdate":
            props = event.setdefault("Spark Properties", {})
            if isinstance(props, dict):
                props["spark.redaction.regex"] = evil
                props["spark.fuzz.value"] = "a" * 40 + "!"

    lines = [rewrite(line, set_regex) for line in spark_lines(rng)]
    return _single("app-regex", joined(lines), ANY, f"spark.redaction.regex={evil!r}")


# ---------------------------------------------------------------------------------------------------- MapReduce


def _jhist_case(rng: random.Random, lines: list[bytes], name: str, conf: bytes | None) -> list[Entry]:
    entries = [Entry(f"history/{name}", data=joined(lines))]
    if conf is not None:
        entries.append(Entry(f"history/{CONF}", data=conf))
    elif name == JHIST_WITH_CONF:
        entries.append(Entry(f"history/{CONF}", data=seed_file(CONF)))
    return entries


def m_jhist_lines(rng: random.Random) -> Made:
    name, lines = jhist_lines(rng)
    body = list(lines[2:])  # after "Avro-Json" and the schema
    damage = rng.choice(("types", "truncate", "drop_end", "duplicate", "unknown", "deep", "flip", "header"))
    if damage == "types":
        for position in rng.sample(range(len(body)), k=min(len(body), rng.choice((1, 5, 20)))):
            body[position] = with_literal(body[position], rng)
    elif damage == "truncate":
        raw = joined(body)
        body = raw[: rng.randrange(1, len(raw))].split(b"\n")
    elif damage == "drop_end":
        body = [line for line in body if b'"JOB_FINISHED"' not in line and b'"JOB_FAILED"' not in line]
    elif damage == "duplicate":
        body += rng.sample(body, k=min(len(body), 10))
        rng.shuffle(body)
    elif damage == "unknown":
        body.insert(rng.randrange(len(body)), b'{"type":"NO_SUCH_EVENT","event":{"x.Y":{"a":1}}}')
        body.insert(rng.randrange(len(body)), b'{"type":"TASK_FINISHED","event":null}')
        body.insert(rng.randrange(len(body)), b'{"type":"TASK_FINISHED","event":{"x":{"taskid":[]}}}')
    elif damage == "deep":
        body.insert(rng.randrange(len(body)), b'{"type":"TASK_STARTED","event":' + b"[" * 5000 + b"]" * 5000 + b"}")
    elif damage == "flip":
        raw = bytearray(joined(body))
        for _ in range(rng.choice((1, 20))):
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        body = bytes(raw).split(b"\n")
    head = list(lines[:2])
    if damage == "header":
        head = rng.choice(([b"Avro-Binary"], [], [b"Avro-Json", b"{not a schema"], [b"Avro-Json"]))
    return _jhist_case(rng, head + body, name, None), ["history"], ANY, f"{name[:26]}: {damage}"


def _timewarp(value: Any, rng: random.Random) -> None:
    """Every finish time inside a jhist event before its start (or negative)."""
    if isinstance(value, dict):
        for key, item in list(value.items()):
            if key.endswith("inishTime") and isinstance(item, int):
                value[key] = rng.choice((-1, 0, item - 10**9))
            else:
                _timewarp(item, rng)
    elif isinstance(value, list):
        for item in value:
            _timewarp(item, rng)


def m_jhist_timewarp(rng: random.Random) -> Made:
    """A job history whose tasks, phases and job finish before they start (F17, MapReduce side)."""
    name, lines = jhist_lines(rng)
    body = [rewrite(line, lambda event: _timewarp(event, rng)) for line in lines[2:]]
    return _jhist_case(rng, list(lines[:2]) + body, name, None), ["history"], WARNED, f"{name[:26]}: times reversed"


def m_jhist_counters(rng: random.Random) -> Made:
    """Every counter and per-task split in a job history at Java's Long.MAX_VALUE (their sums pass 64 bits)."""
    name, lines = jhist_lines(rng)
    top = str((1 << 63) - 1).encode()
    body = [re.sub(rb'("value":)-?\d+', rb"\g<1>" + top, line) for line in lines[2:]]
    body = [
        re.sub(rb'("(?:physMemKbytes|vMemKbytes|cpuUsages|clockSplits|gpuUsages)":\[)[-0-9,]+', rb"\g<1>" + top, line)
        for line in body
    ]
    return _jhist_case(rng, list(lines[:2]) + body, name, None), ["history"], ANY, f"{name[:26]}: counters at 2^63 - 1"


def m_deep_tree(rng: random.Random) -> Made:
    """A log at the bottom of directories nested past the scan's depth cap, and one above it (F7, scaled down)."""
    depth = rng.choice((17, 40, 200))
    good = joined(spark_lines(rng))
    deep = "/".join(["d"] * depth)
    entries = [Entry(f"top/{deep}/app-deep", data=good), Entry("top/d/app-shallow", data=good)]
    return entries, ["top"], FLAGGED, f"a log {depth} directories down, one 1 down"


def m_bad_paths(rng: random.Random) -> Made:
    """Paths over the file-name limit (F9), missing, or with newlines and escapes in their names."""
    good = joined(spark_lines(rng))
    odd = rng.choice(("new\nline", "esc\x1b[31mred", "tab\there", "quote'\"", "-dash", "sp ace", "名前"))
    entries = [Entry(odd, data=good)]
    inputs = [odd, rng.choice(("x" * 300, "d/" * 2100 + "x", "missing", "x" * 255 + "/y"))]
    rng.shuffle(inputs)
    return entries, inputs, ERROR, f"a good log named {odd!r} beside a bad path"


def _conf(properties: list[tuple[str, str]]) -> bytes:
    from xml.sax.saxutils import escape

    rows = "".join(f"<property><name>{escape(k)}</name><value>{escape(v)}</value></property>" for k, v in properties)
    return f'<?xml version="1.0"?><configuration>{rows}</configuration>'.encode()


def m_conf(rng: random.Random) -> Made:
    """A job's _conf.xml with ${} loops, expansion bombs, broken XML or entity tricks (F5)."""
    real = seed_file(CONF)
    damage = rng.choice(("loop", "deep", "broken", "entities", "types", "huge"))
    expect = ANY
    if damage == "loop":
        conf = _conf([("a", "${b}"), ("b", "${a}"), ("c", "${c}x"), ("mapreduce.map.memory.mb", "${a}")])
    elif damage == "deep":  # each level 8 references to the one below: stopped by Hadoop's 20-substitution limit
        props = [("v0", "abcdefgh")] + [(f"v{i}", f"${{v{i - 1}}}" * 8) for i in range(1, 7)]
        conf = _conf([*props, ("mapreduce.fuzz.top", "${v6}")])
    elif damage == "broken":
        conf = real[: rng.randrange(1, len(real))]
    elif damage == "entities":
        conf = (
            b'<?xml version="1.0"?><!DOCTYPE c [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
            b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY x SYSTEM "file:///etc/passwd">]>'
            b"<configuration><property><name>n</name><value>&c;&x;</value></property></configuration>"
        )
    elif damage == "types":
        conf = _conf(
            [
                ("mapreduce.map.memory.mb", rng.choice(("-1", "NaN", "1e999", "lots", "", "99999999999999999999"))),
                ("mapreduce.reduce.memory.mb", rng.choice(("0", "-0", "Infinity"))),
                ("mapreduce.map.java.opts", "-Xmx" + rng.choice(("-5g", "99999999999t", "g", ""))),
                ("mapreduce.job.reduces", "\x00"),
            ]
        )
    else:
        conf = _conf([(f"k{i}", "v" * 1000) for i in range(rng.choice((100, 2000)))])
    return _with_conf(conf), ["history"], expect, f"conf {damage}"


def _with_conf(conf: bytes) -> list[Entry]:
    return [Entry(f"history/{JHIST_WITH_CONF}", data=seed_file(JHIST_WITH_CONF)), Entry(f"history/{CONF}", data=conf)]


def m_conf_bomb(rng: random.Random) -> Made:
    """Values of 20 references (Hadoop's substitution limit) to one long value: each expands to 20 times it, and
    many of them to megabytes from a conf of kilobytes (F5: 2.66 GB from 2.1 MB, scaled down)."""
    size, tops = 32 << 10, rng.choice((40, 60))  # 25-37 MiB expanded: past a 16 MiB per-file budget
    props = [("v0", "x" * size)] + [(f"mapreduce.fuzz.top{i}", "${v0}" * 20) for i in range(tops)]
    note = f"{tops} values of 20 x ${{v0}}, v0 {size >> 10} KiB: {tops * 20 * size >> 20} MiB expanded"
    return _with_conf(_conf(props)), ["history"], WARNED, note


# ---------------------------------------------------------------------------------------------------- registry

Mutator = Callable[[random.Random], Made]

MUTATORS: Final[dict[str, Mutator]] = {
    "truncate": m_truncate,
    "flip_bytes": m_flip_bytes,
    "wrong_types": m_wrong_types,
    "every_line_wrong": m_every_line_wrong,
    "invalid_utf8": m_invalid_utf8,
    "huge_counters": m_huge_counters,
    "end_before_start": m_end_before_start,
    "deep_nesting": m_deep_nesting,
    "huge_names": m_huge_names,
    "control_characters": m_control_characters,
    "duplicate_events": m_duplicate_events,
    "reorder": m_reorder,
    "missing_events": m_missing_events,
    "unknown_events": m_unknown_events,
    "codec": m_codec,
    "rolling": m_rolling,
    "empty_files": m_empty_files,
    "no_spark_events": m_no_spark_events,
    "binary_garbage": m_binary_garbage,
    "special_files": m_special_files,
    "newline_bomb": m_newline_bomb,
    "compression_bomb": m_compression_bomb,
    "long_line": m_long_line,
    "redaction_regex": m_redaction_regex,
    "jhist_lines": m_jhist_lines,
    "jhist_timewarp": m_jhist_timewarp,
    "jhist_counters": m_jhist_counters,
    "deep_tree": m_deep_tree,
    "bad_paths": m_bad_paths,
    "conf": m_conf,
    "conf_bomb": m_conf_bomb,
}
NAMES: Final = tuple(MUTATORS)
# Mutators that cost seconds a case today (bombs, huge values): the CI run gives them a few cases, the others many.
EXPENSIVE: Final = ("huge_names", "newline_bomb", "compression_bomb", "conf_bomb", "long_line")
SUITES: Final[dict[str, tuple[str, ...]]] = {
    "all": NAMES,
    "cheap": tuple(name for name in NAMES if name not in EXPENSIVE),
    "expensive": EXPENSIVE,
    # Stored in the database as well (the CI run): what could make PostgreSQL refuse a report.
    "stored": ("control_characters", "wrong_types", "unknown_events", "missing_events", "jhist_lines", "conf"),
    # MapReduce only (a nightly run can focus on it).
    "mapreduce": ("jhist_lines", "jhist_timewarp", "jhist_counters", "conf", "conf_bomb"),
    # Trees a poll pass over an event-log directory meets (the CI run polls them).
    "polled": ("special_files", "rolling", "deep_tree", "codec", "truncate"),
}


def make_case(seed: int, index: int, suite: str = "all") -> Case:
    """Case ``index`` of the run seeded ``seed`` over the ``suite``'s mutators: the mutator by round robin, its
    choices from a generator seeded by the seed, the suite and the index (so one case is rebuilt alone)."""
    mutators = SUITES[suite]
    name = mutators[index % len(mutators)]
    rng = random.Random(f"hindsight-fuzz:{seed}:{suite}:{index}")
    entries, inputs, expect, note = MUTATORS[name](rng)
    output_format = "text" if rng.random() < 0.15 and expect != WARNED else "json"
    warning = _WARNING_OF.get(name, OVER_BUDGET)
    return Case(seed, index, name, entries, inputs, expect, note, output_format, warning, suite)


__all__ = ["ANY", "ERROR", "FLAGGED", "MUTATORS", "NAMES", "SUITES", "WARNED", "Case", "Entry", "make_case"]
