"""Names for array types in signatures; each function's docstring gives the shapes."""

from __future__ import annotations

from typing import Any

from numpy.typing import NDArray

#: A numpy array of any dtype and shape.
Array = NDArray[Any]
#: Anything :func:`numpy.asarray` accepts (a list, a scalar, an array); converted and checked where it is used.
ArrayIn = Any
