"""``goodopt sweep``: run a sweep spec (cached, local processes or Dask) into tidy tables.

The command face of :mod:`goodopt.runs.sweep` (the sweep runner), hence the shared file name."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .common import WORKERS, AddParser, console, dask_address, print_tasks

if TYPE_CHECKING:
    from ..runs.spec import SweepSpec

def add_parser(add: AddParser) -> None:
    """The ``sweep`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("sweep", help="run a grid of solves or simulations from a YAML spec; one tidy table")
    p.add_argument("spec", help="sweep spec (YAML; its fields: the docstring of goodopt.runs.spec)")
    p.add_argument("--out", default=None, help="output CSV (default: <spec name>.csv beside the spec file)")
    p.add_argument("--cache", default=None,
                   help="cache folder of finished tasks (default: <out stem>-cache next to --out)")
    p.add_argument("--no-cache", action="store_true", help="compute every task, keep nothing")
    p.add_argument("--workers", type=WORKERS, default=None, help="local processes (default: one per CPU)")
    p.add_argument("--dask", default=None, metavar="tcp://HOST:PORT", type=dask_address,
                   help="run on this Dask scheduler instead of local processes")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--force", action="store_true", help="replace results at --out that another spec wrote (the same "
                   "spec's results are brought up to date without it)")
    p.add_argument("--dry-run", action="store_true", help="check the spec and every input and list the tasks, "
                   "then stop")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``goodopt sweep``: run a sweep spec (cached, local processes or Dask) into tidy tables."""
    from ..outputs import check_output
    from ..runs.spec import load_spec
    from ..runs.sweep import jobs_path, run_sweep, sweep_outputs

    spec = load_spec(args.spec)
    if args.dry_run:
        from ..runs.tasks import check_sim_tasks, expand

        tasks = expand(spec)
        check_sim_tasks(tasks)
        print_tasks(tasks)
        return 0
    out = Path(args.out) if args.out else Path(args.spec).parent / f"{spec.name}.csv"
    for f in sweep_outputs(out):
        check_output(f, inputs=[args.spec])
    if not args.force:
        _refuse_other_results(out, spec)
    cache = None if args.no_cache else Path(args.cache or out.with_name(f"{out.stem}-cache"))
    if cache is not None:
        check_output(cache, kind="dir", option="--cache", inputs=[args.spec, *sweep_outputs(out)],
                     replaced=False)
    workers = args.workers or (os.cpu_count() or 1)
    res = run_sweep(spec, cache_dir=cache, workers=workers, dask=args.dask, progress=not args.quiet)
    res.write(out, spec_file=str(args.spec), cache=str(cache) if cache else None,
              executor=args.dask or f"{workers} local process(es)")
    con = console()
    con.print(f"{spec.name}: {res.n_computed} task(s) computed, {res.n_cached} from the cache")
    con.print(f"wrote {out} ({len(res.table)} rows), {jobs_path(out)} ({len(res.jobs)} rows) and their "
              ".meta.json metadata")
    return 0


def _refuse_other_results(out: Path, spec: SweepSpec) -> None:
    """Refuse to replace a table at ``out`` unless this spec wrote it (re-running a sweep brings its own table up
    to date; another spec's results, or a file goodopt's metadata does not describe, are kept unless --force)."""
    import json

    from ..errors import ValidationError
    from ..outputs import json_default, meta_path
    from ..runs.spec import spec_to_dict

    if not out.exists():
        return
    try:
        written = json.loads(meta_path(out).read_text()).get("sweep")
    except (OSError, ValueError, AttributeError):
        written = None
    if written != json.loads(json.dumps(spec_to_dict(spec), default=json_default)):
        raise ValidationError("--out", f"{str(out)!r} holds the results of {'another sweep' if written else 'an earlier run'}"
                              " (a different spec, or none goodopt recorded)",
                              "give another --out or pass --force to replace them")
