"""A benchmark library of allocation instances: certified values, a checker that trusts no answer, and the
files any MILP solver reads.

- :mod:`.build`: ``goodopt library build`` writes instances (scenario, whole model, map), their certified
  values (``library.solu``, ``values.csv``), the answers that certified them and a manifest of sha256;
- :mod:`.verify`: ``goodopt library verify`` re-checks every file and row;
- :mod:`.check`: ``goodopt check INSTANCE ANSWER`` judges an allocation or a solver's solution file;
- :mod:`.solu`: the ``.solu`` format (MIPLIB's).

The small tier is shipped in ``scenarios/library`` (:func:`shipped`).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def shipped() -> Path:
    """The folder of the shipped small tier."""
    return Path(str(resources.files("goodopt.scenarios"))) / "library"
