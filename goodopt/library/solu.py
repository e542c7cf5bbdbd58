"""The ``.solu`` file of a library: each instance's known value, as MIPLIB writes it.

One line per fact, ``=TAG= NAME [VALUE]``::

    =opt=      NAME VALUE   the optimum, certified
    =best=     NAME VALUE   the best value known, not certified
    =bestdual= NAME BOUND   a proven bound on the optimum (with =best=)
    =inf=      NAME         no feasible answer
    =unkn=     NAME         nothing known

Values are those of the instance's model file (the objective a solver reports on it: maximised, in the units
of its map's transform), written with 17 significant digits so that they read back exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from goodopt.errors import ValidationError

TAGS = ("=opt=", "=best=", "=bestdual=", "=inf=", "=unkn=")


@dataclass(frozen=True)
class SoluEntry:
    """What the file says of one instance: ``status`` ``opt``, ``best``, ``inf`` or ``unkn``; ``value`` (NaN
    unless opt or best) and ``bound`` (the optimum for opt, =bestdual= for best, else NaN)."""

    name: str
    status: str
    value: float = math.nan
    bound: float = math.nan


def solu_lines(entry: SoluEntry) -> list[str]:
    """The lines of one entry."""
    if entry.status == "opt":
        return [f"=opt= {entry.name} {entry.value!r}"]
    if entry.status == "best":
        lines = [f"=best= {entry.name} {entry.value!r}"]
        return lines + ([f"=bestdual= {entry.name} {entry.bound!r}"] if math.isfinite(entry.bound) else [])
    return [f"={entry.status}= {entry.name}"]


def read_solu(path: str | Path) -> dict[str, SoluEntry]:
    """The entries of a ``.solu`` file by instance name; a line it cannot read is refused with its number."""
    p = Path(path)
    entries: dict[str, dict[str, float | str]] = {}
    for number, line in enumerate(p.read_text().splitlines(), 1):
        tokens = line.split()
        if not tokens or tokens[0].startswith("#"):
            continue
        if tokens[0] not in TAGS or len(tokens) != (2 if tokens[0] in ("=inf=", "=unkn=") else 3):
            raise ValidationError("solu", f"{p}:{number}: {line!r} is not '=TAG= NAME [VALUE]'",
                                  f"use one of {', '.join(TAGS)}")
        tag, name = tokens[0].strip("="), tokens[1]
        e = entries.setdefault(name, {})
        if tag == "bestdual":
            e["bound"] = _value(tokens[2], p, number)
        else:
            if "status" in e:
                raise ValidationError("solu", f"{p}:{number}: {name} has a second value", "keep one per instance")
            e["status"] = tag
            if len(tokens) == 3:
                e["value"] = _value(tokens[2], p, number)
    out = {}
    for name, e in entries.items():
        if "status" not in e:
            raise ValidationError("solu", f"{p}: {name} has a bound but no value", "add its =best= line")
        value = float(e.get("value", math.nan))
        bound = value if e["status"] == "opt" else float(e.get("bound", math.nan))
        out[name] = SoluEntry(name=name, status=str(e["status"]), value=value, bound=bound)
    return out


def _value(text: str, p: Path, number: int) -> float:
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v):
        raise ValidationError("solu", f"{p}:{number}: {text!r} is not a finite number", "write the value in full")
    return v
