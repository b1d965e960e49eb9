"""Reading Spark configuration values: size strings and master URLs. Shared by metrics and heuristics."""

from __future__ import annotations

import math
import re
from typing import Final

_SIZE: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_SIZE_UNITS: Final = {
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "p": 1 << 50,
    "pb": 1 << 50,
}
_LOCAL_CORES: Final = re.compile(r"local\[(\d+)")


def parse_size(text: str, default_unit: str = "b") -> int:
    """Bytes in a Spark size string ("4g", "512m", "1t", "2048"); a bare number is in ``default_unit``.

    Spark reads memory settings such as ``spark.executor.memory`` with a default unit of MiB ("m"); pass it.
    Raises ValueError on anything else.
    """
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r}")
    number, unit = match.groups()
    multiplier = _SIZE_UNITS.get((unit or default_unit).lower())
    if multiplier is None:
        raise ValueError(f"unknown size unit in {text!r}")
    value = float(number) * multiplier
    if not math.isfinite(value):
        raise ValueError(f"not a finite size: {text!r}")
    return int(value)


def is_local_master(master: str) -> bool:
    """``local``, ``local[N]``, ``local[*]``, ``local[N,F]``: one JVM. Not ``local-cluster``, which forks executors."""
    return master == "local" or master.startswith("local[")


def local_cores(master: str) -> int:
    """Task slots of a local master (0 for ``local[*]``: the machine's cores, unknown from the log)."""
    if master == "local":
        return 1
    match = _LOCAL_CORES.match(master)
    return int(match.group(1)) if match else 0
