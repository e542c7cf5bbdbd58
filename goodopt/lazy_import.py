"""A module imported when first used: heavy libraries stay out of the start-up of commands that never use them.

pyomo takes about 0.3 s of CPU to import, and ``goodopt solve --method greedy``
or ``goodopt info`` never builds a pyomo model; the exact method's default route
feeds HiGHS from arrays. The formulation modules name pyomo through a
:class:`LazyModule`, so it is imported at the first model they build.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands for module ``name``; the first attribute read imports it (once) and reads from it."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}{' (imported)' if self._module is not None else ''}>"
