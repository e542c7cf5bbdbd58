"""``goodopt options [NAME]``: the registries' methods and policies, or one's options and defaults."""

from __future__ import annotations

from rich.table import Table

from ..errors import ValidationError
from .common import console


def add_parser(add) -> None:
    """The ``options`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("options", help="every option of a method or simulation policy, with its default (plug-ins included)")
    p.add_argument("name", nargs="?", default=None, help="a method or policy (default: list them)")
    p.set_defaults(func=run)


def run(args) -> int:
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
    shown: list[tuple[str, dict]] = [(what, opts) for what, opts in found if opts is not None]
    if not found:
        raise ValidationError("name", f"no method or policy is called {args.name!r}",
                              f"{suggest(args.name, [*METHOD_OPTIONS, *POLICIES])}run goodopt options to list them")
    for what, opts in shown:
        t = Table(title=f"{what}: options and defaults (docs/options.md says what each means)")
        t.add_column("option", overflow="fold")
        t.add_column("default", overflow="fold")
        for key, value in opts.items():
            t.add_row(key, repr(value))
        con.print(t)
    return 0
