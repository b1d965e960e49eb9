"""Hostile log archives from a History Server through ``extract_zip`` (F14; docs/FUZZ.md): extracted within the
budget, or refused with a BackendError that leaves nothing behind, never written outside the target.

The archives are the History Server's shape (``/applications/<id>/logs``: the log, or a rolling directory) made
from the real sample logs, then damaged: cut, flipped, unsafe or over-long names, links, duplicate names, members
that expand past the budget (declared or lying about it), too many members, unknown compression.
"""

from __future__ import annotations

import io
import random
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Final

import pytest
from fuzz_corpus import joined, spark_seed

from fetchers.backends import BackendError
from fetchers.spark_history import extract_zip

SEED: Final = 20261127
CASES: Final = 60
MAX_BYTES: Final = 8 << 20  # the test's budget: small, so a bomb is cheap to refuse
LOG: Final = "samples/task_retries"


def _zip(members: list[tuple[str, bytes]], method: int = zipfile.ZIP_DEFLATED) -> bytearray:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in members:
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=method)
    return bytearray(buffer.getvalue())


def _log() -> bytes:
    return joined(list(spark_seed(LOG)))


def _good(rng: random.Random) -> tuple[bytearray, str]:
    if rng.random() < 0.5:
        return _zip([("local-1", _log())]), "the log"
    lines = _log().splitlines(keepends=True)
    half = len(lines) // 2
    parts = [("eventlog_v2_local-1/events_1_local-1", b"".join(lines[:half]))]
    parts += [
        ("eventlog_v2_local-1/events_2_local-1", b"".join(lines[half:])),
        ("eventlog_v2_local-1/appstatus_local-1", b""),
    ]
    return _zip(parts), "a rolling directory"


def _cut(rng: random.Random) -> tuple[bytearray, str]:
    data, _ = _good(rng)
    cut = rng.randrange(1, len(data))
    return data[:cut], f"cut at byte {cut}"


def _flip(rng: random.Random) -> tuple[bytearray, str]:
    data, _ = _good(rng)
    for _ in range(rng.choice((1, 10, 100))):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return data, "bits flipped"


UNSAFE_NAMES: Final = (
    "../evil",
    "/etc/evil",
    "a/../../evil",
    "a\\..\\evil",
    "a\x00b",
    "c:evil",
    "",
    "/".join(["d"] * 200) + "/log",
    ".",
    "a//b",
)


def _names(rng: random.Random) -> tuple[bytearray, str]:
    name = rng.choice(UNSAFE_NAMES)
    return _zip([("local-1", _log()), (name, b"{}\n")]), f"a member named {name[:40]!r}"


def _link(rng: random.Random) -> tuple[bytearray, str]:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("local-1", _log())
        info = zipfile.ZipInfo("link")
        info.external_attr = (0o120777 << 16) | 0x20  # a symlink, as Info-ZIP stores it
        archive.writestr(info, rng.choice(("/etc/passwd", "../..", "local-1")))
    return bytearray(buffer.getvalue()), "a symlink member"


def _duplicate(rng: random.Random) -> tuple[bytearray, str]:
    with pytest.warns(UserWarning, match="Duplicate name"):  # zipfile warns as it writes it
        data = _zip([("local-1", _log()), ("local-1", b"{}\n")])
    return data, "a name twice"


def _bomb(rng: random.Random) -> tuple[bytearray, str]:
    size = rng.choice((16, 48)) << 20  # over MAX_BYTES: deflate keeps it to tens of KB
    return _zip([("local-1", b"\n" * size)]), f"{size >> 20} MiB of newlines"


def _lying_bomb(rng: random.Random) -> tuple[bytearray, str]:
    """The member declares 1 KB in both headers and holds 16 MiB: caught while writing."""
    data = _zip([("local-1", b"{}\n" * ((16 << 20) // 3))])
    small = struct.pack("<I", 1024)
    local = data.find(b"PK\x03\x04")
    data[local + 22 : local + 26] = small  # uncompressed size in the local header
    central = data.find(b"PK\x01\x02")
    data[central + 24 : central + 28] = small  # and in the central directory
    return data, "a member lying about its size"


def _many(rng: random.Random) -> tuple[bytearray, str]:
    count = rng.choice((1001, 3000))
    return _zip([(f"f{i}", b"") for i in range(count)], zipfile.ZIP_STORED), f"{count} members"


def _with_method(method: int, encrypted: bool = False) -> bytearray:
    """The log deflated, then labelled with another compression method (and maybe as encrypted)."""
    data = _zip([("local-1", _log())])
    label = struct.pack("<H", method)
    local, central = data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02")
    data[local + 8 : local + 10] = label
    data[central + 10 : central + 12] = label
    if encrypted:
        data[local + 6] |= 1
        data[central + 8] |= 1
    return data


def _method_unknown(rng: random.Random) -> tuple[bytearray, str]:
    return _with_method(99, encrypted=rng.random() < 0.5), "an unknown compression method"


def _method_bzip2(rng: random.Random) -> tuple[bytearray, str]:
    return _with_method(12), "deflate data labelled bzip2"


def _method_lzma(rng: random.Random) -> tuple[bytearray, str]:
    return _with_method(14), "deflate data labelled LZMA"


def _long_name(rng: random.Random) -> tuple[bytearray, str]:
    name = rng.choice(("x" * 300, "d/" + "y" * 256 + "/log"))
    return _zip([("local-1", _log()), (name, b"{}\n")]), f"a member name over the file-name limit ({len(name)})"


def _empty(rng: random.Random) -> tuple[bytearray, str]:
    return rng.choice((_zip([]), _zip([("dir/", b"")]), bytearray(b""), bytearray(b"PK\x05\x06" + bytes(18)))), "empty"


MUTATORS: Final[tuple[Callable[[random.Random], tuple[bytearray, str]], ...]] = (
    _good,
    _cut,
    _flip,
    _names,
    _link,
    _duplicate,
    _bomb,
    _lying_bomb,
    _many,
    _method_unknown,
    _method_bzip2,
    _method_lzma,
    _long_name,
    _empty,
)
# What the corpus finds that is still open, as strict xfails (the fix flips them): mutator name -> reason.
OPEN: Final[dict[str, str]] = {}


def _params() -> list[object]:
    params = []
    for index in range(CASES):
        name = MUTATORS[index % len(MUTATORS)].__name__
        marks = [pytest.mark.xfail(strict=True, reason=OPEN[name])] if name in OPEN else []
        params.append(pytest.param(index, id=f"{index:02d}{name}", marks=marks))
    return params


def _files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if not p.is_dir())


@pytest.mark.parametrize("index", _params())
def test_a_hostile_archive_is_extracted_within_budget_or_refused_leaving_nothing(index: int, tmp_path: Path) -> None:
    mutator = MUTATORS[index % len(MUTATORS)]
    data, note = mutator(random.Random(f"hindsight-zip-fuzz:{SEED}:{index}"))
    archive = tmp_path / "download.zip"
    archive.write_bytes(bytes(data))
    dest = tmp_path / "out"
    dest.mkdir()
    label = f"zip fuzz seed={SEED} case={index} {mutator.__name__}: {note}"
    refused: BackendError | None = None
    try:
        written = extract_zip(archive, dest, max_bytes=MAX_BYTES, max_members=1000, source="fuzz")
    except BackendError as error:
        refused = error
    if refused is not None:
        assert _files(dest) == [], f"{label}: refused ({refused}) but left {_files(dest)[:5]}"
        assert refused.permanent, f"{label}: a hostile archive refused as a transient error (retried): {refused}"
    else:
        assert written <= MAX_BYTES, label
        assert sum(p.stat().st_size for p in _files(dest)) == written, label
        if mutator is _good:
            assert written == len(_log()), label
    outside = [p for p in tmp_path.rglob("*") if p != archive and p != dest and not p.is_relative_to(dest)]
    assert outside == [], f"{label}: wrote outside the target: {outside[:5]}"
