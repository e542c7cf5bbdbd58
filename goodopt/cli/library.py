"""``goodopt library build DIR`` and ``goodopt library verify DIR``: the benchmark library of
:mod:`goodopt.library`."""

from __future__ import annotations

import argparse

from .common import EXPORT_SEEDS, AddParser, LazyHelp, NamesAction, console, family_names


def add_parser(add: AddParser) -> None:
    """The ``library`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("library", help="build or verify a benchmark library of instances with certified values")
    sub = p.add_subparsers(dest="action", required=True)
    b = sub.add_parser("build", help="write instances, whole models, maps, certified values and a manifest")
    b.add_argument("dir", help="the library folder to write (a new folder, or one goodopt wrote)")
    b.add_argument("--tier", choices=("small", "large"), default="small",
                   help="small: every family up to 512 GPUs, seed 0; large: every family, seeds 0-2")
    b.add_argument("--names", default=None, action=NamesAction, known=family_names,
                   help=LazyHelp(lambda: "comma-separated families instead of the tier's: " + ", ".join(family_names())))
    b.add_argument("--seeds", type=EXPORT_SEEDS, default=None, help="seeds 0..N-1 instead of the tier's")
    b.add_argument("--objectives", choices=("own", "sia", "both"), default="both",
                   help="the family's p-norm objective, Sia's, or both")
    b.add_argument("--quiet", action="store_true", help="no progress lines")
    _verbose(b)
    b.set_defaults(func=run_build)
    v = sub.add_parser("verify", help="re-check every file and row of a library; exit 1 naming any that fails")
    v.add_argument("dir", nargs="?", default=None, help="the library folder (default: the shipped small tier)")
    v.add_argument("--solve", action="store_true", help="also certify every value again with a fresh solve")
    v.add_argument("--quiet", action="store_true", help="no progress lines")
    _verbose(v)
    v.set_defaults(func=run_verify)


def _verbose(p: argparse.ArgumentParser) -> None:
    """``-v`` after the action too, as after every other sub-command."""

    p.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                   help="more logging: -v progress and info, -vv goodopt's debug, -vvv every library's debug")


def run_build(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..library.build import OBJECTIVES, build, tiers
    from ..outputs import check_output

    check_output(args.dir, kind="dir", option="dir")
    tier = tiers()[args.tier]
    if args.names:
        tier = replace(tier, families=tuple(args.names.split(",")))
    if args.seeds is not None:
        tier = replace(tier, seeds=tuple(range(args.seeds)))
    if args.objectives != "both":
        tier = replace(tier, objectives=(args.objectives,))
    else:
        tier = replace(tier, objectives=OBJECTIVES)
    n = len(tier.families) * len(tier.seeds) * len(tier.objectives)
    con = console()
    with con.status(f"certifying {n} instances") as status:
        done = [0]

        def step(name: str) -> None:
            done[0] += 1
            status.update(f"certified {done[0]} of {n} instances (last {name})")

        out = build(args.dir, tier, progress=step)
    con.print(f"wrote {n} instances, library.solu, values.csv and manifest.json to {out}")
    return 0


def run_verify(args: argparse.Namespace) -> int:
    from ..library import shipped
    from ..library.verify import verify

    folder = args.dir or shipped()
    con = console()
    with con.status("verifying") as status:
        failures = verify(folder, solve=args.solve, progress=lambda name: status.update(f"verified {name}"))
    if failures:
        con.print(f"[bold red]{len(failures)} rows or files of {folder} do not hold:[/bold red]")
        for f in failures:
            con.print(f"  {f}")
        return 1
    con.print(f"every file and row of {folder} holds" + (" (values certified again)" if args.solve else ""))
    return 0
