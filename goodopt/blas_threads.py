"""One BLAS thread while goodopt computes: :func:`one_blas_thread`.

goodopt's linear algebra is many small vectors and matrices (a dot product over a model's columns, an agent's
fit), where OpenBLAS's extra threads only spin: on a 2-core machine they took 3-5% of a 2,048-GPU exact solve's
CPU and 40% of an agent fit's. With more than one thread OpenBLAS also splits a long dot product between them,
so its last bit would follow the machine's core count (of 200 products of 80,000 normal draws, 192 differed
between one thread and two). Parallel work comes from solves and simulations side by side (``--workers``, Dask)
instead.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import ThreadpoolController

_lock = threading.Lock()
_kept: tuple[int, ThreadpoolController] | None = None  # (modules imported when listed, the list)


def _controller() -> ThreadpoolController:
    """The BLAS libraries loaded now. Listing them takes about a millisecond, so the list is kept until a module
    is imported (a library such as scipy's OpenBLAS loads with the module that needs it)."""
    global _kept
    key = len(sys.modules)
    with _lock:
        if _kept is None or _kept[0] != key:
            _kept = (key, ThreadpoolController())
        return _kept[1]


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Every loaded BLAS library runs one thread within the block, and returns to its own count after it. The
    limit is process-wide while it holds (BLAS libraries have no per-thread setting)."""
    with _controller().limit(limits=1, user_api="blas"):
        yield
