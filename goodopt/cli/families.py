"""``goodopt families``: list the shipped families, or export their instances (``--export DIR``).

The command face of :mod:`goodopt.families` (the families), hence the shared file name."""

from __future__ import annotations

import argparse

from rich.table import Table

from .common import EXPORT_SEEDS, AddParser, LazyHelp, NamesAction, console, family_names


def add_parser(add: AddParser) -> None:
    """The ``families`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("families", help="the shipped scenario families; --export writes their instances as files")
    p.add_argument("--export", default=None, metavar="DIR",
                   help="write each family's scenarios (seeds 0..N-1), their profiles and index.csv into DIR")
    p.add_argument("--seeds", type=EXPORT_SEEDS, default=3, help="seeds per family to export (default 3)")
    p.add_argument("--names", default=None, action=NamesAction, known=family_names,
                   help=LazyHelp(lambda: "comma-separated families (default all): " + ", ".join(family_names())))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``goodopt families``: list the shipped families, or export their instances (``--export DIR``)."""
    from ..families import FAMILIES, export_families

    names = args.names.split(",") if args.names else None
    if args.export is not None:
        from ..outputs import check_output

        check_output(args.export, kind="dir", option="--export")
        out = export_families(args.export, args.seeds, names)
        n = len(names or FAMILIES) * args.seeds
        console().print(f"wrote {n} instance files, their profiles and index.csv to {out}")
        return 0
    t = Table(title="scenario families (family:NAME:SEED; every seed a different round)")
    for col in ("family", "GPUs", "jobs", "GPU types", "p", "description"):
        t.add_column(col, justify="right" if col in ("GPUs", "jobs", "p") else "left", overflow="fold")
    for name in names or FAMILIES:
        f = FAMILIES[name]
        t.add_row(name, str(f.n_gpus), str(f.n_jobs), "+".join(dict.fromkeys(g for g, _, _ in f.groups)), f"{f.p:g}",
                  f.description)
    console().print(t)
    return 0
