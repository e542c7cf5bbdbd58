"""The on-disk cache of goodopt's compiled kernels, kept fresh across modules.

numba keys a cached compiled function on its own source file only. A kernel that calls a kernel of another
module compiles the callee into itself (``solvers/ga_breeding.py``'s ``children_rows`` holds
``solvers/ga_kernels.py``'s ``repair_rows``), so after an edit of the callee's file alone the caller's cache
entry stays valid and keeps running the old callee, silently, until the caller's file changes or the cache is
cleared. A fresh clone or install is not affected (no cache yet, or every file new); a checkout where someone
edits a kernel is.

:func:`depends_on` names the other source files a module's kernels compile in; the module calls it before its
first ``njit(cache=True)`` decorator. Their contents then join the module's own source stamp, so that a change
to any of them invalidates its cache entries as a change to the module itself does. Modules that call it
nowhere are cached as numba caches them.

This plugs cache locators (the three numba consults for a source file: ``NUMBA_CACHE_DIR``, the source's
``__pycache__``, the user's cache folder) into numba's list, an internal of :mod:`numba.core.caching`; where a
numba release has no such list, goodopt says so once in the log and its kernels are cached as numba caches them
(the test suite checks the locators are in use with the locked numba).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from .outputs import sha256_file

log = logging.getLogger(__name__)

#: Source file -> the other source files its kernels compile in (absolute paths).
_DEPENDS: dict[str, tuple[str, ...]] = {}
_INSTALLED = False


def depends_on(module_file: str, *sources: str) -> None:
    """Record that the kernels of ``module_file`` compile in code of ``sources`` (files), so that their cache
    entries go stale with any of them; installs the locators on first use."""
    _install()
    _DEPENDS[os.path.abspath(module_file)] = tuple(os.path.abspath(s) for s in sources)


def source_stamp(own: Any, module_file: str) -> Any:  # Any: numba's stamp of the file itself, kept as it is
    """``own`` (numba's stamp of ``module_file``) joined with the contents of the files it depends on (a hash of
    each), or ``own`` alone when it depends on none."""
    deps = _DEPENDS.get(os.path.abspath(module_file))
    if not deps:
        return own
    return (own, *(sha256_file(path) for path in deps))


def _install() -> None:
    global _INSTALLED
    if _INSTALLED:
        return
    _INSTALLED = True
    try:
        from numba.core import caching

        impl: Any = caching.CacheImpl
        bases = (caching.UserProvidedCacheLocator, caching.InTreeCacheLocator, caching.UserWideCacheLocator)
        classes = impl._locator_classes
    except AttributeError as exc:  # another numba: its own caching, without the dependencies
        log.warning("goodopt: numba's cache locators are not where goodopt looks (%s); a kernel's cache may keep "
                    "code of another module after that module changes (clear __pycache__ after editing kernels)",
                    exc)
        return
    classes[0:0] = [_dependent(base) for base in bases]


def _dependent(base: Any) -> Any:  # Any: a numba locator class in, a subclass of it out
    """A subclass of the locator ``base`` that serves only files recorded by :func:`depends_on` and stamps them
    with their dependencies (every other file goes on to numba's own locators)."""

    def from_function(cls: Any, py_func: Callable[..., Any], py_file: str) -> Any:  # Any: numba's classes
        if os.path.abspath(py_file) not in _DEPENDS:
            return None
        return super(locator, cls).from_function(py_func, py_file)

    def get_source_stamp(self: Any) -> Any:  # Any: numba's locator and its picklable stamp
        return source_stamp(super(locator, self).get_source_stamp(), self._py_file)

    locator: Any = type(f"Dependent{base.__name__}", (base,),
                        {"from_function": classmethod(from_function), "get_source_stamp": get_source_stamp,
                         "__module__": __name__})
    return locator
