"""Lines of an event log across all its parts, streamed in bounded chunks.

Format facts relied on: Spark writes one JSON event per line, ``\\n``-terminated, every part of a rolling log
ending on a line boundary (refdata README section 6 facts 1 and 3). A log cut short (in progress, crashed
writer) may end in a torn line: it is still yielded, and the JSON parser counts it malformed.
"""

from __future__ import annotations

import io
import os
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from itertools import chain
from types import TracebackType
from typing import Self

from fetchers.budgets import (
    MIN_DECOMPRESSED_ALLOWANCE,
    SETTINGS,
    ReadBudgets,
    default_budgets,
    over_budget_warning,
)
from fetchers.eventlog.codecs import CHUNK_SIZE, HEAD_SIZE, StreamProblem, UnknownFormat, decode, detect_codec
from fetchers.eventlog.layout import (
    DATABRICKS,
    ROLLING,
    EventLog,
    EventLogError,
    EventLogPart,
    databricks_listing,
    in_progress_reason,
    open_regular,
    rolling_listing,
)


class LineStream:
    """Iterate -> each line as bytes without its newline, across all parts in order. Single pass.

    Blank lines are skipped. Problems never raise from iteration: they end up in ``warnings`` (one line each,
    starting with the file name) and set ``partial`` when events may be missing.

    ``chunks()`` gives the same lines a list per decoded chunk, ``raw_chunks()`` each chunk unsplit (a
    ``RawChunk``), for readers that find lines in place; all three share the one pass.

    ``warnings`` and ``partial`` are final once iteration ends. ``bytes_read`` counts decompressed bytes
    (newlines included), per chunk as it is read, so it runs at most one chunk ahead of the lines yielded.

    ``budgets`` (``fetchers.budgets``; default: from the environment) bound the decompressed bytes, per part
    relative to its compressed size and per log, and the length of a line: a longer line is streamed past without
    being held, counted in ``long_lines``. Over a byte budget the read stops (``partial``, a warning naming it).
    """

    def __init__(self, log: EventLog, chunk_size: int = CHUNK_SIZE, budgets: ReadBudgets | None = None) -> None:
        self.log = log
        self.warnings: list[str] = []
        self.partial = False
        self.bytes_read = 0
        self.long_lines = 0  # lines over budgets.max_line_bytes, skipped: malformed lines the parser never saw
        self.budgets = budgets or default_budgets()
        self._stopped = False
        self._chunk_size = chunk_size
        self._check_layout()
        self._raw = self._generate()
        self._batches: Iterator[list[bytes]] = map(RawChunk.lines, self._raw)
        # Lines are produced a chunk at a time and flattened in C: no Python frame runs per line.
        self._lines: Iterator[bytes] = chain.from_iterable(self._batches)

    def __iter__(self) -> Iterator[bytes]:
        return self._lines

    def chunks(self) -> Iterator[list[bytes]]:
        """The same lines a decoded chunk at a time (same single pass: use one of these three ways only)."""
        return self._batches

    def raw_chunks(self) -> Iterator[RawChunk]:
        """The same lines a decoded chunk at a time, not split yet."""
        return self._raw

    def close(self) -> None:
        self._raw.close()
        self._lines = iter(())

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def _report(self, message: str, partial: bool) -> None:
        self.warnings.append(message)
        self.partial = self.partial or partial

    def _check_layout(self) -> None:
        log = self.log
        if log.in_progress:
            self._report(f"{log.path.name}: log still in progress ({in_progress_reason(log)}); it may end early", True)
        if log.layout in (ROLLING, DATABRICKS):  # listed again: find_event_logs keeps only the usable parts
            try:
                problems = rolling_listing(log.path)[2] if log.layout == ROLLING else databricks_listing(log.path)[1]
            except EventLogError as error:
                problems = [str(error)]
            for problem in problems:
                self._report(problem, True)
        readable = [part for part in log.parts if _readable(part)]
        if not readable:
            raise EventLogError(f"{log.path}: cannot read any part of the event log")

    def _generate(self) -> Generator[RawChunk, None, None]:
        for part in self.log.parts:
            yield from self._part_lines(part)
            if self._stopped:
                return

    @property
    def stopped(self) -> bool:
        return self._stopped

    def stop(self, warning: str) -> None:
        """End the read at the next chunk: a budget was exceeded (the warning says which)."""
        self._report(warning, True)
        self._stopped = True

    def _part_lines(self, part: EventLogPart) -> Iterator[RawChunk]:
        """Batches of lines of one part, one batch per decoded chunk."""
        name = part.path.name
        budgets = self.budgets
        try:
            fh = open_regular(part.path, buffering=max(self._chunk_size, io.DEFAULT_BUFFER_SIZE))
        except OSError as error:
            self._report(f"{name}: cannot read ({error.strerror or error}); part skipped", True)
            return
        compressed_size = os.fstat(fh.fileno()).st_size
        max_line = budgets.max_line_bytes
        part_bytes = 0
        pending: list[bytes] = []  # pieces of a line spanning chunks
        pending_size = 0
        oversized = False
        try:
            try:
                codec, warning = detect_codec(name, fh.read(HEAD_SIZE))
            except UnknownFormat as error:
                self._report(f"{name}: not an event log ({error}); part skipped", True)
                return
            if warning:
                self._report(f"{name}: {warning}", False)
            fh.seek(0)

            def report(message: str, partial: bool) -> None:
                self._report(f"{name}: {message}", partial)

            # Decompressed bytes this part may give, relative to its compressed size: a bomb stops early.
            allowance = None if codec is None else max(budgets.max_ratio * compressed_size, MIN_DECOMPRESSED_ALLOWANCE)
            for chunk in decode(fh, codec, report, self._chunk_size):
                self.bytes_read += len(chunk)
                part_bytes += len(chunk)
                if allowance is not None and part_bytes > allowance:
                    ratio = f"more than {budgets.max_ratio} times its compressed size ({compressed_size:,} bytes)"
                    self.stop(f"{name}: " + over_budget_warning(f"decompresses to {ratio}", "max_ratio"))
                elif self.bytes_read > budgets.max_bytes:
                    total = f"the log decompresses to more than {budgets.max_bytes:,} bytes"
                    self.stop(f"{name}: " + over_budget_warning(total, "max_bytes"))
                if self._stopped:
                    pending, oversized = [], True  # what was read of the last line is not a line
                    break
                newline = chunk.rfind(b"\n")
                if newline < 0:  # no newline in the chunk: the line goes on
                    if oversized:
                        continue
                    pending_size += len(chunk)
                    if pending_size > max_line:
                        self._long_line(name)
                        oversized, pending, pending_size = True, [], 0
                    else:
                        pending.append(chunk)
                    continue
                first = chunk.find(b"\n")
                if pending and pending_size + first > max_line:
                    self._long_line(name)
                    oversized, pending = True, []
                if oversized:  # the end of a line too long to keep: dropped
                    yield RawChunk(None, chunk, first + 1, newline + 1)
                elif pending:
                    pending.append(chunk[:first])
                    line = b"".join(pending)
                    pending = []  # the pieces are freed before the line is parsed: a long line is held once
                    yield RawChunk(line, chunk, first + 1, newline + 1)
                    del line
                else:
                    yield RawChunk(None, chunk, 0, newline + 1)
                last = chunk[newline + 1 :]
                pending, pending_size, oversized = ([last], len(last), False) if last else ([], 0, False)
        except StreamProblem as problem:
            self._report(f"{name}: {problem}", True)
        except OSError as error:
            self._report(f"{name}: read failed ({error.strerror or error}); rest of the part skipped", True)
        except Exception as error:  # a decoder library failing on hostile bytes must not abort the whole read
            self._report(f"{name}: cannot decode ({type(error).__name__}: {error}); rest of the part skipped", True)
        finally:
            fh.close()
        if pending and not oversized:
            yield RawChunk(b"".join(pending), b"", 0, 0)  # torn last line: the parser decides whether it is usable

    def _long_line(self, name: str) -> None:
        """A line over the budget, skipped: counted, and one warning per log."""
        self.long_lines += 1
        if self.long_lines == 1:
            limit = self.budgets.max_line_bytes
            self._report(
                f"{name}: a line longer than {limit:,} bytes skipped as malformed (raise {SETTINGS['max_line_bytes']} "
                "to read such lines)",
                True,
            )


@dataclass(frozen=True, slots=True)
class RawChunk:
    """Complete lines as decoded, not split yet: ``first`` (a line begun in earlier chunks, if any), then the
    newline-terminated lines of ``data[start:end]``. Empty lines are not lines."""

    first: bytes | None
    data: bytes
    start: int  # 0, or just past the first newline when that line is ``first`` or was dropped
    end: int  # just past the last newline

    def lines(self) -> list[bytes]:
        pieces = self.data.split(b"\n")
        del pieces[-1]  # after the last newline: starts the next chunk's first line
        if self.start:
            del pieces[0]
        if self.first is not None:
            pieces.insert(0, self.first)
        return pieces if all(pieces) else [line for line in pieces if line]


def open_lines(log: EventLog, *, chunk_size: int = CHUNK_SIZE, budgets: ReadBudgets | None = None) -> LineStream:
    """A line stream over ``log``; EventLogError (one line) if none of its files can be opened."""
    return LineStream(log, chunk_size, budgets)


def _readable(part: EventLogPart) -> bool:
    try:
        with open_regular(part.path):
            return True
    except OSError:
        return False
