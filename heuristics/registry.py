"""A strict registry of heuristic classes: duplicate codes raise, and it is frozen once loaded."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, TypeVar

from heuristics.base import HELP_SECTIONS, Heuristic, HeuristicConfig

H = TypeVar("H", bound=type[Heuristic[Any]])
CODE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")


class RegistryError(ValueError):
    pass


class Registry:
    def __init__(self, classes: tuple[type[Heuristic[Any]], ...] = ()) -> None:
        self._classes: dict[str, type[Heuristic[Any]]] = {}
        self._frozen = False
        for cls in classes:
            self.add(cls)

    def add(self, cls: type[Heuristic[Any]], *, require_help_sections: tuple[str, ...] = ()) -> type[Heuristic[Any]]:
        if self._frozen:
            raise RegistryError(f"cannot register {cls.__qualname__}: the heuristic registry is frozen")
        if not (isinstance(cls, type) and issubclass(cls, Heuristic)):
            raise RegistryError(f"{cls!r} is not a Heuristic subclass")
        if not CODE.match(cls.code or ""):
            raise RegistryError(f"{cls.__qualname__} has no valid code (dotted lowercase, e.g. 'spark.task_skew')")
        if cls.code in self._classes:
            raise RegistryError(
                f"duplicate heuristic code {cls.code!r}: {cls.__qualname__} and {self._classes[cls.code].__qualname__}"
            )
        if not cls.name or not cls.app_types:
            raise RegistryError(f"{cls.code}: a heuristic needs a name and app types")
        if not (isinstance(cls.Config, type) and issubclass(cls.Config, HeuristicConfig)):
            raise RegistryError(f"{cls.code}: Config must subclass heuristics.HeuristicConfig")
        doc = cls.__doc__ or ""
        missing = [s for s in require_help_sections if f"{s}:" not in doc]
        if not doc.strip() or missing:
            raise RegistryError(f"{cls.code}: the docstring (its help page) lacks {missing or 'a summary'}")
        self._classes[cls.code] = cls
        return cls

    def freeze(self) -> None:
        self._frozen = True

    @property
    def frozen(self) -> bool:
        return self._frozen

    def get(self, code: str) -> type[Heuristic[Any]] | None:
        return self._classes.get(code)

    def __contains__(self, code: object) -> bool:
        return code in self._classes

    def __iter__(self) -> Iterator[type[Heuristic[Any]]]:
        return iter(self._classes.values())

    def __len__(self) -> int:
        return len(self._classes)

    def copy(self) -> Registry:
        return Registry(tuple(self._classes.values()))


BUILTIN_HELP_SECTIONS = (*HELP_SECTIONS, "Differences from Dr. Elephant")
BUILTINS = Registry()


def register(cls: H) -> H:
    """Class decorator for the built-in heuristics."""
    BUILTINS.add(cls, require_help_sections=BUILTIN_HELP_SECTIONS)
    return cls
