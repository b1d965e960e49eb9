"""How heuristics compute the values of their changes (``heuristics.Change``): one place for every formula that
more than one heuristic uses, for Spark and MapReduce alike. Sizes are written by ``appmodel.formatting``'s
``setting_*`` helpers, as users type them; each heuristic's "What to change" help section says which formula it
uses and why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Final

from appmodel.units import GIB, MIB, parse_size_or_none, round_up
from heuristics.base import Change

# Memory is suggested in steps a cluster allocates in: YARN's default minimum allocation is 512 MiB (and
# Kubernetes has no finer useful grain for a JVM); above 8 GiB whole GiB, since half a GiB is noise there.
SMALL_MEMORY_STEP: Final = 512 * MIB
LARGE_MEMORY_STEP: Final = GIB
LARGE_MEMORY: Final = 8 * GIB


def memory_step(size: float) -> int:
    return SMALL_MEMORY_STEP if size <= LARGE_MEMORY else LARGE_MEMORY_STEP


def suggested_memory(needed: float, *, at_least: float = 0, above: float | None = None) -> int:
    """A memory size to suggest: ``needed`` rounded up to the allocation step, never below ``at_least`` (what the
    app was seen to use) and, when ``above`` is given (tasks died of memory at that size), strictly above it."""
    value = max(needed, at_least, 1)
    if above is not None:
        value = max(value, above + 1)
    return round_up(value, memory_step(value))


def partitions_for(data_bytes: float, target_bytes: float) -> int:
    """How many partitions hold ``data_bytes`` at ``target_bytes`` each: ceil(data / target), at least 1."""
    if target_bytes <= 0:
        return 1
    return max(1, math.ceil(data_bytes / target_bytes))


# A Java/Scala/Python exception class in a failure text: a dotted name ending in Exception/Error/Failure, or a
# Python "ValueError:" at a line start. Spark's own reasons without one (FetchFailed(...), ExecutorLostFailure
# (...), TaskKilled) are named by their first word.
_QUALIFIED = re.compile(r"\b((?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Failure))\b")
_PYTHON = re.compile(r"^([A-Z][\w.]*(?:Exception|Error)):", re.MULTILINE)
_FIRST_WORD = re.compile(r"^\s*([A-Za-z][\w.$]*)")


def failure_kind(reason: str) -> str:
    """The exception class (or Spark's failure kind) a failure text reports, for naming what to fix.

    A Python error inside a PythonException names the Python class (the real cause); otherwise the first
    qualified Java class; otherwise the text's first word; "unknown" for an empty text.
    """
    text = reason[:20_000]
    if "PythonException" in text or "Traceback (most recent call last)" in text:
        python = _PYTHON.findall(text)
        if python:
            return str(python[-1])
    qualified = _QUALIFIED.search(text)
    if qualified:
        return qualified.group(1)
    first = _FIRST_WORD.match(text)
    return first.group(1)[:80] if first else "unknown"


# ---- JVM options ------------------------------------------------------------------------------------------------

_XMX = re.compile(r"-Xmx(\d+[kKmMgGtT]?)\b")

# Hadoop's mapreduce.job.heap.memory-mb.ratio default: the heap is 80% of the container, the rest is for the
# JVM's own memory (metaspace, threads, direct buffers).
HEAP_TO_CONTAINER: Final = 0.8


def xmx_bytes(java_opts: str | None) -> int | None:
    """The heap size an -Xmx in JVM options sets (the last one wins, as the JVM reads them); None if none."""
    found = _XMX.findall(java_opts or "")
    return parse_size_or_none(found[-1], "b") if found else None


def with_xmx(java_opts: str | None, heap_bytes: int) -> str:
    """``java_opts`` with its -Xmx set to ``heap_bytes`` (whole MiB, rounded up), other options kept."""
    flag = f"-Xmx{max(1, math.ceil(heap_bytes / MIB))}m"
    opts = (java_opts or "").strip()
    if _XMX.search(opts):
        return _XMX.sub(flag, opts)
    return f"{opts} {flag}".strip()


def advice_with(lead: str, changes: Sequence[Change]) -> str:
    """The one-line advice that agrees with the changes: ``lead``, then each change ("set X=Y" for a setting,
    "<action>: <value>" otherwise); ``lead`` ends the sentence alone when there is no change."""
    if not changes:
        return f"{lead}."
    parts = [f"{c.property}={c.value}" if " " not in c.property else f"{c.property} ({c.value})" for c in changes[:3]]
    return f"{lead}: {'; '.join(parts)}."
