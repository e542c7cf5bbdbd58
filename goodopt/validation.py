"""Reading what users type: input files and nested mappings, checked once at the boundary.

:func:`read_text` and :func:`read_yaml` read an input file (scenario, profile,
allocation, sweep spec, workload) and turn every way it can be unreadable — not
found, a folder, too large, not UTF-8, not YAML — into one
:class:`~goodopt.errors.ValidationError` naming ``file:line:column`` and the fix.

:class:`Reader` walks a mapping, coercing and range-checking each field, and
raises a :class:`~goodopt.errors.ValidationError` (a
:class:`~goodopt.errors.ScenarioError` unless another class is given) with the
dotted path of the field (``jobs[2].max_gpus``) and the fix.
:meth:`Reader.done` rejects unknown keys, which catches typos instead of
silently ignoring them. Scenarios, profiles and sweep specs are all read this way.
"""

from __future__ import annotations

import difflib
import logging
import math
import os
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, overload

import yaml

from .errors import ScenarioError, ValidationError
from .yaml12 import load_yaml

log = logging.getLogger(__name__)

#: Largest input file read (bytes): far above any real scenario, spec or workload.
MAX_INPUT_BYTES = 64 * 2 ** 20
#: Largest whole number accepted where a size or count is read (keeps arrays and int64 arithmetic sane).
MAX_WHOLE = 2 ** 31 - 1

_MISSING = object()


def usable_path(text: str | os.PathLike[str], field: str = "path", error: type[ValidationError] = ValidationError) -> Path:
    """``Path(text)``, or ``error`` when the system refuses to even look it up (a name too long, a NUL byte)."""
    p = Path(text)
    try:
        p.exists()
    except (OSError, ValueError) as exc:
        short = str(text) if len(str(text)) < 80 else str(text)[:77] + "..."
        raise error(field, f"{short!r} is not a usable path ({getattr(exc, 'strerror', None) or exc})",
                    "check the name") from None
    return p


def read_text(path: str | os.PathLike[str], what: str, error: type[ValidationError] = ValidationError) -> str:
    """The text of input file ``path`` (a ``what``: "scenario", "allocation", ...), or ``error`` saying why not."""
    p = usable_path(path, what, error)
    if p.is_dir():
        raise error(str(p), f"is a folder, where the {what} file was expected", f"give the path of the {what} file")
    if not p.is_file():
        raise error(str(p), f"{what} file not found", f"check the path (current folder: {Path.cwd()})")
    size = p.stat().st_size
    if size > MAX_INPUT_BYTES:
        raise error(str(p), f"is {size / 2 ** 20:.0f} MiB, larger than any {what} file should be "
                    f"(limit {MAX_INPUT_BYTES // 2 ** 20} MiB)", "check that this is the right file")
    data = p.read_bytes()
    log.debug("read %s file %s (%d bytes)", what, p, size)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise error(f"{p}:{line}:{col}", f"byte 0x{data[exc.start]:02x} is not UTF-8 text",
                    "save the file as UTF-8") from None


def read_yaml(path: str | os.PathLike[str], what: str, error: type[ValidationError] = ValidationError) -> Any:  # Any: parsed YAML of any shape
    """The parsed YAML (or JSON) of input file ``path``; syntax errors name ``file:line:column``."""
    text = read_text(path, what, error)
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).split("\n")[0]
        raise error(where, f"not valid YAML: {problem}", f"fix the {what} file's syntax there") from None


#: The longest label (a sweep's, a method's or a policy's name: each may name files and folders).
MAX_LABEL = 128


def check_label(where: str, name: object, fix: str, error: type[ValidationError] = ValidationError) -> str:
    """A name that is a label, not a path: printable, non-empty, at most :data:`MAX_LABEL` characters, no path
    separator, no leading dot (a hidden file or a parent folder) and no leading or trailing spaces. Sweep names,
    method and policy names (built-in or plug-in) follow it, as each may name an output file or folder."""
    if not isinstance(name, str) or not name.strip():
        raise error(where, f"must be a non-empty label, got {name!r}", fix)
    if "\0" in name or any(not c.isprintable() for c in name):
        raise error(where, f"must be printable text, got {name!r}", fix)
    if "/" in name or "\\" in name or name.startswith(".") or name.strip() != name or len(name) > MAX_LABEL:
        problem = ("holds a path separator" if "/" in name or "\\" in name else
                   "starts with a dot (a hidden file or a parent folder)" if name.startswith(".") else
                   "has leading or trailing spaces" if name.strip() != name else f"is longer than {MAX_LABEL}")
        raise error(where, f"{problem}: {name!r}", fix)
    return name


def suggest(name: object, known: Iterable[object]) -> str:
    """``"did you mean 'x'? "`` for a near miss among ``known`` names, else ``""``."""
    near = difflib.get_close_matches(str(name), [str(k) for k in known], n=1)
    return f"did you mean {near[0]!r}? " if near else ""


class Reader:
    """Typed access to one mapping at a known path; errors are raised as ``error`` (a ValidationError class)."""

    def __init__(self, data: Any, path: str, error: type[ValidationError] = ScenarioError) -> None:
        if not isinstance(data, dict):
            raise error(path, f"must be a mapping, got {type(data).__name__}")
        self.data = data
        self.prefix = path
        self.error = error
        self.seen: set[str | int] = set()

    def path(self, key: str | int) -> str:
        return f"{self.prefix}.{key}" if self.prefix else str(key)

    def keys(self) -> list[Any]:  # Any: a mapping's keys, as YAML gives them
        return list(self.data.keys())

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str | int, default: Any = _MISSING) -> Any:  # Any: a YAML value of any type, returned as given
        self.seen.add(key)
        if key not in self.data:
            if default is _MISSING:
                raise self.error(self.path(key), "is required", "add this field")
            return default
        return self.data[key]

    def optional(self, key: str, default: Any) -> Any:  # Any: a YAML value of any type, returned as given
        return self.raw(key, default)

    def sub(self, key: str) -> Reader:
        return Reader(self.raw(key), self.path(key), self.error)

    mapping = sub

    def items(self, key: str, default: Any = _MISSING) -> list[Any]:  # Any: YAML values of any type
        value = self.raw(key, default)
        if not isinstance(value, list):
            raise self.error(self.path(key), f"must be a list, got {type(value).__name__}")
        return value

    def string(self, key: str, default: Any = _MISSING, choices: Collection[str] | None = None) -> str:  # Any: a default of any type
        value = self.raw(key, default)
        if not isinstance(value, str) or not value:
            raise self.error(self.path(key), f"must be a non-empty string, got {value!r}")
        if choices is not None and value not in choices:
            raise self.error(self.path(key), f"unknown value {value!r}",
                             f"{suggest(value, choices)}choose one of {sorted(choices)}")
        return value

    def name(self, key: str, default: Any = _MISSING) -> str:  # Any: a default of any type
        """A name as written: text, non-empty and printable. A number or boolean (``1e3``, ``no`` in YAML 1.1)
        is refused rather than turned into other text (``'1000.0'``, ``'False'``)."""
        value = self.raw(key, default)
        if isinstance(value, (bool, int, float)) and not isinstance(value, str):
            raise self.error(self.path(key), f"must be text, got the {type(value).__name__} {value!r}",
                             "quote it, e.g. name: '1e3'")
        if not isinstance(value, str) or not value.strip() or not value.isprintable():
            raise self.error(self.path(key), f"must be a non-empty name of printable text, got {value!r}",
                             "e.g. name: resnet-0")
        return value

    def boolean(self, key: str, default: Any = _MISSING) -> bool:  # Any: a default of any type
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.error(self.path(key), f"must be true or false, got {value!r}")
        return value

    @overload
    def number(self, key: str | int, default: None, minimum: float | None = None, maximum: float | None = None,
               strict: bool = False, allow_inf: bool = False) -> float | None: ...

    @overload
    def number(self, key: str | int, default: float = ..., minimum: float | None = None,
               maximum: float | None = None, strict: bool = False, allow_inf: bool = False) -> float: ...

    def number(self, key: str | int, default: Any = _MISSING, minimum: float | None = None,
               maximum: float | None = None, strict: bool = False, allow_inf: bool = False) -> float | None:  # Any: a default of any type
        value = self.raw(key, default)
        if value is None and default is None:
            return None
        return check_number(self.path(key), value, minimum, maximum, strict, allow_inf, self.error)

    @overload
    def integer(self, key: str, default: None, minimum: int | None = None,
                maximum: int | None = MAX_WHOLE) -> int | None: ...

    @overload
    def integer(self, key: str, default: int = ..., minimum: int | None = None,
                maximum: int | None = MAX_WHOLE) -> int: ...

    def integer(self, key: str, default: Any = _MISSING, minimum: int | None = None,
                maximum: int | None = MAX_WHOLE) -> int | None:  # Any: a default of any type
        value = self.raw(key, default)
        if value is None and default is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise self.error(self.path(key), f"must be a whole number, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(self.path(key), f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise self.error(self.path(key), f"must be <= {maximum}, got {value}")
        return value

    def number_list(self, key: str) -> list[float]:
        values = self.items(key)
        return [check_number(f"{self.path(key)}[{i}]", v, error=self.error) for i, v in enumerate(values)]

    def expect(self, known: Collection[str]) -> None:
        """Reject keys outside ``known`` now, before any field is read (a typo is reported first)."""
        self.seen |= {k for k in self.data if k not in known}
        unknown = [k for k in self.data if k not in known]
        if unknown:
            raise self.error(self.path(str(unknown[0])), "unknown field",
                             f"{suggest(unknown[0], known)}known fields here: {sorted(known)}")

    def done(self) -> None:
        """Reject keys that were never read (likely typos)."""
        unknown = [k for k in self.data if k not in self.seen]
        if unknown:
            raise self.error(
                self.path(str(unknown[0])), "unknown field",
                f"{suggest(unknown[0], self.seen)}known fields here: {sorted(self.seen)}",
            )


def check_whole(path: str, value: object, minimum: int, maximum: int = MAX_WHOLE,
                error: type[ValidationError] = ValidationError) -> int:
    """A whole number in ``[minimum, maximum]``; a float is accepted only when it is whole (never rounded)."""
    v = check_number(path, value, minimum=minimum, maximum=maximum, error=error)
    if v != int(v):
        raise error(path, f"must be a whole number >= {minimum}, got {value!r}")
    return int(v)


def check_number(path: str, value: object, minimum: float | None = None, maximum: float | None = None,
                 strict: bool = False, allow_inf: bool = False, error: type[ValidationError] = ScenarioError) -> float:
    """Coerce a number, rejecting NaN, infinities (unless allowed) and out-of-range values."""
    if isinstance(value, str) and allow_inf and value.strip().lower() in ("inf", "+inf", "-inf"):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise error(path, f"must be a number, got {value!r}")
    try:
        value = float(value)
    except OverflowError:
        raise error(path, f"is far too large, got {value}") from None
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise error(path, f"must be finite, got {value}")
    if minimum is not None and (value < minimum or (strict and value == minimum)):
        op = ">" if strict else ">="
        raise error(path, f"must be {op} {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise error(path, f"must be <= {maximum}, got {value}")
    return value
