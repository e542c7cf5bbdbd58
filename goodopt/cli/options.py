"""``goodopt options [NAME]``: the registries' methods, policies and auto-scalers, or one's options and defaults.

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
    from ..sim.autoscale import AUTOSCALERS
    from ..sim.policies import POLICIES, policy_options
    from ..solvers.api import METHOD_OPTIONS
    from ..validation import suggest

    con = console()
    if args.name is None:
        con.print("methods: " + ", ".join(METHOD_OPTIONS))
        con.print("policies: " + ", ".join(POLICIES))
        con.print("auto-scalers: " + ", ".join(AUTOSCALERS))
        return 0
    name = args.name
    found = [(f"method {name}", METHOD_OPTIONS.get(name)),
             (f"policy {name}", policy_options(name) if name in POLICIES else None),
             (f"auto-scaler {name}", AUTOSCALERS[name].Options.defaults() if name in AUTOSCALERS else None)]
    shown: list[tuple[str, dict[str, Any]]] = [(what, opts) for what, opts in found if opts is not None]
    if not shown:
        raise ValidationError("name", f"no method, policy or auto-scaler is called {name!r}",
                              f"{suggest(name, [*METHOD_OPTIONS, *POLICIES, *AUTOSCALERS])}run goodopt options to "
                              "list them")
    for what, opts in shown:
        meaning = meanings(name, kind=what.split()[0])
        t = Table(title=f"{what}: options, defaults and meanings")
        t.add_column("option", overflow="fold")
        t.add_column("default", overflow="fold")
        t.add_column("meaning", overflow="fold")
        for key, value in opts.items():
            t.add_row(key, repr(value), meaning.get(key, ""))
        con.print(t)
    return 0


def meanings(name: str, *, kind: str) -> dict[str, str]:
    """Option -> meaning for the method, policy or auto-scaler (``kind``) ``name``, from
    ``goodopt/option_meanings.yaml`` (the file the documentation's options page is rendered from): its own
    sections first, then those of every method."""
    from importlib.resources import files

    import yaml

    sections = yaml.safe_load(files("goodopt").joinpath("option_meanings.yaml").read_text())
    kinds = {"policy": ("goodput-policies", "other-policies"), "auto-scaler": ("auto-scalers",)}.get(
        kind, ("milp", "ga", "heuristics", "every-method"))
    out: dict[str, str] = {}
    for key in kinds:
        sec = sections.get(key, {})
        if name not in sec.get("applies_to", []) and key != "every-method":
            continue
        for row in sec.get("rows", []):
            for option in re.findall(r"`([^`]+)`", row["option"]):
                out.setdefault(option, row["meaning"].replace("`", ""))
    return out
