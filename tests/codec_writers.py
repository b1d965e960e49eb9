"""Writers for the stream formats Spark writes event logs in, mirroring the Java writers it uses, to make samples of
any content (the codec tests and the fuzz suite)."""

from __future__ import annotations

import gzip
import struct
from collections.abc import Callable

import cramjam
import lz4.block
import lzf
import zstandard

from fetchers.eventlog.codecs import xxh32_low28


def lz4_java_stream(data: bytes, block_size: int = 1 << 15) -> bytes:
    """lz4-java LZ4BlockOutputStream: LZ4Block + token + LE lengths + 28-bit xxhash32, empty end block."""
    level = max(0, (block_size - 1).bit_length() - 10)
    out = bytearray()
    for start in range(0, len(data), block_size):
        block = data[start : start + block_size]
        packed = lz4.block.compress(block, store_size=False)
        method, body = (0x20, packed) if len(packed) < len(block) else (0x10, block)
        checksum = xxh32_low28(block, 0x9747B28C)
        out += struct.pack("<8sBiii", b"LZ4Block", method | level, len(body), len(block), checksum) + body
    out += struct.pack("<8sBiii", b"LZ4Block", 0x10 | level, 0, 0, 0)
    return bytes(out)


def snappy_java_stream(data: bytes, block_size: int = 1 << 15) -> bytes:
    """snappy-java SnappyOutputStream: magic header + BE version 1 + BE compat 1, then BE length + raw block."""
    out = bytearray(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
    for start in range(0, len(data), block_size):
        packed = bytes(cramjam.snappy.compress_raw(data[start : start + block_size]))
        out += struct.pack(">i", len(packed)) + packed
    return bytes(out)


def lzf_chunks(data: bytes, chunk_size: int = 0xFFFF) -> bytes:
    """compress-lzf LZFOutputStream chunks: ZV 1 + BE clen + BE len + lzf data, or ZV 0 + BE len + raw bytes."""
    out = bytearray()
    for start in range(0, len(data), chunk_size):
        chunk = data[start : start + chunk_size]
        packed = lzf.compress(chunk)
        if packed is None:  # incompressible: compress-lzf stores it as is
            out += b"ZV\x00" + struct.pack(">H", len(chunk)) + chunk
        else:
            out += b"ZV\x01" + struct.pack(">HH", len(packed), len(chunk)) + packed
    return bytes(out)


ENCODERS: dict[str, Callable[[bytes], bytes]] = {
    "zstd": lambda data: zstandard.ZstdCompressor().compress(data),
    "lz4": lz4_java_stream,
    "snappy": snappy_java_stream,
    "lzf": lzf_chunks,
    "gz": lambda data: gzip.compress(data, mtime=0),
}
