"""Path-aware reading of nested mappings (scenario and profile files).

:class:`Reader` walks a mapping, coercing and range-checking each field, and
raises :class:`~goodopt.errors.ScenarioError` with the dotted path of the field
(``jobs[2].max_gpus``) and the fix. :meth:`Reader.done` rejects unknown keys,
which catches typos instead of silently ignoring them.
"""

from __future__ import annotations

import math
from typing import Any

from .errors import ScenarioError

_MISSING = object()


class Reader:
    """Typed access to one mapping at a known path."""

    def __init__(self, data: Any, path: str):
        if not isinstance(data, dict):
            raise ScenarioError(path, f"must be a mapping, got {type(data).__name__}")
        self.data = data
        self.prefix = path
        self.seen: set[str] = set()

    def path(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def keys(self):
        return list(self.data.keys())

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str, default=_MISSING):
        self.seen.add(key)
        if key not in self.data:
            if default is _MISSING:
                raise ScenarioError(self.path(key), "is required", "add this field")
            return default
        return self.data[key]

    def optional(self, key: str, default):
        return self.raw(key, default)

    def sub(self, key: str) -> "Reader":
        return Reader(self.raw(key), self.path(key))

    mapping = sub

    def items(self, key: str, default=_MISSING) -> list:
        value = self.raw(key, default)
        if not isinstance(value, list):
            raise ScenarioError(self.path(key), f"must be a list, got {type(value).__name__}")
        return value

    def string(self, key: str, default=_MISSING, choices=None) -> str:
        value = self.raw(key, default)
        if not isinstance(value, str) or not value:
            raise ScenarioError(self.path(key), f"must be a non-empty string, got {value!r}")
        if choices is not None and value not in choices:
            raise ScenarioError(self.path(key), f"unknown value {value!r}", f"choose one of {sorted(choices)}")
        return value

    def boolean(self, key: str, default=_MISSING) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise ScenarioError(self.path(key), f"must be true or false, got {value!r}")
        return value

    def number(self, key: str, default=_MISSING, minimum=None, maximum=None, strict=False,
               allow_inf=False) -> float:
        value = self.raw(key, default)
        return check_number(self.path(key), value, minimum, maximum, strict, allow_inf)

    def integer(self, key: str, default=_MISSING, minimum=None, maximum=None):
        value = self.raw(key, default)
        if value is None and default is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise ScenarioError(self.path(key), f"must be a whole number, got {value!r}")
        if minimum is not None and value < minimum:
            raise ScenarioError(self.path(key), f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise ScenarioError(self.path(key), f"must be <= {maximum}, got {value}")
        return value

    def number_list(self, key: str) -> list[float]:
        values = self.items(key)
        return [check_number(f"{self.path(key)}[{i}]", v) for i, v in enumerate(values)]

    def done(self) -> None:
        """Reject keys that were never read (likely typos)."""
        unknown = [k for k in self.data if k not in self.seen]
        if unknown:
            raise ScenarioError(
                self.path(str(unknown[0])), "unknown field",
                f"known fields here: {sorted(self.seen)}; check the spelling",
            )


def check_number(path: str, value, minimum=None, maximum=None, strict=False, allow_inf=False) -> float:
    """Coerce a number, rejecting NaN, infinities (unless allowed) and out-of-range values."""
    if isinstance(value, str) and allow_inf and value.strip().lower() in ("inf", "+inf", "-inf"):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(path, f"must be a number, got {value!r}")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise ScenarioError(path, f"must be finite, got {value}")
    if minimum is not None and (value < minimum or (strict and value == minimum)):
        op = ">" if strict else ">="
        raise ScenarioError(path, f"must be {op} {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ScenarioError(path, f"must be <= {maximum}, got {value}")
    return value
