"""Decoders for every stream format Spark writes event logs in, as bounded chunk iterators.

Format facts relied on (refdata README section 6 fact 5; the Java sources of each writer):

* codec name = text after the last ``.`` of the file name once ``.inprogress`` / ``.compact`` are stripped
  (``zstd``, ``lz4``, ``snappy``, ``lzf``; Databricks rolls to ``.gz``). Names can lie, so the first bytes decide:
  zstd ``28 b5 2f fd``; lz4 ``LZ4Block``; snappy ``\\x82SNAPPY\\x00``; lzf ``ZV`` + type 0/1; gzip ``1f 8b``;
  plain JSON lines start with ``{"``.
* ``.zstd``: standard zstd frames (one or more); Spark's writer emits one frame per stream.
* ``.lz4``: lz4-java ``LZ4BlockOutputStream``: per block ``LZ4Block`` + token (method 0x10 raw / 0x20 lz4 in the
  high nibble, level in the low nibble, block size = 1 << (10 + level)) + LE int32 compressed length + LE int32
  raw length + LE int32 xxhash32 (seed 0x9747b28c) of the raw bytes, compared on its low 28 bits; an empty block
  ends a stream (more streams may follow). Not the LZ4 frame format.
* ``.snappy``: snappy-java ``SnappyOutputStream``: ``\\x82SNAPPY\\x00`` + BE int32 version + BE int32 compatible
  version, then BE int32 length + raw snappy block, repeated; a repeated header marks a concatenated stream.
  Not the snappy framing format.
* ``.lzf``: compress-lzf chunks: ``ZV`` + 0 + BE uint16 length + raw bytes, or ``ZV`` + 1 + BE uint16
  compressed length + BE uint16 raw length + lzf data. No end marker.
* ``.gz``: gzip members (Databricks rolled parts).

Each decoder yields decompressed chunks of about ``chunk_size`` bytes (never the whole log) and raises
``StreamProblem`` when the data stops making sense: everything yielded before it is good.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable, Iterator
from typing import BinaryIO, Final

import cramjam
import lz4.block
import lzf
import xxhash
import zstandard

CHUNK_SIZE: Final = 1 << 20
HEAD_SIZE: Final = 16  # enough bytes to recognise every format below

ZSTD: Final = "zstd"
LZ4: Final = "lz4"
SNAPPY: Final = "snappy"
LZF: Final = "lzf"
GZIP: Final = "gzip"

# File-name suffix -> codec. Spark's short names, plus the suffixes the same formats get elsewhere.
SUFFIX_CODECS: Final[dict[str, str]] = {
    "zstd": ZSTD,
    "zst": ZSTD,
    "lz4": LZ4,
    "snappy": SNAPPY,
    "lzf": LZF,
    "gz": GZIP,
    "gzip": GZIP,
}

_PLAIN_START = re.compile(rb'\s*\{\s*"')

# Sink for problems found while decoding that do not stop it: (message, makes the result partial).
Report = Callable[[str, bool], None]


class StreamProblem(Exception):
    """The stream cannot be decoded past this point (truncated or corrupt); the message says where."""


class UnknownFormat(ValueError):
    """Neither the file name nor the first bytes say how to read the file."""


def codec_from_name(name: str) -> str | None:
    """The suffix that names a codec (``"zstd"``, ...), ``""`` for an unknown suffix, None for no suffix."""
    suffix = _suffix(name)
    return None if suffix is None else SUFFIX_CODECS.get(suffix.lower(), "")


def _suffix(name: str) -> str | None:
    """Text after the last ``.`` once ``.inprogress`` / ``.compact`` are stripped, None if there is none."""
    for marker in (".inprogress", ".compact", ".inprogress"):
        name = name.removesuffix(marker)
    stem, dot, suffix = name.rpartition(".")
    return suffix if dot and stem else None


def codec_from_magic(head: bytes) -> str | None:
    """The codec the first bytes belong to, None for plain JSON lines; UnknownFormat if they fit nothing."""
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return ZSTD
    if head.startswith(b"LZ4Block"):
        return LZ4
    if head.startswith(b"\x82SNAPPY\x00"):
        return SNAPPY
    if head.startswith((b"ZV\x00", b"ZV\x01")):
        return LZF
    if head.startswith(b"\x1f\x8b"):
        return GZIP
    if _PLAIN_START.match(head) or not head.strip():
        return None
    raise UnknownFormat(f"unrecognised content (first bytes {head[:8].hex(' ')})")


def detect_codec(name: str, head: bytes) -> tuple[str | None, str | None]:
    """(codec, warning) for a file: the magic bytes win over the name; a disagreement gives a warning.

    An empty file takes the codec of its name. Raises UnknownFormat when the name has no known codec and the
    bytes are not recognised either.
    """
    named = codec_from_name(name)
    if not head:
        return (named or None), None
    try:
        found = codec_from_magic(head)
    except UnknownFormat as error:
        if named:
            return named, None  # corrupt start of a named file: the decoder reports where it fails
        suffix = f"unknown suffix '.{_suffix(name)}' and " if named == "" else ""
        raise UnknownFormat(f"{suffix}{error}") from None
    if found == named or (found is None and not named):
        return found, None
    described = found or "plain text"
    if named:
        return found, f"named .{_suffix(name)} but the content is {described}; reading it as {described}"
    if named == "":
        return found, f"unknown suffix '.{_suffix(name)}' but the content is {described}; reading it as {described}"
    return found, f"no codec suffix but the content is {described}; reading it as {described}"


def decode(fh: BinaryIO, codec: str | None, report: Report, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Decompressed chunks of ``fh`` (opened at its start). Raises StreamProblem where decoding must stop."""
    decoder = _DECODERS.get(codec)
    if decoder is None:
        raise StreamProblem(f"no decoder for codec {codec!r}")
    return decoder(fh, report, chunk_size)


def _ends_early(offset: int) -> StreamProblem:
    return StreamProblem(f"compressed stream ends early; read up to byte {offset}")


def _plain(fh: BinaryIO, report: Report, chunk_size: int) -> Iterator[bytes]:
    read = fh.read
    while chunk := read(chunk_size):
        yield chunk


def _zstd(fh: BinaryIO, report: Report, chunk_size: int) -> Iterator[bytes]:
    return _salvaging(_zstd_chunks, zstandard.ZstdError, "zstd", fh, report, chunk_size)


def _zstd_chunks(fh: BinaryIO, report: Report, chunk_size: int) -> Iterator[bytes]:
    reader = zstandard.ZstdDecompressor().stream_reader(
        fh, read_size=chunk_size, read_across_frames=True, closefd=False
    )
    while chunk := reader.read(chunk_size):  # read(n) bounds the output whatever the compression ratio
        yield chunk
    # The stream reader stops quietly at the end of the input even inside a frame: walk the frame structure.
    incomplete_at = _zstd_incomplete_at(fh)
    if incomplete_at is not None:
        raise _ends_early(incomplete_at)


_SALVAGE_STEP: Final = 1 << 14


def _salvaging(
    chunks: Callable[[BinaryIO, Report, int], Iterator[bytes]],
    errors: type[Exception],
    codec: str,
    fh: BinaryIO,
    report: Report,
    chunk_size: int,
) -> Iterator[bytes]:
    """``chunks`` with library errors turned into StreamProblem, losing as little good data as possible.

    A decoder call that meets corrupt data raises and drops the good output it made in that same call (up to a
    whole chunk). On that rare path the part is decoded again in small steps and what lies beyond the bytes
    already handed out is handed out too, up to the bad spot.
    """
    produced = 0
    try:
        for chunk in chunks(fh, report, chunk_size):
            produced += len(chunk)
            yield chunk
        return
    except errors as error:
        reason = str(error)
    fh.seek(0)
    seen = 0
    try:
        for chunk in chunks(fh, report, _SALVAGE_STEP):
            if seen + len(chunk) > produced:
                yield chunk[max(0, produced - seen) :]
            seen += len(chunk)
    except (errors, StreamProblem):
        pass
    raise StreamProblem(f"corrupt {codec} data after {max(seen, produced)} decompressed bytes ({reason})")


_ZSTD_MAGIC: Final = 0xFD2FB528
_FCS_SIZES: Final = (0, 2, 4, 8)
_DICT_ID_SIZES: Final = (0, 1, 2, 4)


def _zstd_incomplete_at(fh: BinaryIO) -> int | None:
    """Offset of the frame or block the file ends inside, None if the file ends on a frame boundary.

    Reads only frame and block headers (a few bytes per 128 KiB block), seeking over block contents.
    """
    fh.seek(0, 2)
    size = fh.tell()
    offset = 0
    while offset < size:
        fh.seek(offset)
        magic_bytes = fh.read(4)
        if len(magic_bytes) < 4:
            return offset
        magic = int.from_bytes(magic_bytes, "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame: 4-byte length, then that many bytes
            length_bytes = fh.read(4)
            if len(length_bytes) < 4 or offset + 8 + int.from_bytes(length_bytes, "little") > size:
                return offset
            offset += 8 + int.from_bytes(length_bytes, "little")
            continue
        if magic != _ZSTD_MAGIC:
            return None  # not a frame: the decoder already judged the content
        frame_start = offset
        descriptor = fh.read(1)
        if not descriptor:
            return frame_start
        flags = descriptor[0]
        single_segment = bool(flags & 0x20)
        fcs_size = _FCS_SIZES[flags >> 6] or (1 if single_segment else 0)
        header_rest = (0 if single_segment else 1) + _DICT_ID_SIZES[flags & 0x03] + fcs_size
        offset += 5 + header_rest
        while True:
            fh.seek(offset)
            block_header = fh.read(3)
            if len(block_header) < 3:
                return frame_start
            header = int.from_bytes(block_header, "little")
            block_type = (header >> 1) & 0x03
            content_size = 1 if block_type == 1 else header >> 3
            offset += 3 + content_size
            if offset > size:
                return frame_start
            if header & 1:
                break
        if flags & 0x04:
            offset += 4
        if offset > size:
            return frame_start
    return None


_LZ4_HEADER: Final = struct.Struct("<8sBiii")
_LZ4_RAW: Final = 0x10
_LZ4_COMPRESSED: Final = 0x20
_LZ4_SEED: Final = 0x9747B28C


def _lz4(fh: BinaryIO, report: Report, chunk_size: int) -> Iterator[bytes]:
    return _coalesced(_checked(_lz4_blocks(fh), report), chunk_size)


def _checked(blocks: Iterator[tuple[int, int, bytes]], report: Report) -> Iterator[bytes]:
    """Each block's raw bytes, its lz4-java checksum verified; one warning per part is enough."""
    intact = True
    for offset, checksum, block in blocks:
        if intact and xxh32_low28(block, _LZ4_SEED) != checksum:
            report(f"lz4 block at byte {offset} fails its checksum; its lines may be damaged", True)
            intact = False
        yield block


def _lz4_blocks(fh: BinaryIO) -> Iterator[tuple[int, int, bytes]]:
    """(offset, stored checksum low 28 bits, raw bytes) per non-empty block."""
    read = fh.read
    offset = 0
    ended = False
    while header := read(_LZ4_HEADER.size):
        if len(header) < _LZ4_HEADER.size:
            raise _ends_early(offset)
        magic, token, compressed_length, raw_length, checksum = _LZ4_HEADER.unpack(header)
        method = token & 0xF0
        if (
            magic != b"LZ4Block"
            or method not in (_LZ4_RAW, _LZ4_COMPRESSED)
            or not 0 <= raw_length <= 1 << (10 + (token & 0x0F))  # the block size the level encodes
            or compressed_length < 0
            or (method == _LZ4_RAW and compressed_length != raw_length)
        ):
            raise StreamProblem(f"corrupt lz4 block header at byte {offset}")
        if raw_length == 0:
            ended = True  # end of one stream; lz4-java reads on if another follows
            offset += _LZ4_HEADER.size
            continue
        ended = False
        body = read(compressed_length)
        if len(body) < compressed_length:
            raise _ends_early(offset)
        if method == _LZ4_COMPRESSED:
            try:
                body = lz4.block.decompress(body, uncompressed_size=raw_length)
            except lz4.block.LZ4BlockError:
                raise StreamProblem(f"corrupt lz4 block at byte {offset}") from None
            if len(body) != raw_length:
                raise StreamProblem(f"corrupt lz4 block at byte {offset}")
        yield offset, checksum & 0xFFFFFFF, body
        offset += _LZ4_HEADER.size + compressed_length
    if offset and not ended:
        raise StreamProblem(f"compressed stream ends early (no end-of-stream block); read up to byte {offset}")


def _coalesced(blocks: Iterator[bytes], chunk_size: int) -> Iterator[bytes]:
    """Small decoded blocks joined into chunks of about ``chunk_size``; on a problem, what came before it first."""
    pending: list[bytes] = []
    size = 0
    try:
        for block in blocks:
            pending.append(block)
            size += len(block)
            if size >= chunk_size:
                yield b"".join(pending)
                pending, size = [], 0
    except StreamProblem:
        if pending:
            yield b"".join(pending)
        raise
    if pending:
        yield b"".join(pending)


_SNAPPY_HEADER: Final = b"\x82SNAPPY\x00"
_SNAPPY_HEADER_SIZE: Final = 16
_SNAPPY_MAX_BLOCK: Final = 1 << 28  # far above any real block; a larger length is garbage


def _snappy(fh: BinaryIO, report: Report, chunk_size: int) -> Iterator[bytes]:
    return _coalesced(_snappy_blocks(fh), chunk_size)


def _snappy_blocks(fh: BinaryIO) -> Iterator[bytes]:
    read = fh.read
    header = read(_SNAPPY_HEADER_SIZE)
    if not header.startswith(_SNAPPY_HEADER[: len(header)]):
        raise StreamProblem("not a snappy-java stream (bad header)")
    if len(header) < _SNAPPY_HEADER_SIZE:
        raise StreamProblem("compressed stream ends early; read up to byte 0")
    offset = _SNAPPY_HEADER_SIZE
    while length_bytes := read(4):
        if length_bytes == _SNAPPY_HEADER[:4]:  # a concatenated stream starts with its own header
            if len(read(_SNAPPY_HEADER_SIZE - 4)) < _SNAPPY_HEADER_SIZE - 4:
                raise _ends_early(offset)
            offset += _SNAPPY_HEADER_SIZE
            continue
        if len(length_bytes) < 4:
            raise _ends_early(offset)
        length = int.from_bytes(length_bytes, "big")
        if not 0 < length <= _SNAPPY_MAX_BLOCK:
            raise StreamProblem(f"corrupt snappy block length at byte {offset}")
        body = read(length)
        if len(body) < length:
            raise _ends_early(offset)
        try:
            yield bytes(cramjam.snappy.decompress_raw(body))
        except cramjam.DecompressionError:
            raise StreamProblem(f"corrupt snappy block at byte {offset}") from None
        offset += 4 + length


_LZF_LENGTHS: Final = struct.Struct(">HH")


def _lzf(fh: BinaryIO, report: Report, chunk_size: int) -> Iterator[bytes]:
    return _coalesced(_lzf_blocks(fh), chunk_size)


def _lzf_blocks(fh: BinaryIO) -> Iterator[bytes]:
    read = fh.read
    offset = 0
    while start := read(3):
        if len(start) < 3:
            raise _ends_early(offset)
        if start[:2] != b"ZV" or start[2] not in (0, 1):
            raise StreamProblem(f"corrupt lzf chunk header at byte {offset}")
        if start[2] == 0:  # stored as is
            length_bytes = read(2)
            if len(length_bytes) < 2:
                raise _ends_early(offset)
            length = int.from_bytes(length_bytes, "big")
            block = read(length)
            if len(block) < length:
                raise _ends_early(offset)
            offset += 5 + length
        else:
            lengths = read(4)
            if len(lengths) < 4:
                raise _ends_early(offset)
            length, raw_length = _LZF_LENGTHS.unpack(lengths)
            body = read(length)
            if len(body) < length:
                raise _ends_early(offset)
            try:
                decoded = lzf.decompress(body, raw_length) if raw_length else b""
            except ValueError:
                decoded = None
            if decoded is None or len(decoded) != raw_length:
                raise StreamProblem(f"corrupt lzf chunk at byte {offset}")
            block = decoded
            offset += 7 + length
        yield block


def _gzip(fh: BinaryIO, report: Report, chunk_size: int) -> Iterator[bytes]:
    return _salvaging(_gzip_chunks, zlib.error, "gzip", fh, report, chunk_size)


def _gzip_chunks(fh: BinaryIO, report: Report, chunk_size: int) -> Iterator[bytes]:
    decompressor = zlib.decompressobj(wbits=31)
    member_started = False
    consumed = 0
    while data := fh.read(chunk_size):
        consumed += len(data)
        while data:
            member_started = True
            # max_length bounds the output: a small compressed input can expand enormously.
            out = decompressor.decompress(data, chunk_size)
            data = decompressor.unconsumed_tail
            if out:
                yield out
            while not data and len(out) == chunk_size and not decompressor.eof:
                out = decompressor.decompress(b"", chunk_size)
                data = decompressor.unconsumed_tail
                if out:
                    yield out
            if decompressor.eof:  # end of one gzip member; another may follow
                data = decompressor.unused_data
                member_started = False
                decompressor = zlib.decompressobj(wbits=31)
                if data and not data.startswith(b"\x1f\x8b"):
                    if data.strip(b"\x00"):
                        report(f"ignored data after the gzip stream at byte {consumed - len(data)}", True)
                    return
    if member_started:
        raise _ends_early(consumed)


_DECODERS: Final[dict[str | None, Callable[[BinaryIO, Report, int], Iterator[bytes]]]] = {
    None: _plain,
    ZSTD: _zstd,
    LZ4: _lz4,
    SNAPPY: _snappy,
    LZF: _lzf,
    GZIP: _gzip,
}


def xxh32_low28(block: bytes, seed: int) -> int:
    """Low 28 bits of xxHash32 of a block (what lz4-java compares)."""
    return int(xxhash.xxh32_intdigest(block, seed)) & 0xFFFFFFF
