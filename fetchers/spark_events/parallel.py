"""Feeding an ``AppBuilder`` a whole log: serially, or on two cores for a big log.

On two cores a forked worker process reads the same log on its own (decompressing it too: cheaper than piping
the text across) and digests (``digest_raw``: splits, decodes the task lines) the chunks it owns, five in
eight; this process reads every chunk, digests the others and feeds every digest to the builder in chunk
order, so the app is the one the serial path builds: ``AppBuilder.feed_digest`` does not care where a digest
was made. A worker digest names its chunk (index, decoded size); a mismatch, a dead worker or a closed pipe
and this process digests every chunk from there on itself. The worker never outlives ``feed_parallel``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

from fetchers.budgets import ReadBudgets
from fetchers.eventlog import EventLog, LineStream, RawChunk
from fetchers.spark_events.builder import AppBuilder
from fetchers.spark_events.digest import ChunkDigest, digest_raw

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

# Below this much log text a second process costs more than it saves. Compressed parts count at a typical
# event-log compression ratio; tests lower it to force the parallel path on small logs.
PARALLEL_MIN_BYTES: int = 64 << 20
_COMPRESSION_RATIO: Final = 10
# The worker digests this share of the chunks, spread evenly: this process has the other events, the merging
# and finish() on top of its own share (measured on the 1M-task benchmark log).
_WORKER_CHUNKS: Final = 5
_OUT_OF: Final = 8
_PIPE_BYTES: Final = 1 << 20  # room for a few dozen batches, so the worker can run ahead
_F_SETPIPE_SZ: Final = 1031  # Linux fcntl


# Called after each chunk is fed (budgets: the wall clock, the line count); may stop the stream or raise.
ChunkCheck = Callable[[LineStream], None]


def feed_serial(
    builder: AppBuilder, chunks: Iterable[RawChunk], stream: LineStream | None = None, check: ChunkCheck | None = None
) -> None:
    """Every chunk digested and fed; ``check(stream)`` after each one when both are given."""
    for chunk in chunks:
        builder.feed_digest(digest_raw(chunk))
        if check is not None and stream is not None:
            check(stream)


def parallel_worthwhile(log: EventLog) -> bool:
    """Two cores or more, a finished log (a growing one could differ between the two readers), big enough."""
    if (os.cpu_count() or 1) < 2 or log.in_progress:
        return False
    size = 0
    for part in log.parts:
        try:
            size += part.path.stat().st_size * (1 if part.codec is None else _COMPRESSION_RATIO)
        except OSError:
            return False
    return size >= PARALLEL_MIN_BYTES


def feed_parallel(
    builder: AppBuilder,
    log: EventLog,
    chunk_size: int,
    budgets: ReadBudgets | None = None,
    check: ChunkCheck | None = None,
) -> LineStream:
    """Like ``feed_serial`` over ``LineStream(log)``, with a worker process digesting most chunks.

    Returns the (finished) stream read here, for its warnings and byte count.
    """
    worker: _Worker | None = None
    stream = LineStream(log, chunk_size, budgets)
    try:
        worker = _start_worker(log, chunk_size, stream.budgets)
        for index, chunk in enumerate(stream.raw_chunks()):
            if worker is not None and _worker_owns(index):
                digest = worker.digest_for(index, len(chunk.data))
                if digest is not None:
                    builder.feed_digest(digest)
                    if check is not None:
                        check(stream)
                    continue
                worker.stop()
                worker = None
            builder.feed_digest(digest_raw(chunk))
            if check is not None:
                check(stream)
    finally:
        stream.close()
        if worker is not None:
            worker.stop()
    return stream


def _worker_owns(index: int) -> bool:
    return (index + 1) * _WORKER_CHUNKS // _OUT_OF > index * _WORKER_CHUNKS // _OUT_OF


def _start_worker(log: EventLog, chunk_size: int, budgets: ReadBudgets) -> _Worker | None:
    """None when no process can be started here (fork refused, a daemonic process, a sandbox): read serially."""
    try:
        return _Worker(log, chunk_size, budgets)
    except Exception:  # any failure to start only costs the speed-up
        return None


class _Worker:
    def __init__(self, log: EventLog, chunk_size: int, budgets: ReadBudgets) -> None:
        import multiprocessing  # only for a big log: a small one starts without it (issue 15)

        context = multiprocessing.get_context("fork")
        self.receiver, sender = context.Pipe(duplex=False)
        with contextlib.suppress(OSError):
            fcntl.fcntl(sender.fileno(), _F_SETPIPE_SZ, _PIPE_BYTES)
        self.process = context.Process(
            target=_digest_owned_chunks,
            args=(log, chunk_size, budgets, sender),
            name="hindsight-chunk-digester",
            daemon=True,
        )
        try:
            self.process.start()
        except BaseException:
            self.receiver.close()
            raise
        finally:
            sender.close()  # the worker's copy stays open: the pipe closes when the worker ends

    def digest_for(self, index: int, chunk_bytes: int) -> ChunkDigest | None:
        """The worker's digest of this chunk, or None when the worker cannot supply it."""
        try:
            message = self.receiver.recv()
        except (EOFError, OSError):
            return None
        if not isinstance(message, tuple) or message[:2] != (index, chunk_bytes):
            return None
        digest = message[2]
        return digest if isinstance(digest, ChunkDigest) else None

    def stop(self) -> None:
        self.receiver.close()
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


def _digest_owned_chunks(log: EventLog, chunk_size: int, budgets: ReadBudgets, sender: Connection) -> None:
    """The worker: (chunk index, chunk size, digest) per owned chunk, then the pipe closes. Under the same byte
    budgets as the reader, so its chunks are the reader's."""
    try:
        with LineStream(log, chunk_size, budgets) as stream:
            for index, chunk in enumerate(stream.raw_chunks()):
                if _worker_owns(index):
                    sender.send((index, len(chunk.data), digest_raw(chunk)))
    except BaseException:  # noqa: S110 - the reader sees the pipe close and digests the rest itself
        pass
    finally:
        sender.close()
