"""Load a script that is not a package module (a benchmark generator, the sample generator scripts/samplegen) by
its path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_script(path: Path, name: str) -> ModuleType:
    """The module at ``path``, registered in sys.modules as ``name`` (dataclasses look their module up there).

    A package's ``__init__.py`` loads as that package, so its modules import each other as ``name.<module>``.
    """
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
