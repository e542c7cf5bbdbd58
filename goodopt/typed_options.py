"""The one options system: a frozen dataclass per method, simulation policy and auto-scaler.

An options class declares each option as a typed field with its default and checks ranges and choices in
``__post_init__``; :meth:`TypedOptions.build` makes one from a user's mapping, naming an unknown key (with the
nearest valid name) and a value of the wrong declared type by ``<prefix>.<option>``. ``goodopt options NAME``
lists any class's fields and defaults (:meth:`TypedOptions.defaults`); records and logs take
:meth:`TypedOptions.as_dict`; the code reads attributes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np

from .errors import ValidationError
from .records import Record, RecordIn
from .validation import MAX_WHOLE, suggest

#: What a declared option type accepts (the class's own ``__post_init__`` checks ranges and choices).
DECLARED = {"int": (int, np.integer), "float": (int, float, np.integer, np.floating), "bool": (bool, np.bool_),
            "str": (str,)}


@dataclass(frozen=True, kw_only=True)
class TypedOptions:
    """Base of every options class (see the module docstring).

    ``owner`` names what the options belong to in messages (``method 'milp'``, ``policy 'themis'``) and
    ``listed_as`` its name for ``goodopt options NAME``; ``prefix`` is the field path of an option in messages
    (``options``, ``policy_options``, ...)."""

    #: Float options that may be infinite (the others must be finite numbers).
    infinite_ok: ClassVar[tuple[str, ...]] = ()
    owner: ClassVar[str] = "this"
    listed_as: ClassVar[str] = ""
    prefix: ClassVar[str] = "options"

    @classmethod
    def build(cls, options: RecordIn | TypedOptions | None, *, owner: str | None = None,
              listed_as: str | None = None) -> Self:
        """The options object from a user's mapping (None = defaults); unknown keys are listed. ``owner`` and
        ``listed_as`` name, in messages, what the options belong to when a class serves several (policies)."""
        owner = cls.owner if owner is None else owner
        listed_as = cls.listed_as if listed_as is None else listed_as
        if options is None:
            options = {}
        if isinstance(options, TypedOptions):
            options = options.as_dict()
        if not isinstance(options, Mapping):
            raise ValidationError(cls.prefix, f"must map option -> value, got {type(options).__name__}")
        names = set(cls.names())
        unknown = sorted(set(options) - names, key=str)
        if unknown:
            raise ValidationError(f"{cls.prefix}.{unknown[0]}", f"not an option of {owner}",
                                  f"{suggest(str(unknown[0]), names)}valid options: {', '.join(sorted(names))}")
        options = {k: whole_if_int(cls, k, v) for k, v in options.items()}
        built: Self | Exception
        try:  # the class's own checks speak first: they name the range or the choices
            built = cls(**options)
        except ValidationError:
            raise
        except (TypeError, ValueError, ArithmeticError) as exc:  # a check that met a value of the wrong type
            built = exc
        for key, value in options.items():  # what a class checks not at all (a plug-in's, say) is typed here
            check_declared_type(cls, key, value, cls.prefix)
        if isinstance(built, Exception):
            raise ValidationError(cls.prefix, f"not accepted by {owner}: {built}",
                                  f"see goodopt options {listed_as}".rstrip()) from None
        return built

    def replace(self, **changes: Any) -> Self:  # Any: field values, checked by the class
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> Record:
        """Every option and its value, in declaration order (for records and logs; the code reads attributes)."""
        return {name: getattr(self, name) for name in self.names()}

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def defaults(cls) -> Record:
        """Every option and its default (factories called)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            out[f.name] = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        return out


def declared_types(cls: type) -> dict[str, str]:
    """Option -> its declared type as written (``"int | None"``)."""
    return {f.name: f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
            for f in dataclasses.fields(cls)}


def whole_if_int(cls: type, name: str, value: Any) -> Any:  # Any: a user's value, checked here
    """A whole float given for a whole-number option (``1e3`` in YAML 1.2) as the int it stands for."""
    if declared_types(cls).get(name, "").startswith("int") and isinstance(value, float) and value.is_integer() \
            and abs(value) <= MAX_WHOLE:
        return int(value)
    return value


def check_declared_type(cls: type, name: str, value: Any, prefix: str = "options") -> None:  # Any: a user's value
    """A value of the plain type its field declares (``int``, ``float``, ``bool``, ``str``, or ``... | None``), so
    options -- a plug-in's too -- never reach the code with a value of the wrong type (a field of several
    types, such as ``int | str | None``, is its class's to check)."""
    declared = declared_types(cls).get(name, "")
    base, _, none = declared.partition(" | ")
    if base not in DECLARED or none not in ("", "None") or (value is None and none == "None"):
        return
    ok = isinstance(value, DECLARED[base]) and (base == "bool" or not isinstance(value, (bool, np.bool_)))
    if base == "float" and ok and not np.isfinite(value) and not (name in getattr(cls, "infinite_ok", ())
                                                                   and not np.isnan(value)):
        ok = False
    if not ok:
        what = {"int": "a whole number", "float": "a finite number", "bool": "true or false", "str": "text"}[base]
        raise ValidationError(f"{prefix}.{name}", f"must be {what}{' or omitted' if none else ''}, got {value!r}")
