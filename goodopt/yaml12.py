"""YAML as users write it: numbers as YAML 1.2 reads them, and no key given twice.

PyYAML follows YAML 1.1, where ``1e-6`` and ``1.5e3`` are strings (a float
there needs a dot and a signed exponent). YAML 1.2, and every user, reads them
as numbers; :func:`load_yaml` does too. A mapping that gives a key twice is
refused with both line numbers, where PyYAML would keep the second silently
(a second ``jobs:`` block would drop the first).

Every reader of user input (scenarios, profiles, allocations, sweep specs,
``--option`` and ``--autoscale-option`` values) parses through this module.
"""

from __future__ import annotations

import re

import yaml

#: YAML 1.2 core-schema floats that YAML 1.1 reads as strings: an exponent without a dot (``1e-6``, ``2E9``) or
#: with an unsigned exponent (``1.5e3``), and a leading-dot mantissa with an exponent (``.5e-3``).
_FLOAT_12 = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")


class _Loader(yaml.SafeLoader):
    """The safe loader with YAML 1.2 numbers and duplicate keys refused."""


# a copy of the inherited resolvers, so that yaml.SafeLoader itself is left as it is
_Loader.yaml_implicit_resolvers = {k: list(v) for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+0123456789."))

_MERGE = "tag:yaml.org,2002:merge"


def _check_unique_keys(loader: _Loader, node: yaml.MappingNode) -> None:
    """Refuse a key given twice in one mapping (``<<`` merges may be overridden, as YAML allows)."""
    seen: dict = {}
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


def _construct_map(loader: _Loader, node: yaml.MappingNode):
    data: dict = {}
    yield data
    _check_unique_keys(loader, node)
    data.update(loader.construct_mapping(node))


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)


def load_yaml(text: str):
    """Parse ``text`` as YAML (or JSON) with YAML 1.2 numbers; a key given twice raises ``yaml.YAMLError``."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 -- a SafeLoader subclass
