"""YAML as users write it: YAML 1.2's core schema, and no key given twice.

PyYAML follows YAML 1.1, where ``1e-6`` and ``1.5e3`` are strings (a float
there needs a dot and a signed exponent), ``010`` is octal 8, ``08`` a string,
and ``no``/``on``/``yes`` are booleans. YAML 1.2, and every user, reads the
first as numbers, ``010`` as 10, ``0o10`` as 8 and ``no`` as text;
:func:`load_yaml` does too. A mapping that gives a key twice is
refused with both line numbers, where PyYAML would keep the second silently
(a second ``jobs:`` block would drop the first).

Every reader of user input (scenarios, profiles, allocations, sweep specs,
``--option`` and ``--autoscale-option`` values) parses through this module.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator
from typing import Any

import yaml

#: libyaml's parser where PyYAML was built with it (its wheels are), else PyYAML's own; the schema, the
#: constructors and the duplicate-key check below are the same Python code on either, so is the answer.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeLoader):  # type: ignore[misc,valid-type]  # one of two base classes, chosen at import
    """The safe loader with YAML 1.2's core schema and duplicate keys refused."""


#: YAML 1.2 core-schema scalars (https://yaml.org/spec/1.2.2/#1032-tag-resolution), by tag and first character.
#: Everything else plain is a string: ``no``, ``on``, ``1_000``, ``1:30`` and ``2024-01-01`` (YAML 1.1's bool,
#: numbers and timestamp), as in every YAML 1.2 reader.
_CORE = (
    ("tag:yaml.org,2002:merge", r"^(?:<<)$", ["<"]),  # not the core schema's, but every reader's: ``<<: *base``
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    ("tag:yaml.org,2002:float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                                r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", list("-+0123456789.")),
)
_Loader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in _CORE:
    _Loader.add_implicit_resolver(_tag, re.compile(_pattern), _first)


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> int:
    """YAML 1.2 integers: decimal (leading zeros too: ``010`` is 10), ``0o`` octal, ``0x`` hexadecimal."""
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def _construct_float(loader: _Loader, node: yaml.ScalarNode) -> float:
    text = loader.construct_scalar(node).lower()
    sign = -1.0 if text.startswith("-") else 1.0
    if text.lstrip("+-") == ".inf":
        return sign * float("inf")
    return float("nan") if text == ".nan" else float(text)


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)

_MERGE = "tag:yaml.org,2002:merge"


def _check_unique_keys(loader: _Loader, node: yaml.MappingNode) -> None:
    """Refuse a key given twice in one mapping (``<<`` merges may be overridden, as YAML allows)."""
    seen: dict[Any, Any] = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE:
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.setdefault(key, key_node.start_mark)
        except TypeError:  # an unhashable key: the base constructor reports it
            continue
        if first is not key_node.start_mark:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is given twice (first at line {first.line + 1})", key_node.start_mark)


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> Iterator[dict[Any, Any]]:
    data: dict[Any, Any] = {}
    yield data
    _check_unique_keys(loader, node)
    data.update(loader.construct_mapping(node))


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)


#: Texts parsed and remembered per process, and the longest remembered: a simulation sweep reads the same
#: profiles and scenarios thousands of times (`make figures`: 4.6k reads of a few hundred files).
PARSED_CACHE_SIZE = 512
PARSED_CACHE_MAX_CHARS = 1_000_000


def load_yaml(text: str) -> Any:  # any YAML document: a mapping, a list, a scalar
    """Parse ``text`` as YAML (or JSON) with YAML 1.2 numbers; a key given twice raises ``yaml.YAMLError``.

    A text read before is not parsed again: the caller gets its own copy of the remembered answer."""
    if len(text) > PARSED_CACHE_MAX_CHARS:
        return _parse(text)
    return copy.deepcopy(_parse_remembered(text))


@functools.lru_cache(maxsize=PARSED_CACHE_SIZE)
def _parse_remembered(text: str) -> Any:
    return _parse(text)


def _parse(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)  # noqa: S506 -- a SafeLoader subclass
