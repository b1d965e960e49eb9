"""Reading Spark configuration values: master URLs. Size strings are :mod:`appmodel.units`'s."""

from __future__ import annotations

import re
from typing import Final

_LOCAL_CORES: Final = re.compile(r"local\[(\d+)")


def is_local_master(master: str) -> bool:
    """``local``, ``local[N]``, ``local[*]``, ``local[N,F]``: one JVM. Not ``local-cluster``, which forks executors."""
    return master == "local" or master.startswith("local[")


def local_cores(master: str) -> int:
    """Task slots of a local master (0 for ``local[*]``: the machine's cores, unknown from the log)."""
    if master == "local":
        return 1
    match = _LOCAL_CORES.match(master)
    return int(match.group(1)) if match else 0
