"""Decompression and line splitting of event logs in every codec Spark writes (fetchers.eventlog)."""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard
from codec_writers import ENCODERS, lzf_chunks

from fetchers.eventlog import EventLog, EventLogError, LineStream, find_event_logs, open_lines
from fetchers.eventlog.codecs import xxh32_low28

GENERATED_LOGS = {
    "3.5.7": {
        "plain": "local-1795326022824",
        "lz4": "local-1795326176776.lz4",
        "snappy": "local-1795326198637.snappy",
        "zstd": "local-1795326213748.zstd",
        "rolling lz4": "eventlog_v2_local-1795326235319",
    },
    "4.1.1": {
        "plain": "local-1795326055348",
        "lz4": "local-1795326086580.lz4",
        "snappy": "local-1795326120648.snappy",
        "zstd": "local-1795326142481.zstd",
        "rolling zstd": "eventlog_v2_local-1795325985629",
        "rolling plain": "eventlog_v2_local-1795326159913",
    },
}
GENERATED_CASES = [(version, kind) for version, logs in GENERATED_LOGS.items() for kind in logs if kind != "plain"]


def read_log(path: Path, **options: int) -> tuple[list[bytes], LineStream]:
    logs, _ = find_event_logs(path)
    assert len(logs) == 1
    with open_lines(logs[0], **options) as stream:
        lines = list(stream)
    return lines, stream


def event_name(line: bytes) -> str:
    return json.loads(line)["Event"]


def plain_lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


@pytest.fixture
def plain_sample(refdata: Path) -> bytes:
    """A real uncompressed Spark 4.1.1 log (396 KB, 124 events)."""
    return (refdata / "spark-generated/spark-4.1.1/event-logs" / GENERATED_LOGS["4.1.1"]["plain"]).read_bytes()


@pytest.mark.parametrize(("version", "kind"), GENERATED_CASES)
def test_every_spark_codec_and_layout_gives_the_lines_of_the_plain_log(refdata: Path, version: str, kind: str) -> None:
    folder = refdata / f"spark-generated/spark-{version}/event-logs"
    expected = plain_lines(folder / GENERATED_LOGS[version]["plain"])

    lines, stream = read_log(folder / GENERATED_LOGS[version][kind])

    assert len(lines) == len(expected)
    assert event_name(lines[0]) == event_name(expected[0]) == "SparkListenerLogStart"
    assert event_name(lines[-1]) == event_name(expected[-1]) == "SparkListenerApplicationEnd"
    assert not stream.partial
    assert stream.warnings == []


@pytest.mark.parametrize("codec", sorted(ENCODERS))
def test_a_log_written_in_each_codec_reads_back_line_for_line(tmp_path: Path, plain_sample: bytes, codec: str) -> None:
    path = tmp_path / f"local-1.{codec}"
    path.write_bytes(ENCODERS[codec](plain_sample))

    lines, stream = read_log(path)

    assert lines == plain_sample.splitlines()
    assert stream.bytes_read == len(plain_sample)
    assert not stream.partial


def test_an_lzf_log_is_read(tmp_path: Path, plain_sample: bytes) -> None:
    """No real .lzf event log exists in refdata, so the sample is made here: the plain log re-encoded in
    compress-lzf's LZFOutputStream chunk format with python-lzf, incompressible chunks stored raw as it does."""
    path = tmp_path / "local-1795326055348.lzf"
    path.write_bytes(lzf_chunks(plain_sample) + b"ZV\x00" + struct.pack(">H", 3) + b"{}\n")

    lines, stream = read_log(path)

    assert lines == [*plain_sample.splitlines(), b"{}"]
    assert not stream.partial


@pytest.mark.parametrize("codec", sorted(ENCODERS))
@pytest.mark.parametrize("keep", [0.05, 0.3, 0.6, 0.97, -1])
def test_a_truncated_compressed_log_gives_the_complete_lines_before_the_cut(
    tmp_path: Path, plain_sample: bytes, codec: str, keep: float
) -> None:
    full = ENCODERS[codec](plain_sample)
    cut = len(full) - 1 if keep == -1 else int(len(full) * keep)
    path = tmp_path / f"local-1.{codec}"
    path.write_bytes(full[:cut])
    expected = plain_sample.splitlines()

    lines, stream = read_log(path)

    assert stream.partial
    assert len(stream.warnings) == 1
    assert stream.warnings[0].startswith(f"local-1.{codec}: ")
    assert "ends early" in stream.warnings[0]
    complete, last = lines[:-1], lines[-1:] or [b""]
    assert complete == expected[: len(complete)]
    assert expected[len(complete)].startswith(last[0])  # the torn last line is a prefix of the real one
    if keep == -1:  # only the last block is lost
        assert len(lines) > len(expected) * 0.6


@pytest.mark.parametrize("cut_from_end", [1, 2, 10, 18, 25, 26, 1000])
def test_a_real_lz4_log_cut_anywhere_near_the_end_is_partial_not_an_error(
    tmp_path: Path, refdata: Path, cut_from_end: int
) -> None:
    data = (refdata / "spark-generated/spark-3.5.7/event-logs" / GENERATED_LOGS["3.5.7"]["lz4"]).read_bytes()
    path = tmp_path / "local-1.lz4"
    path.write_bytes(data[:-cut_from_end])

    lines, stream = read_log(path)

    assert stream.partial
    assert lines
    assert "ends early" in stream.warnings[0]


def test_a_real_zstd_log_cut_mid_frame_is_partial(tmp_path: Path, refdata: Path) -> None:
    data = (refdata / "spark-generated/spark-4.1.1/event-logs" / GENERATED_LOGS["4.1.1"]["zstd"]).read_bytes()
    full_lines, _ = read_log(refdata / "spark-generated/spark-4.1.1/event-logs" / GENERATED_LOGS["4.1.1"]["zstd"])
    path = tmp_path / "local-1.zstd"
    path.write_bytes(data[: len(data) * 3 // 4])

    lines, stream = read_log(path)

    assert stream.partial
    assert "compressed stream ends early; read up to byte" in stream.warnings[0]
    assert 0 < len(lines) < len(full_lines)
    assert lines[:-1] == full_lines[: len(lines) - 1]


def test_a_plain_log_without_a_final_newline_still_yields_its_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "local-1.inprogress"
    path.write_bytes(b'{"Event":"A"}\n{"Event":"B"}\n{"Event":"C","Ti')

    lines, stream = read_log(path)

    assert lines == [b'{"Event":"A"}', b'{"Event":"B"}', b'{"Event":"C","Ti']
    assert stream.partial
    assert "in progress" in stream.warnings[0]


@pytest.mark.parametrize("codec", ["plain", *sorted(ENCODERS)])
def test_a_line_longer_than_the_read_chunk_survives(tmp_path: Path, codec: str) -> None:
    # Incompressible text: "abab..." would decompress past the ratio budget (fetchers.budgets), as a bomb does.
    text = random.Random(0).randbytes(3 << 20).hex().encode()
    long_line = b'{"Event":"SparkListenerEnvironmentUpdate","x":"' + text + b'"}'
    data = b'{"Event":"first"}\n' + long_line + b'\n{"Event":"last"}\n'
    path = tmp_path / ("local-1" if codec == "plain" else f"local-1.{codec}")
    path.write_bytes(data if codec == "plain" else ENCODERS[codec](data))

    default_lines, _ = read_log(path)
    small_chunk_lines, stream = read_log(path, chunk_size=4096)

    assert default_lines == small_chunk_lines == [b'{"Event":"first"}', long_line, b'{"Event":"last"}']
    assert not stream.partial


def test_line_splitting_does_not_depend_on_where_chunks_end(tmp_path: Path, plain_sample: bytes) -> None:
    path = tmp_path / "local-1.zstd"
    path.write_bytes(ENCODERS["zstd"](plain_sample))

    for chunk_size in (1, 7, 4096, 65537):
        lines, _ = read_log(path, chunk_size=chunk_size)
        assert lines == plain_sample.splitlines()


@pytest.mark.parametrize(("name", "codec"), [("local-1.lz4", "zstd"), ("local-1", "zstd"), ("local-1.zstd", "gz")])
def test_the_magic_bytes_win_over_the_file_name_with_a_warning(
    tmp_path: Path, plain_sample: bytes, name: str, codec: str
) -> None:
    path = tmp_path / name
    path.write_bytes(ENCODERS[codec](plain_sample))

    lines, stream = read_log(path)

    assert lines == plain_sample.splitlines()
    assert len(stream.warnings) == 1
    assert stream.warnings[0].startswith(f"{name}: ")
    assert ("gzip" if codec == "gz" else codec) in stream.warnings[0]
    assert not stream.partial


def test_a_compressed_suffix_on_plain_text_is_read_as_plain_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "local-1.zstd"
    path.write_bytes(b'{"Event":"A"}\n')

    lines, stream = read_log(path)

    assert lines == [b'{"Event":"A"}']
    assert "plain text" in stream.warnings[0]


def test_an_unknown_suffix_with_unknown_content_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "local-1.brotli"
    path.write_bytes(os.urandom(64).replace(b"{", b"x"))

    with pytest.raises(EventLogError) as error:
        find_event_logs(path)

    message = str(error.value)
    assert str(path) in message
    assert "'.brotli'" in message
    assert "\n" not in message


@pytest.mark.parametrize("codec", ["lz4", "snappy", "zstd", "gz"])
def test_corrupt_data_in_the_middle_stops_that_part_with_a_warning(
    tmp_path: Path, plain_sample: bytes, codec: str
) -> None:
    data = bytearray(ENCODERS[codec](plain_sample))
    middle = len(data) * 17 // 20  # past the first zstd block (128 KiB of text), which would take everything
    data[middle : middle + 64] = bytes(range(64))
    path = tmp_path / f"local-1.{codec}"
    path.write_bytes(bytes(data))
    expected = plain_sample.splitlines()

    lines, stream = read_log(path)

    assert stream.partial
    assert len(stream.warnings) >= 1
    assert len(lines) < len(expected) or lines != expected
    assert lines[:5] == expected[:5]


def test_a_corrupt_first_part_does_not_lose_the_second(tmp_path: Path, plain_sample: bytes) -> None:
    directory = tmp_path / "eventlog_v2_local-1"
    directory.mkdir()
    (directory / "appstatus_local-1").write_bytes(b"")
    first = bytearray(ENCODERS["lz4"](plain_sample))
    first[len(first) // 2 : len(first) // 2 + 32] = b"\xff" * 32
    (directory / "events_1_local-1.lz4").write_bytes(bytes(first))
    (directory / "events_2_local-1.lz4").write_bytes(ENCODERS["lz4"](b'{"Event":"SparkListenerApplicationEnd"}\n'))

    lines, stream = read_log(directory)

    assert stream.partial
    assert stream.warnings[0].startswith("events_1_local-1.lz4: ")
    assert lines[0] == plain_sample.splitlines()[0]
    assert lines[-1] == b'{"Event":"SparkListenerApplicationEnd"}'


def test_an_lz4_block_with_a_wrong_checksum_is_reported(tmp_path: Path, plain_sample: bytes) -> None:
    data = bytearray(ENCODERS["lz4"](plain_sample))
    data[17:21] = struct.pack("<i", 12345)  # the first block's stored checksum
    path = tmp_path / "local-1.lz4"
    path.write_bytes(bytes(data))

    lines, stream = read_log(path)

    assert lines == plain_sample.splitlines()  # the data itself decodes; the warning says it may be damaged
    assert stream.partial
    assert stream.warnings == ["local-1.lz4: lz4 block at byte 0 fails its checksum; its lines may be damaged"]


def test_xxhash32_matches_the_reference_vectors() -> None:
    # Vectors from the xxHash reference implementation (seed 0).
    vectors = {b"": 0x02CC5D05, b"a": 0x550D7456, b"abc": 0x32D153FF}
    vectors[b"Nobody inspects the spammish repetition"] = 0xE2293B2F
    blocks = list(vectors)

    assert [xxh32_low28(block, 0) for block in blocks] == [vectors[block] & 0xFFFFFFF for block in blocks]


def test_real_lz4_java_checksums_verify(refdata: Path) -> None:
    for version in GENERATED_LOGS:
        _, stream = read_log(refdata / f"spark-generated/spark-{version}/event-logs" / GENERATED_LOGS[version]["lz4"])
        assert stream.warnings == []  # every 32 KiB block's checksum matched the one lz4-java wrote


def test_concatenated_streams_are_read_through(tmp_path: Path) -> None:
    first, second = b'{"Event":"A"}\n', b'{"Event":"B"}\n'
    for codec in ("zstd", "lz4", "snappy", "gz"):
        joined = ENCODERS[codec](first) + (ENCODERS[codec](second) if codec != "snappy" else b"")
        if codec == "snappy":  # snappy-java allows a new header in the middle of the stream
            joined = ENCODERS[codec](first) + ENCODERS[codec](second)
        path = tmp_path / f"local-1.{codec}"
        path.write_bytes(joined)

        lines, stream = read_log(path)

        assert lines == [b'{"Event":"A"}', b'{"Event":"B"}'], codec
        assert not stream.partial, codec


def test_the_malformed_zstd_log_is_read_to_the_end_line_by_line(refdata: Path) -> None:
    path = refdata / "spark-rapids-tools/spark-events-profiling/malformed_json_eventlog.zstd"
    with path.open("rb") as fh:
        expected = zstandard.ZstdDecompressor().stream_reader(fh).read().splitlines()

    lines, stream = read_log(path)

    assert lines == expected
    assert not stream.partial
    unparsable = 0
    for line in lines:
        try:
            json.loads(line)
        except ValueError:
            unparsable += 1
    assert unparsable == 1  # the byte layer passes it on; the parser decides


def test_closing_a_stream_early_stops_reading(tmp_path: Path, plain_sample: bytes) -> None:
    path = tmp_path / "local-1.zstd"
    path.write_bytes(ENCODERS["zstd"](plain_sample))
    logs, _ = find_event_logs(path)

    with open_lines(logs[0], chunk_size=4096) as stream:
        first = next(iter(stream))
    after_close = list(stream)

    assert first == plain_sample.splitlines()[0]
    assert after_close == []
    assert 0 < stream.bytes_read < len(plain_sample)


def test_opening_a_log_whose_file_is_gone_is_a_one_line_error(tmp_path: Path, plain_sample: bytes) -> None:
    path = tmp_path / "local-1"
    path.write_bytes(plain_sample)
    logs, _ = find_event_logs(path)
    path.unlink()

    with pytest.raises(EventLogError, match=r"local-1: cannot read any part"):
        open_lines(logs[0])


def test_a_rolling_log_of_two_zstd_parts_reads_as_one_stream(refdata: Path) -> None:
    directory = refdata / "spark-rapids-tools/spark-events-qualification/eventlog_v2_local-1623876083964"
    expected: list[bytes] = []
    for name in ("events_1_local-1623876083964.zstd", "events_2_local-1623876083964.zstd"):
        with (directory / name).open("rb") as fh:
            expected += zstandard.ZstdDecompressor().stream_reader(fh).read().splitlines()

    lines, stream = read_log(directory)

    assert lines == expected
    assert event_name(lines[0]) == "SparkListenerLogStart"
    assert event_name(lines[-1]) == "SparkListenerApplicationEnd"
    assert not stream.partial


def test_the_databricks_log_reads_the_rolled_gzip_part_before_the_current_one(refdata: Path) -> None:
    directory = refdata / "spark-rapids-tools/spark-events-qualification/db_sim_eventlog"
    expected = gzip.decompress((directory / "eventlog-2021-06-15--15-00.gz").read_bytes()).splitlines()
    expected += (directory / "eventlog").read_bytes().splitlines()
    rolling, _ = read_log(refdata / "spark-rapids-tools/spark-events-qualification/eventlog_v2_local-1623876083964")

    lines, stream = read_log(directory)

    assert lines == expected
    assert len(lines) == len(rolling)  # the same app, rolled the Databricks way
    assert event_name(lines[0]) == "SparkListenerLogStart"
    assert event_name(lines[-1]) == "SparkListenerApplicationEnd"
    assert not stream.partial


def test_an_oversized_binary_line_is_skipped_not_buffered(tmp_path: Path, read_budgets: Callable[..., None]) -> None:
    read_budgets(max_line_bytes=10000)
    path = tmp_path / "local-1"
    path.write_bytes(b'{"Event":"A"}\n' + b"x" * 50_000 + b'\n{"Event":"B"}\n')

    lines, stream = read_log(path, chunk_size=1024)

    assert lines == [b'{"Event":"A"}', b'{"Event":"B"}']
    assert stream.partial
    assert "longer than" in stream.warnings[0]


def test_reading_copies_keeps_log_objects_independent(tmp_path: Path, refdata: Path) -> None:
    source = refdata / "spark-generated/spark-3.5.7/event-logs" / GENERATED_LOGS["3.5.7"]["snappy"]
    copy = tmp_path / source.name
    shutil.copy(source, copy)
    logs, _ = find_event_logs(copy)
    log: EventLog = logs[0]

    first = list(open_lines(log))
    second = list(open_lines(log))

    assert first == second
    assert log.parts[0].codec == "snappy"


@pytest.mark.parametrize("codec", sorted(ENCODERS))
def test_damaged_compressed_logs_never_raise_while_reading(tmp_path: Path, plain_sample: bytes, codec: str) -> None:
    rng = random.Random(codec)  # deterministic damage: flipped bytes, sometimes also a cut
    clean = ENCODERS[codec](plain_sample)
    expected = plain_sample.splitlines()
    path = tmp_path / f"local-1.{codec}"
    for _ in range(25):
        damaged = bytearray(clean)
        for _ in range(rng.randint(1, 4)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        path.write_bytes(bytes(damaged[: rng.randrange(len(damaged))] if rng.random() < 0.3 else damaged))

        lines, stream = read_log(path)

        if codec in ("lz4", "gz"):  # streams with checksums (lz4 per block, gzip CRC32 trailer): damage is noticed
            assert stream.partial or lines == expected
        assert all("\n" not in warning for warning in stream.warnings)
        assert all(not warning.startswith(f"local-1.{codec}: cannot decode") for warning in stream.warnings)
