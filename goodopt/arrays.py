"""Names for array types in signatures; each function's docstring gives the shapes."""

from __future__ import annotations

from typing import Any

from numpy.typing import NDArray

#: A numpy array of any dtype and shape.
Array = NDArray[Any]
#: Anything :func:`numpy.asarray` accepts (a list, a scalar, an array); converted and checked where it is used.
ArrayIn = Any
#: What a broadcasting function returns: an array of the inputs' broadcast shape, or a float where every input
#: was a scalar (numpy's own rule), so callers may pass either.
ArrayOut = Any
