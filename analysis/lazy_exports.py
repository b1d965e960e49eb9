"""Package names that import their module on first use (PEP 562), for the research libraries' ``__init__``.

The analysis pipeline imports one light submodule of ``analysis.hosts`` and ``analysis.stages`` for every
app; their packages still offer every name at the top, but the scipy- and pandas-heavy modules load only when one
of their names is first asked for.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``modules`` maps each lazy name to the module that defines it."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # asked once: later lookups find it without this function
        return value

    return __getattr__
