"""Names for the JSON-shaped records in signatures: rows, specs, metadata and option mappings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: A JSON-shaped record: a table row, a task or spec as read from YAML or JSON, run metadata. Its values are
#: whatever JSON holds (numbers, strings, lists, nested records), so the type checker sees ``Any``; the code that
#: reads a field checks it there.
Record = dict[str, Any]
#: A record given as input: any mapping of names to JSON-shaped values (a method's or policy's options, a
#: spec's section), read as :data:`Record` is.
RecordIn = Mapping[str, Any]
