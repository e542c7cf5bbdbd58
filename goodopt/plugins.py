"""Methods and policies from other packages, found through entry points.

A package adds an allocation method by declaring, in its ``pyproject.toml``::

    [project.entry-points."goodopt.methods"]
    mine = "mypkg.solver:METHOD"       # a goodopt.solvers.api.Method, or a function returning one

and a simulation policy by::

    [project.entry-points."goodopt.policies"]
    lottery = "mypkg.policy:Lottery"   # a goodopt.sim.policies.Policy subclass

Once the package is installed, every command honours the name: ``goodopt
solve --method mine``, ``compare``, ``sweep``, the ``--help`` lists and
``goodopt options``. A script can register one for its own process with
:func:`goodopt.solvers.api.register_method` or
:func:`goodopt.sim.policies.register_policy`. A plug-in that fails to load is
reported as a warning naming it; goodopt's own methods keep working.
"""

from __future__ import annotations

import logging
from _collections_abc import dict_items, dict_keys, dict_values
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Any, TypeVar

log = logging.getLogger(__name__)

#: The entry-point groups goodopt reads.
METHOD_GROUP = "goodopt.methods"
POLICY_GROUP = "goodopt.policies"


def load_plugins(group: str, register: Callable[[str, object], None]) -> None:
    """Hand every entry point of ``group`` to ``register(name, loaded object)``; a failure is logged, not raised."""
    for ep in entry_points(group=group):
        try:
            register(ep.name, ep.load())
        except Exception as exc:  # noqa: BLE001 -- someone else's package must not break goodopt
            log.warning("plug-in %r of %s (%s) was not loaded: %s: %s", ep.name, group, ep.value,
                        type(exc).__name__, exc)


V = TypeVar("V")


class PluginRegistry(dict[str, V]):
    """A name -> entry dict that adds the plug-ins of an entry-point group (through ``register``) the first time
    it is read, so that a plug-in may import goodopt freely."""

    def __init__(self, group: str, register: Callable[[str, Any], None], entries: Any = ()) -> None:
        super().__init__(entries)
        self._group, self._register, self._loaded = group, register, False

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            load_plugins(self._group, self._register)

    def __getitem__(self, key: str) -> V:
        self._load()
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._load()
        return super().__contains__(key)

    def __iter__(self) -> Iterator[str]:
        self._load()
        return super().__iter__()

    def __len__(self) -> int:
        self._load()
        return super().__len__()

    def get(self, key: str, default: Any = None) -> Any:  # Any: dict.get's overloads (V, or the default's type)
        self._load()
        return super().get(key, default)

    def keys(self) -> dict_keys[str, V]:
        self._load()
        return super().keys()

    def values(self) -> dict_values[str, V]:
        self._load()
        return super().values()

    def items(self) -> dict_items[str, V]:
        self._load()
        return super().items()
