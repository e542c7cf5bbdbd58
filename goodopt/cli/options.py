"""``goodopt options [NAME]``: the registries' methods and policies, or one's options and defaults.

The command face of :mod:`goodopt.solvers.options` (the methods' options classes), hence the shared file name."""

from __future__ import annotations

import argparse
import re
from typing import Any

from rich.table import Table

from ..errors import ValidationError
from .common import AddParser, console


def add_parser(add: AddParser) -> None:
    """The ``options`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("options", help="every option of a method or simulation policy, with its default (plug-ins included)")
    p.add_argument("name", nargs="?", default=None, help="a method or policy (default: list them)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``goodopt options [NAME]``: the registries' methods and policies, or one's options and defaults."""
    from ..sim.policies import POLICIES, policy_options
    from ..solvers.api import METHOD_OPTIONS
    from ..validation import suggest

    con = console()
    if args.name is None:
        con.print("methods: " + ", ".join(METHOD_OPTIONS))
        con.print("policies: " + ", ".join(POLICIES))
        return 0
    found = [(f"method {args.name}", METHOD_OPTIONS.get(args.name)), (f"policy {args.name}",
             policy_options(args.name) if args.name in POLICIES else None)]
    found = [(what, opts) for what, opts in found if opts is not None]
    shown: list[tuple[str, dict[str, Any]]] = [(what, opts) for what, opts in found if opts is not None]
    if not found:
        raise ValidationError("name", f"no method or policy is called {args.name!r}",
                              f"{suggest(args.name, [*METHOD_OPTIONS, *POLICIES])}run goodopt options to list them")
    for what, opts in shown:
        meaning = meanings(args.name, policy=what.startswith("policy"))
        t = Table(title=f"{what}: options, defaults and meanings")
        t.add_column("option", overflow="fold")
        t.add_column("default", overflow="fold")
        t.add_column("meaning", overflow="fold")
        for key, value in opts.items():
            t.add_row(key, repr(value), meaning.get(key, ""))
        con.print(t)
    return 0


def meanings(name: str, *, policy: bool) -> dict[str, str]:
    """Option -> meaning for the method or policy ``name``, from ``goodopt/option_meanings.yaml`` (the file the
    documentation's options page is rendered from): its own sections first, then those of every method."""
    from importlib.resources import files

    import yaml

    sections = yaml.safe_load(files("goodopt").joinpath("option_meanings.yaml").read_text())
    kinds = ("goodput-policies", "other-policies") if policy else ("milp", "ga", "heuristics", "every-method")
    out: dict[str, str] = {}
    for key in kinds:
        sec = sections.get(key, {})
        if name not in sec.get("applies_to", []) and key != "every-method":
            continue
        for row in sec.get("rows", []):
            for option in re.findall(r"`([^`]+)`", row["option"]):
                out.setdefault(option, row["meaning"].replace("`", ""))
    return out
