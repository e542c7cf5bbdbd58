"""``goodopt fit``: fit application profiles (and Gavel's) from the traces; every changed file is put in"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from rich.table import Table

from ..yaml12 import load_yaml
from .common import AddParser, console

if TYPE_CHECKING:
    from ..outputs import OutputSet
    from ..profiles import AppProfile


def add_parser(add: AddParser) -> None:
    """The ``fit`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("fit", help="fit application profiles from the published traces")
    p.add_argument("--traces", default=None, help="traces folder (default: $GOODOPT_TRACES or ../shared/traces)")
    p.add_argument("--out", default="scenarios/profiles", help="output folder for <app>.yaml")
    p.add_argument("--apps", nargs="*", default=None, help="applications (default: the six Pollux ones)")
    p.add_argument("--scenarios", default=None,
                   help="folder for the generated gavel-default.yaml (default: the parent of --out)")
    p.add_argument("--quiet", action="store_true", help="no status line while fitting")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``goodopt fit``: fit application profiles (and Gavel's) from the traces; every changed file is put in
    place together when all fits are done (an interrupted fit changes nothing)."""
    from ..fitting import fit_application
    from ..outputs import check_output, output_set
    from ..progress import report, status_line
    from ..traces import POLLUX_APPS, traces_dir

    root = traces_dir(args.traces)
    out = check_output(args.out, kind="dir", option="--out", replaced=False)
    dest = check_output(args.scenarios or out.parent, kind="dir", option="--scenarios", replaced=False)
    apps = args.apps or POLLUX_APPS
    profiles = {}
    for i, app in enumerate(apps):
        with status_line(f"fitting {app} ({i + 1}/{len(apps)})", enabled=not args.quiet):
            report("fitting %s (%d/%d)", app, i + 1, len(apps))
            profiles[app] = fit_application(root, app)
    gavel_file = root / "gavel" / "simulation_throughputs.json"
    with output_set() as files:
        changed = [app for app, prof in profiles.items() if _stage_if_changed(files, prof, out / f"{app}.yaml")]
        gavel_note = _stage_gavel(files, gavel_file, out, dest) if gavel_file.is_file() else ""
    _print_fits(profiles, root)
    unchanged = [app for app in apps if app not in changed]
    con = console()
    con.print(f"wrote {len(changed)} profile(s) to {out}"
              + (f"; {len(unchanged)} unchanged within the stored precision ({', '.join(unchanged)})"
                 if unchanged else ""))
    if gavel_note:
        con.print(gavel_note)
    return 0


def _print_fits(profiles: dict[str, AppProfile], root: Path) -> None:
    t = Table(title=f"fitted profiles from {root}")
    for col in ("application", "GPU type", "points", "RMS log step", "RMS log compute", "multi-node data"):
        t.add_column(col, overflow="fold")
    for app, prof in profiles.items():
        for gpu, g in sorted(prof.gpu_types.items()):
            t.add_row(app, gpu, str(g.fit["n_points"]), f"{g.fit['rms_log_step_time']:.3f}",
                      f"{g.fit['rms_log_compute_time']:.3f}", str(g.fit["multi_node_identified"]))
    console().print(t)


def _stage_gavel(files: OutputSet, gavel_file: Path, out: Path, dest: Path) -> str:
    """Stage Gavel's throughput profiles (those that changed) and the ``gavel-default.yaml`` scenario made
    from them; returns what was done, in words."""
    from ..gavel import gavel_scenario, read_gavel_throughputs
    from ..scenario import save_scenario, scenario_to_dict

    g = read_gavel_throughputs(gavel_file)
    n_changed = sum(_stage_if_changed(files, prof, out / "gavel" / f"{name}.yaml")
                    for name, prof in g.profiles().items())
    sc = gavel_scenario(g)
    rel = {app: os.path.relpath((out / "gavel" / f"{app}.yaml").resolve(), dest.resolve())
           for app in sorted(sc.profiles)}
    target = dest / "gavel-default.yaml"
    if _same_data(target, scenario_to_dict(sc, rel)):
        return f"{n_changed} of {len(g.job_types)} Gavel throughput profiles changed in {out / 'gavel'}; " \
               f"{target} unchanged"
    save_scenario(sc, files.path(target), profile_paths=rel)
    return f"{n_changed} of {len(g.job_types)} Gavel throughput profiles changed in {out / 'gavel'}; wrote {target}"


def _stage_if_changed(files: OutputSet, profile: Any, path: Path) -> bool:
    """Stage ``profile`` for ``path`` unless ``path`` already holds it to the stored precision (re-fits that
    differ in the last digits leave tracked files alone); returns whether it is written."""
    from ..profiles import save_profile

    if _same_data(path, profile.to_dict()):
        return False
    save_profile(profile, files.path(path))
    return True


def _same_data(path: Path, new: Any) -> bool:
    """Whether YAML file ``path`` holds ``new`` (numbers equal to 1e-6, relative, or 1e-12 absolute)."""
    import math

    from ..validation import read_yaml

    def close(a: Any, b: Any) -> bool:  # Any: numbers or arrays, compared elementwise
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
                and not isinstance(b, bool):
            return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))
        return a == b

    return path.is_file() and close(read_yaml(path, "profile"), load_yaml(yaml.safe_dump(new)))
