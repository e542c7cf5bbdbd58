"""What the sub-commands share: console output, name lists checked as they are parsed, argument types."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import yaml
from rich.console import Console

from ..errors import ValidationError
from ..records import Record
from ..yaml12 import load_yaml

if TYPE_CHECKING:
    from ..problem import AllocationProblem
    from ..scenario import Scenario

#: What a sub-command's ``add_parser`` is handed: ``add(name, **kw)`` makes the sub-command's parser.
AddParser = Callable[..., argparse.ArgumentParser]

log = logging.getLogger("goodopt.cli")


def console() -> Console:
    return Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 140)


def fmt(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}" if np.isfinite(x) else str(x)


def warn_pinned(sc: Scenario, pr: AllocationProblem) -> None:
    """Warn of jobs a re-allocation factor of 0 pins to their current allocation (the ``age_s: 0`` trap)."""
    from ..problem import pinned_jobs

    pinned = pinned_jobs(pr)
    if not pinned:
        return
    idle = [j for j in pinned if pr.current[j].sum() == 0]
    names = ", ".join(f"jobs[{j}].age_s" for j in pinned[:3]) + (" ..." if len(pinned) > 3 else "")
    what = ("every job is pinned at speedup 0, so the empty allocation is optimal" if len(idle) == pr.n_jobs else
            f"{len(pinned)} of {pr.n_jobs} jobs have re-allocation factor 0 and keep their current GPUs "
            f"({len(idle)} of them idle at speedup 0)")
    log.warning("%s: %s (%s <= n_reallocs x restart_delay_s); give each job its age in seconds", sc.name, what,
                names)


def parse_names(value: str, option: str, known: Collection[str]) -> list[str]:
    """A comma-separated list of names, each one known (with a suggestion for a near miss)."""
    import difflib

    names = [v.strip() for v in str(value).split(",") if v.strip()]
    if not names:
        raise ValidationError(option, f"no names in {value!r}", f"e.g. {option} {','.join(list(known)[:2])}")
    for i, n in enumerate(names):
        if n in names[:i]:
            raise ValidationError(option, f"{n!r} is given twice", "name each once")
        if n not in known:
            near = difflib.get_close_matches(n, list(known), n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise ValidationError(option, f"unknown name {n!r}", f"{hint}choose from {', '.join(known)}")
    return names


def key_values(items: Iterable[str] | None, flag: str = "--option", example: str = "n_gen=50") -> Record:
    """``--option KEY=VALUE`` items (or another flag's) as a dict (values parsed as YAML scalars)."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValidationError(flag, f"expected KEY=VALUE, got {item!r}", f"e.g. {flag} {example}")
        if key in out:
            raise ValidationError(f"{flag} {key}", "is given twice", "give each option once")
        try:
            out[key] = load_yaml(value)
        except yaml.YAMLError:
            out[key] = value
    return out


def check_figure_path(path: Path, option: str, inputs: Iterable[Any], keep: bool = False) -> None:  # Any: paths or path-likes, each checked
    from ..outputs import check_output

    if path.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise ValidationError(option, f"{str(path)!r} has no figure suffix", "end the path in .png, .pdf or .svg")
    check_output(path, option=option, inputs=inputs, keep=keep)


# ------------------------------------------------------------------ plumbing
def method_names() -> Sequence[str]:
    from ..solvers.api import METHODS

    return METHODS


def policy_names() -> tuple[str, ...]:
    from ..sim.policies import POLICIES

    return tuple(POLICIES)


def family_names() -> list[str]:
    from ..families import FAMILIES

    return list(FAMILIES)


class NamesAction(argparse.Action):
    """A comma-separated list of known names (``single``: exactly one), checked as it is parsed, with a
    suggestion for a near miss. ``known`` is a function, so the registries load only when the option is given."""

    def __init__(self, *args: Any, known: Callable[[], Collection[str]], single: bool = False, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.known, self.single = known, single

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        try:
            names = parse_names(values, option_string or self.dest, self.known())
        except ValidationError as exc:
            parser.error(f"argument {option_string}: {exc.problem} ({exc.fix})")
        if self.single and len(names) != 1:
            parser.error(f"argument {option_string}: give one name, got {values!r}")
        setattr(namespace, self.dest, names[0] if self.single else ",".join(names))


class LazyHelp(str):
    """A help text computed when help is shown (from the registries, plug-ins included), not when the parser is
    built: the policy registry loads the simulator, which a ``solve`` does not need."""

    text: Callable[[], str]
    suffix: str

    def __new__(cls, text: Callable[[], str], suffix: str = "") -> LazyHelp:
        obj = super().__new__(cls, "..." + suffix)
        obj.text, obj.suffix = text, suffix
        return obj

    def __add__(self, other: str) -> LazyHelp:  # argparse appends " (default: ...)"
        return LazyHelp(self.text, self.suffix + other)

    def __mod__(self, params: Any) -> str:
        return (self.text() + self.suffix) % params


def whole_in(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: a whole number in ``[lo, hi]``."""
    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must lie in [{lo}, {hi}], got {value}")
        return value
    return whole


def number_in(lo: float, hi: float, *, open_low: bool = True) -> Callable[[str], float]:
    """An argparse type: a finite number in ``(lo, hi]`` (``[lo, hi]`` unless ``open_low``)."""
    def number(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not (lo < value <= hi if open_low else lo <= value <= hi):
            raise argparse.ArgumentTypeError(f"must lie in {'(' if open_low else '['}{lo:g}, {hi:g}], got {text}")
        return value
    return number


def dask_address(text: str) -> str:
    from ..runs.execute import check_dask_address

    try:
        return check_dask_address(text)
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(f"{exc.problem} ({exc.fix})") from None


SEED = whole_in(0, 2 ** 32 - 1)


SEEDS = whole_in(1, 10_000)
#: Seeds per family ``families --export`` writes (:data:`goodopt.families.MAX_EXPORT_SEEDS`, not imported here: the
#: parser of every command is built at start-up).
EXPORT_SEEDS = whole_in(1, 1000)


WORKERS = whole_in(1, 1024)


SECONDS = number_in(0, 1e6)


def print_tasks(tasks: Sequence[Any]) -> None:  # Any: tasks of any kind (solve, simulate, rigid, pareto)
    con = console()
    con.print(f"{len(tasks)} task(s); every input checked:")
    for t in tasks[:50]:
        con.print(f"  {t.describe()}")
    if len(tasks) > 50:
        con.print(f"  ... and {len(tasks) - 50} more")
