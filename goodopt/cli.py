"""Command-line interface: ``goodopt info | evaluate | solve | compare | fit | simulate | sweep``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

import numpy as np
import yaml
from rich.console import Console
from rich.table import Table

from .cluster import MAX_GPUS_PER_NODE, MAX_NODES
from .errors import GoodoptError, Interrupted, ValidationError
from .yaml12 import load_yaml

log = logging.getLogger("goodopt.cli")


def _console() -> Console:
    return Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 140)


def _fmt(x, digits=3) -> str:
    return f"{x:.{digits}f}" if np.isfinite(x) else str(x)


# ------------------------------------------------------------------ commands
def cmd_info(args) -> int:
    """``goodopt info``: print a scenario's cluster, objective and jobs."""
    from .sources import load_scenario

    sc = load_scenario(args.scenario)
    pr = sc.problem()
    ev = pr.evaluator()
    con = _console()
    con.print(f"[bold]{sc.name}[/bold] {sc.description}".rstrip())
    con.print(f"cluster: {sc.cluster.describe()} = {sc.cluster.n_gpus} GPUs on {sc.cluster.n_nodes} nodes")
    o = sc.objective
    con.print(f"objective: p={o.p:g} eps={o.eps:g} base={o.base} restart_delay_s={o.restart_delay_s:g} "
              f"interference_avoidance={o.interference_avoidance}")
    s = ev.speedups(pr.current)
    t = Table(title=f"{pr.n_jobs} jobs")
    for col in ("job", "application", "age_s", "reallocs", "GPUs now", "speedup now", "realloc factor",
                "base", "phi"):
        t.add_column(col, justify="left" if col in ("job", "application", "base") else "right", overflow="fold")
    for j, job in enumerate(sc.jobs):
        phi = job.phi if job.phi is not None else float(sc.profiles[job.application].phi_at(job.epoch))
        t.add_row(job.name, job.application, f"{job.age_s:g}", str(job.n_reallocs), str(int(pr.current[j].sum())),
                  _fmt(s[j]), _fmt(pr.realloc[j]),
                  f"{pr.base_gpus[j]} x {pr.type_names[pr.base_type[j]]}", f"{phi:.4g}")
    con.print(t)
    con.print(f"fitness of the current allocation: {_fmt(ev.fitness(pr.current), 4)}; "
              f"feasible: {ev.violation(pr.current) == 0}")
    _warn_pinned(sc, pr)
    return 0


def _warn_pinned(sc, pr) -> None:
    """Warn of jobs a re-allocation factor of 0 pins to their current allocation (the ``age_s: 0`` trap)."""
    from .problem import pinned_jobs

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


def cmd_evaluate(args) -> int:
    """``goodopt evaluate``: score an allocation file on a scenario."""
    from .sources import load_scenario
    from .errors import ScenarioError
    from .validation import read_yaml

    sc = load_scenario(args.scenario)
    pr = sc.problem()
    mapping = read_yaml(args.allocation, "allocation", ScenarioError) or {}
    alloc = pr.allocation_from_mapping(mapping)
    ev = pr.evaluator()
    fit = ev.fitness(alloc)
    speed = ev.speedups(alloc)
    problems = ev.violations(alloc)
    out = {
        "fitness": fit,
        "speedups": {name: float(v) for name, v in zip(pr.job_names, speed)},
        "feasible": not problems,
        "violations": problems,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    con = _console()
    t = Table(title=f"{sc.name}: allocation {args.allocation}")
    t.add_column("job", overflow="fold")
    t.add_column("GPUs", justify="right", overflow="fold")
    t.add_column("speedup", justify="right", overflow="fold")
    for j, name in enumerate(pr.job_names):
        t.add_row(name, str(int(alloc[j].sum())), _fmt(speed[j]))
    con.print(t)
    con.print(f"fitness (p={pr.p:g}): {_fmt(fit, 4)}")
    con.print("feasible" if not problems else "INFEASIBLE:\n  " + "\n  ".join(problems))
    return 0


def _names(value: str, option: str, known) -> list[str]:
    """A comma-separated list of names, each one known (with a suggestion for a near miss)."""
    import difflib

    names = [v.strip() for v in str(value).split(",") if v.strip()]
    if not names:
        raise ValidationError(option, f"no names in {value!r}", f"e.g. {option} {','.join(list(known)[:2])}")
    for n in names:
        if n not in known:
            near = difflib.get_close_matches(n, list(known), n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise ValidationError(option, f"unknown name {n!r}", f"{hint}choose from {', '.join(known)}")
    return names


def _method_options(args, method):
    from .solvers import METHOD_OPTIONS

    opts = {}
    allowed = METHOD_OPTIONS[method] if method in METHOD_OPTIONS else {}
    if args.time_limit is not None:
        opts["time_limit_s"] = args.time_limit
    if getattr(args, "seed", None) is not None and "seed" in allowed:
        opts["seed"] = args.seed
    opts.update(_key_values(getattr(args, "option", None)))
    return opts


def _key_values(items, flag: str = "--option", example: str = "n_gen=50") -> dict:
    """``--option KEY=VALUE`` items (or another flag's) as a dict (values parsed as YAML scalars)."""
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValidationError(flag, f"expected KEY=VALUE, got {item!r}", f"e.g. {flag} {example}")
        try:
            out[key.strip()] = load_yaml(value)
        except yaml.YAMLError:
            out[key.strip()] = value
    return out


def cmd_solve(args) -> int:
    """``goodopt solve``: one method on one scenario; a table or JSON."""
    from .sources import load_scenario
    from .solvers import solve

    from .progress import status_line
    from .solvers.api import RANDOMISED

    sc = load_scenario(args.scenario)
    pr = sc.problem()
    _warn_pinned(sc, pr)
    opts = _method_options(args, args.method)
    if args.method in RANDOMISED and "seed" not in opts:
        opts["seed"] = 0
    if args.solver_log:
        opts["solver_log"] = True
    if args.write_model is not None:
        if args.method != "milp":
            raise ValidationError("--write-model", f"writes the exact method's model; {args.method} has none",
                                  "use --method milp")
        from .outputs import check_output

        check_output(args.write_model, option="--write-model", inputs=[args.scenario])
        opts["write_model"] = args.write_model
    with status_line(f"{args.method} on {sc.name}", enabled=not (args.quiet or args.json or args.solver_log)):
        res = solve(pr, args.method, opts)
    out = res.to_dict(pr)
    out["scenario"] = sc.name
    if args.json:
        print(json.dumps(out, indent=2))
        return 0 if res.has_solution else 1
    con = _console()
    con.print(f"[bold]{sc.name}[/bold]: {args.method} -> {res.status} in {res.stats.total_s:.3f} s")
    con.print(f"fitness {_fmt(res.fitness, 6)}  bound {_fmt(res.bound, 6)}  gap {_fmt(res.gap, 6)}")
    if res.message:
        con.print(res.message)
    if res.has_solution:
        t = Table(title="allocation")
        for col in ("job", "GPUs", "nodes", "speedup"):
            t.add_column(col, justify="left" if col in ("job", "nodes") else "right", overflow="fold")
        for j, name in enumerate(pr.job_names):
            row = out["allocation"][name]
            t.add_row(name, str(int(res.x[j].sum())), ", ".join(f"{n}:{g}" for n, g in row.items()),
                      _fmt(res.speedups[j]))
        con.print(t)
    return 0 if res.has_solution else 1


def _family_names() -> list[str]:
    from .families import FAMILIES

    return list(FAMILIES)


def cmd_families(args) -> int:
    """``goodopt families``: list the shipped families, or export their instances (``--export DIR``)."""
    from .families import FAMILIES, export_families

    names = args.names.split(",") if args.names else None
    if args.export is not None:
        from .outputs import check_output

        check_output(args.export, kind="dir", option="--export")
        out = export_families(args.export, args.seeds, names)
        n = len(names or FAMILIES) * args.seeds
        _console().print(f"wrote {n} instance files, their profiles and index.csv to {out}")
        return 0
    t = Table(title="scenario families (family:NAME:SEED; every seed a different round)")
    for col in ("family", "GPUs", "jobs", "GPU types", "p", "description"):
        t.add_column(col, justify="right" if col in ("GPUs", "jobs", "p") else "left", overflow="fold")
    for name in names or FAMILIES:
        f = FAMILIES[name]
        t.add_row(name, str(f.n_gpus), str(f.n_jobs), "+".join(dict.fromkeys(g for g, _, _ in f.groups)), f"{f.p:g}",
                  f.description)
    _console().print(t)
    return 0


def cmd_compare(args) -> int:
    """``goodopt compare``: methods x scenarios x seeds into one tidy CSV."""
    from .outputs import check_output
    from .runs.compare import compare
    from .outputs import output_set
    from .runs.performance import method_summary
    from .runs.plots import plot_convergence, plot_profiles
    from .runs.tables import summary, table_outputs, write_table_into

    methods = args.methods.split(",")  # checked as it was parsed (_Names)
    path = Path(args.out)
    figures = {opt: Path(f) for opt, f in (("--profile", args.profile), ("--convergence", args.convergence)) if f}
    for f in table_outputs(path):
        check_output(f, inputs=args.scenarios)
    for opt, f in figures.items():
        _check_figure_path(f, opt, [*args.scenarios, path, *(g for o, g in figures.items() if o != opt)])
    table = compare(args.scenarios, methods, n_seeds=args.seeds, time_limit_s=args.time_limit,
                    progress=not args.quiet, traces="--convergence" in figures)
    with output_set() as out:
        write_table_into(out, table.drop(columns="trace", errors="ignore"), path, scenarios=args.scenarios,
                         methods=methods, n_seeds=args.seeds, time_limit_s=args.time_limit)
        if "--profile" in figures:
            plot_profiles(table, out.path(figures["--profile"]), fmt=figures["--profile"].suffix[1:])
        if "--convergence" in figures:
            plot_convergence(table, out.path(figures["--convergence"]), fmt=figures["--convergence"].suffix[1:])
    con = _console()
    t = Table(title="comparison (fitness per method; gap to the best proven bound, nan = no bound)")
    summ = summary(table)
    for col in summ.columns:
        t.add_column(str(col), justify="left" if col in ("scenario", "method", "status") else "right", overflow="fold")
    for row in summ.itertuples(index=False):
        t.add_row(*[v if isinstance(v, str) else _fmt(v, 4) for v in row])
    con.print(t)
    if "--profile" in figures:
        t = Table(title="per method over all instances (solved: feasible and within 1e-4 of the best answer)")
        msum = method_summary(table)
        for col in msum.columns:
            t.add_column(str(col), justify="left" if col == "method" else "right", overflow="fold")
        for row in msum.itertuples(index=False):
            t.add_row(*[str(v) if isinstance(v, (str, int, np.integer)) else _fmt(v, 4) for v in row])
        con.print(t)
    con.print(f"wrote {', '.join(str(f) for f in [path, table_outputs(path)[1], *figures.values()])}")
    return 0


def _check_figure_path(path: Path, option: str, inputs) -> None:
    from .outputs import check_output

    if path.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise ValidationError(option, f"{str(path)!r} has no figure suffix", "end the path in .png, .pdf or .svg")
    check_output(path, option=option, inputs=inputs)


def cmd_fit(args) -> int:
    """``goodopt fit``: fit application profiles (and Gavel's) from the traces; every changed file is put in
    place together when all fits are done (an interrupted fit changes nothing)."""
    from .fitting import fit_application
    from .outputs import check_output, output_set
    from .progress import report, status_line
    from .traces import POLLUX_APPS, traces_dir

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
    con = _console()
    con.print(f"wrote {len(changed)} profile(s) to {out}"
              + (f"; {len(unchanged)} unchanged within the stored precision ({', '.join(unchanged)})"
                 if unchanged else ""))
    if gavel_note:
        con.print(gavel_note)
    return 0


def _print_fits(profiles: dict, root) -> None:
    t = Table(title=f"fitted profiles from {root}")
    for col in ("application", "GPU type", "points", "RMS log step", "RMS log compute", "multi-node data"):
        t.add_column(col, overflow="fold")
    for app, prof in profiles.items():
        for gpu, g in sorted(prof.gpu_types.items()):
            t.add_row(app, gpu, str(g.fit["n_points"]), f"{g.fit['rms_log_step_time']:.3f}",
                      f"{g.fit['rms_log_compute_time']:.3f}", str(g.fit["multi_node_identified"]))
    _console().print(t)


def _stage_gavel(files, gavel_file: Path, out: Path, dest: Path) -> str:
    """Stage Gavel's throughput profiles (those that changed) and the ``gavel-default.yaml`` scenario made
    from them; returns what was done, in words."""
    from .gavel import gavel_scenario, read_gavel_throughputs
    from .scenario import save_scenario, scenario_to_dict

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


def _stage_if_changed(files, profile, path: Path) -> bool:
    """Stage ``profile`` for ``path`` unless ``path`` already holds it to the stored precision (re-fits that
    differ in the last digits leave tracked files alone); returns whether it is written."""
    from .profiles import save_profile

    if _same_data(path, profile.to_dict()):
        return False
    save_profile(profile, files.path(path))
    return True


def _same_data(path: Path, new) -> bool:
    """Whether YAML file ``path`` holds ``new`` (numbers equal to 1e-6, relative, or 1e-12 absolute)."""
    import math

    from .validation import read_yaml

    def close(a, b):
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
                and not isinstance(b, bool):
            return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))
        return a == b

    return path.is_file() and close(read_yaml(path, "profile"), load_yaml(yaml.safe_dump(new)))


def _policy_options(args, policies) -> dict:
    """``--option`` items per policy: ``POLICY.KEY=VALUE`` for that policy, ``KEY=VALUE`` for every one."""
    options = _key_values(args.option)
    per_policy = {p: {k: v for k, v in options.items() if "." not in k} for p in policies}
    for key, value in options.items():
        if "." in key:
            pol, _, name = key.partition(".")
            if pol not in per_policy:
                raise ValidationError("--option", f"{key!r} names policy {pol!r}, which is not run",
                                      f"policies run: {policies}")
            per_policy[pol][name] = value
    return per_policy


def _truth_source(args) -> str:
    from .traces import traces_dir

    if args.truth == "model":
        return "model"
    try:
        return str(traces_dir(args.traces))
    except FileNotFoundError as exc:
        if args.truth == "traces":
            raise
        log.warning("%s; --truth auto uses the model ground truth of the shipped profiles", exc)
        return "model"


def cmd_simulate(args) -> int:
    """``goodopt simulate``: run workloads under policies; per-run tables and a summary table."""
    from .outputs import check_output
    from .runs.simulations import run_simulations
    from .runs.tasks import check_sim_tasks, cluster_spec, refuse_duplicates, sim_task, task_cluster
    from .sim.workload import check_workloads, expand_workloads

    out = check_output(args.out, kind="dir")
    policies = args.policy.split(",")
    per_policy = _policy_options(args, policies)
    truth = _truth_source(args)
    if args.cluster:
        cluster = args.cluster
    else:
        from .cluster import Cluster, NodeGroup

        cluster = cluster_spec(Cluster((NodeGroup(args.gpu_type, args.gpus_per_node, args.nodes),)))
    config = {"interval_s": args.interval, "restart_delay_s": args.restart_delay,
              "interference_slowdown": args.interference, "gpu_type": args.gpu_type,
              "autoscale": args.autoscale, "min_nodes": 1 if args.min_nodes is None else args.min_nodes,
              "provision_delay_s": 180.0 if args.provision_delay is None else args.provision_delay,
              "autoscale_options": _key_values(args.autoscale_option, "--autoscale-option", "every_s=600")}
    workloads = expand_workloads(args.workloads)
    _check_elastic(policies, per_policy, args)
    tasks = refuse_duplicates([sim_task(w, p, cluster, truth=truth, config=config, seed=s, options=per_policy[p])
                               for w in workloads for p in policies for s in range(args.seed, args.seed + args.seeds)])
    check_workloads(workloads, n_gpus=task_cluster(tasks[0].cluster).n_gpus,
                    max_time_s=tasks[0].config["max_time_s"])
    check_sim_tasks(tasks)
    if args.dry_run:
        _print_tasks(tasks)
        return 0
    if len(tasks) == 1:
        return _simulate_one(args, tasks[0], out, truth)
    table = run_simulations(tasks, out, workers=args.workers, progress=not args.quiet and not args.json,
                            workloads=workloads, policies=policies, truth=truth, config=config,
                            policy_options=per_policy)
    if args.json:
        print(table.to_json(orient="records", indent=2))
        return 0
    _print_policy_summary(table, len(workloads))
    _console().print(f"wrote {out}/sweep.csv (+ sweep.meta.json) and per-run tables under {out}/")
    return 0


def _check_elastic(policies, per_policy, args) -> None:
    from .sim.autoscale import check_elastic
    from .sim.policies import make_policy

    if args.autoscale == "none":
        given = [flag for flag, value in (("--min-nodes", args.min_nodes), ("--provision-delay", args.provision_delay),
                                          ("--autoscale-option", args.autoscale_option)) if value is not None]
        if given:
            raise ValidationError(given[0], "applies to an elastic cluster only, and --autoscale is none",
                                  "add --autoscale pollux|throughput|exact, or drop it")
    for p in policies:
        check_elastic(make_policy(p, **per_policy[p]), args.autoscale, "--autoscale")


def _simulate_one(args, task, out, truth) -> int:
    from .runs.tasks import run_simulation

    res, _, _ = run_simulation(task, progress=not args.quiet and not args.json)
    res.write(out)
    if args.json:
        print(json.dumps({**res.summary, "metadata": res.metadata}, indent=2, default=str))
        return 0
    tab = Table(title=f"{res.metadata['workload']} / {task.policy} "
                      f"({truth if truth == 'model' else 'trace'} ground truth)")
    tab.add_column("metric", overflow="fold")
    tab.add_column("value", justify="right", overflow="fold")
    for key in ("n_jobs", "avg_jct", "median_jct", "p99_jct", "makespan", "restarts", "avg_utilisation",
                "avg_ftf_rho", "cost", "gpu_hours", "avg_gpus", "n_rounds", "policy_s_per_round",
                "engine_s_per_round", "wall_s"):
        v = res.summary[key]
        tab.add_row(key + (" (s)" if key.endswith("jct") or key == "makespan" else ""),
                    _fmt(v, 3) if isinstance(v, float) else str(v))
    con = _console()
    con.print(tab)
    con.print(f"wrote {out}/jobs.csv, rounds.csv, allocations.csv, summary.json")
    return 0


def _print_tasks(tasks) -> None:
    con = _console()
    con.print(f"{len(tasks)} task(s); every input checked:")
    for t in tasks[:50]:
        con.print(f"  {t.describe()}")
    if len(tasks) > 50:
        con.print(f"  ... and {len(tasks) - 50} more")


def _print_policy_summary(table, n_workloads: int) -> None:
    from .sim.result import policy_summary

    summ = policy_summary(table)
    tab = Table(title=f"{n_workloads} workload(s): mean over workloads and seeds")
    for col in summ.columns:
        tab.add_column(str(col), justify="left" if col == "policy" else "right", overflow="fold")
    for row in summ.itertuples(index=False):
        tab.add_row(*[v if isinstance(v, str) else _fmt(float(v), 3) for v in row])
    _console().print(tab)


def cmd_sweep(args) -> int:
    """``goodopt sweep``: run a sweep spec (cached, local processes or Dask) into tidy tables."""
    from .outputs import check_output
    from .runs.spec import load_spec
    from .runs.sweep import jobs_path, run_sweep, sweep_outputs

    spec = load_spec(args.spec)
    if args.dry_run:
        from .runs.tasks import check_sim_tasks, expand

        tasks = expand(spec)
        check_sim_tasks(tasks)
        _print_tasks(tasks)
        return 0
    out = Path(args.out) if args.out else Path(args.spec).parent / f"{spec.name}.csv"
    for f in sweep_outputs(out):
        check_output(f, inputs=[args.spec])
    cache = None if args.no_cache else Path(args.cache or out.with_name(f"{out.stem}-cache"))
    if cache is not None:
        check_output(cache, kind="dir", option="--cache", inputs=[args.spec, *sweep_outputs(out)],
                     replaced=False)
    workers = args.workers or (os.cpu_count() or 1)
    res = run_sweep(spec, cache_dir=cache, workers=workers, dask=args.dask, progress=not args.quiet)
    res.write(out, spec_file=str(args.spec), cache=str(cache) if cache else None,
              executor=args.dask or f"{workers} local process(es)")
    con = _console()
    con.print(f"{spec.name}: {res.n_computed} task(s) computed, {res.n_cached} from the cache")
    con.print(f"wrote {out} ({len(res.table)} rows), {jobs_path(out)} ({len(res.jobs)} rows) and their "
              ".meta.json metadata")
    return 0


def cmd_reproduce(args) -> int:
    """``goodopt reproduce``: the papers' headline experiments beside the published numbers; one report."""

    from .outputs import check_output
    from .reproduce import reproduce

    check_output(args.out, kind="dir", option="--out", replaced=False)
    workers = args.workers or (os.cpu_count() or 1)
    rep = reproduce(args.experiments or None, out=args.out, quick=args.quick, traces=args.traces, workers=workers,
                    dask=args.dask, progress=not args.quiet)
    con = _console()
    t = Table(title="published vs reproduced" + (" (quick: indicative only)" if args.quick else ""))
    for col in ("experiment", "metric", "setting", "policy", "published", "reproduced", "band", "verdict"):
        t.add_column(col, justify="right" if col in ("published", "reproduced") else "left", overflow="fold")
    for r in rep.results.itertuples(index=False):
        t.add_row(r.experiment, r.metric, r.setting, r.policy, _fmt(r.published, 3), _fmt(r.reproduced, 3),
                  r.band or "-", r.verdict or "-")
    con.print(t)
    con.print(f"wrote {rep.out / 'report.md'}, results.csv and a figure per experiment "
              f"({', '.join(f'{k} {v:.0f} s' for k, v in rep.seconds.items())})")
    return 0


def cmd_options(args) -> int:
    """``goodopt options [NAME]``: the registries' methods and policies, or one's options and defaults."""
    from .sim.policies import POLICIES, policy_options
    from .solvers.api import METHOD_OPTIONS
    from .validation import suggest

    con = _console()
    if args.name is None:
        con.print("methods: " + ", ".join(METHOD_OPTIONS))
        con.print("policies: " + ", ".join(POLICIES))
        return 0
    found = [(f"method {args.name}", METHOD_OPTIONS.get(args.name)), (f"policy {args.name}",
             policy_options(args.name) if args.name in POLICIES else None)]
    found = [(what, opts) for what, opts in found if opts is not None]
    if not found:
        raise ValidationError("name", f"no method or policy is called {args.name!r}",
                              f"{suggest(args.name, [*METHOD_OPTIONS, *POLICIES])}run goodopt options to list them")
    for what, opts in found:
        t = Table(title=f"{what}: options and defaults (docs/options.md says what each means)")
        t.add_column("option", overflow="fold")
        t.add_column("default", overflow="fold")
        for key, value in opts.items():
            t.add_row(key, repr(value))
        con.print(t)
    return 0


# ------------------------------------------------------------------ plumbing
def _method_names():
    from .solvers.api import METHODS

    return METHODS


def _policy_names():
    from .sim.policies import POLICIES

    return tuple(POLICIES)


class _Names(argparse.Action):
    """A comma-separated list of known names (``single``: exactly one), checked as it is parsed, with a
    suggestion for a near miss. ``known`` is a function, so the registries load only when the option is given."""

    def __init__(self, *args, known, single=False, **kw):
        super().__init__(*args, **kw)
        self.known, self.single = known, single

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            names = _names(values, option_string, self.known())
        except ValidationError as exc:
            parser.error(f"argument {option_string}: {exc.problem} ({exc.fix})")
        if self.single and len(names) != 1:
            parser.error(f"argument {option_string}: give one name, got {values!r}")
        setattr(namespace, self.dest, names[0] if self.single else ",".join(names))


class _LazyHelp(str):
    """A help text computed when help is shown (from the registries, plug-ins included), not when the parser is
    built: the policy registry loads the simulator, which a ``solve`` does not need."""

    def __new__(cls, text, suffix: str = ""):
        obj = super().__new__(cls, "..." + suffix)
        obj.text, obj.suffix = text, suffix
        return obj

    def __add__(self, other):  # argparse appends " (default: ...)"
        return _LazyHelp(self.text, self.suffix + other)

    def __mod__(self, params):
        return (self.text() + self.suffix) % params


def _whole_in(lo: int, hi: int):
    """An argparse type: a whole number in ``[lo, hi]``."""
    def whole(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must lie in [{lo}, {hi}], got {value}")
        return value
    return whole


def _number_in(lo: float, hi: float, *, open_low: bool = True):
    """An argparse type: a finite number in ``(lo, hi]`` (``[lo, hi]`` unless ``open_low``)."""
    def number(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not (lo < value <= hi if open_low else lo <= value <= hi):
            raise argparse.ArgumentTypeError(f"must lie in {'(' if open_low else '['}{lo:g}, {hi:g}], got {text}")
        return value
    return number


def _dask_address(text):
    from .runs.execute import check_dask_address

    try:
        return check_dask_address(text)
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(f"{exc.problem} ({exc.fix})") from None


SEED = _whole_in(0, 2 ** 32 - 1)
SEEDS = _whole_in(1, 10_000)
WORKERS = _whole_in(1, 1024)
SECONDS = _number_in(0, 1e6)


def build_parser() -> argparse.ArgumentParser:
    """The ``goodopt`` argument parser with one sub-command per ``cmd_*`` function."""
    ap = argparse.ArgumentParser(prog="goodopt", description=__doc__)
    verbose = "more logging: -v progress and info, -vv goodopt's debug, -vvv every library's debug"
    ap.add_argument("-v", "--verbose", action="count", default=0, help=verbose)
    # -v is also accepted after the sub-command (its default is left to the top level)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS, help=verbose)
    sub = ap.add_subparsers(dest="command", required=True)

    def add(name, **kw):  # every sub-command: the common flags, and its defaults shown in --help
        return sub.add_parser(name, parents=[common], formatter_class=argparse.ArgumentDefaultsHelpFormatter, **kw)

    p = add("info", help="summarise a scenario (file or shipped name)")
    p.add_argument("scenario")
    p.set_defaults(func=cmd_info)

    p = add("evaluate", help="score an allocation of a scenario")
    p.add_argument("scenario")
    p.add_argument("--allocation", required=True, help="YAML/JSON file: job -> {node: GPUs}")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_evaluate)

    p = add("solve", help="solve a scenario's allocation problem with one method")
    p.add_argument("scenario", help="scenario file, shipped name, or family:NAME:SEED")
    p.add_argument("--method", default="milp", action=_Names, known=_method_names, single=True,
                   help=_LazyHelp(lambda: ", ".join(_method_names()) + " (goodopt options METHOD lists its options)"))
    p.add_argument("--time-limit", type=SECONDS, default=None, help="time limit in seconds")
    p.add_argument("--seed", type=SEED, default=None, help="seed of randomised methods (0 when not given)")
    p.add_argument("--option", action="append", help="method option KEY=VALUE (repeatable; see docs/options.md)")
    p.add_argument("--solver-log", action="store_true",
                   help="print the solver's own log (HiGHS's, or pymoo's table per generation)")
    p.add_argument("--write-model", default=None, metavar="PATH",
                   help="milp: also write the model HiGHS solved last to PATH (.mps or .lp), for other solvers")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--quiet", action="store_true", help="no status line while solving")
    p.set_defaults(func=cmd_solve)

    p = add("families", help="the shipped scenario families; --export writes their instances as files")
    p.add_argument("--export", default=None, metavar="DIR",
                   help="write each family's scenarios (seeds 0..N-1), their profiles and index.csv into DIR")
    p.add_argument("--seeds", type=SEEDS, default=3, help="seeds per family to export (default 3)")
    p.add_argument("--names", default=None, action=_Names, known=_family_names,
                   help=_LazyHelp(lambda: "comma-separated families (default all): " + ", ".join(_family_names())))
    p.set_defaults(func=cmd_families)

    p = add("compare", help="compare methods on scenarios; writes a tidy CSV")
    p.add_argument("scenarios", nargs="+", help="scenario files, shipped names, or family:NAME:SEED")
    p.add_argument("--methods", default="milp,milp-pwl,ga,greedy", action=_Names, known=_method_names,
                   help=_LazyHelp(lambda: "comma-separated, from: " + ", ".join(_method_names())))
    p.add_argument("--seeds", type=SEEDS, default=1, help="seeds per randomised method")
    p.add_argument("--time-limit", type=SECONDS, default=None, help="time limit per solve in seconds")
    p.add_argument("--out", default="compare.csv", help="output CSV (NAME.meta.json with metadata is written beside it)")
    p.add_argument("--profile", default=None, metavar="PATH",
                   help="also draw Dolan-More performance profiles (time and fitness) to PATH (.png, .pdf, .svg)")
    p.add_argument("--convergence", default=None, metavar="PATH",
                   help="also draw each solve's incumbent and bound over time to PATH (.png, .pdf, .svg)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_compare)

    p = add("fit", help="fit application profiles from the published traces")
    p.add_argument("--traces", default=None, help="traces folder (default: $GOODOPT_TRACES or ../shared/traces)")
    p.add_argument("--out", default="scenarios/profiles", help="output folder for <app>.yaml")
    p.add_argument("--apps", nargs="*", default=None, help="applications (default: the six Pollux ones)")
    p.add_argument("--scenarios", default=None,
                   help="folder for the generated gavel-default.yaml (default: the parent of --out)")
    p.add_argument("--quiet", action="store_true", help="no status line while fitting")
    p.set_defaults(func=cmd_fit)

    p = add("simulate", help="simulate workloads under scheduling policies")
    p.add_argument("workloads", nargs="+", help="workload CSVs, folders of them, or generated:LOAD:SEED")
    p.add_argument("--policy", default="pollux", action=_Names, known=_policy_names,
                   help=_LazyHelp(lambda: "policy or comma-separated policies: " + ", ".join(_policy_names())))
    p.add_argument("--traces", default=None, help="traces folder (default: $GOODOPT_TRACES or ../shared/traces)")
    p.add_argument("--truth", choices=("auto", "traces", "model"), default="auto",
                   help="ground truth: the traces (auto: when found) or the shipped profiles' model")
    p.add_argument("--interval", type=SECONDS, default=60.0, help="scheduling interval in seconds")
    p.add_argument("--restart-delay", type=_number_in(0, 1e6, open_low=False), default=30.0,
                   help="restart delay in seconds")
    p.add_argument("--interference", type=_number_in(0, 0.99, open_low=False), default=0.0,
                   help="slowdown of multi-node jobs sharing a node with another (0.25 = 25%%)")
    p.add_argument("--cluster", default=None,
                   help="take the cluster of a scenario (file, shipped name such as sia-default, or "
                        "family:NAME:SEED); overrides --nodes/--gpus-per-node/--gpu-type")
    p.add_argument("--nodes", type=_whole_in(1, MAX_NODES), default=16,
                   help="nodes in the cluster (with --autoscale: the most it may grow to)")
    p.add_argument("--gpus-per-node", type=_whole_in(1, MAX_GPUS_PER_NODE), default=4, help="GPUs per node")
    p.add_argument("--gpu-type", default="t4", help="GPU type of the nodes")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the policy's random choices")
    p.add_argument("--seeds", type=SEEDS, default=1, help="number of seeds (seed, seed+1, ...)")
    p.add_argument("--option", action="append",
                   help="policy option KEY=VALUE or POLICY.KEY=VALUE (repeatable), e.g. milp.time_limit_s=2")
    p.add_argument("--autoscale", default="none", choices=("none", "pollux", "throughput", "exact"),
                   help="an elastic cluster sized by this auto-scaler (none: a fixed cluster)")
    p.add_argument("--autoscale-option", action="append",
                   help="auto-scaler option KEY=NUMBER (repeatable), e.g. every_s=600 or gpu_worth=0.3")
    p.add_argument("--min-nodes", type=_whole_in(0, MAX_NODES), default=None,
                   help="fewest nodes of an elastic cluster, which starts with these (default 1; with --autoscale)")
    p.add_argument("--provision-delay", type=_number_in(0, 1e6, open_low=False), default=None,
                   help="seconds from requesting a node to its joining an elastic cluster (default 180; with "
                        "--autoscale)")
    p.add_argument("--workers", type=WORKERS, default=1, help="parallel processes for several runs")
    p.add_argument("--out", default="sim_out", help="output folder")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--dry-run", action="store_true", help="check every input and list the runs, then stop")
    p.set_defaults(func=cmd_simulate)

    p = add("sweep", help="run a grid of solves or simulations from a YAML spec; one tidy table")
    p.add_argument("spec", help="sweep spec (YAML; see goodopt.runs.spec.spec_from_dict)")
    p.add_argument("--out", default=None, help="output CSV (default: <spec name>.csv beside the spec file)")
    p.add_argument("--cache", default=None,
                   help="cache folder of finished tasks (default: <out stem>-cache next to --out)")
    p.add_argument("--no-cache", action="store_true", help="compute every task, keep nothing")
    p.add_argument("--workers", type=WORKERS, default=None, help="local processes (default: one per CPU)")
    p.add_argument("--dask", default=None, metavar="tcp://HOST:PORT", type=_dask_address,
                   help="run on this Dask scheduler instead of local processes")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--dry-run", action="store_true", help="check the spec and every input and list the tasks, "
                   "then stop")
    p.set_defaults(func=cmd_sweep)

    p = add("options", help="every option of a method or simulation policy, with its default (plug-ins included)")
    p.add_argument("name", nargs="?", default=None, help="a method or policy (default: list them)")
    p.set_defaults(func=cmd_options)

    p = add("reproduce", help="re-run the papers' headline experiments on the published traces; one report")
    p.add_argument("experiments", nargs="*", default=None,
                   help="experiments to run: pollux-fig8, sia-table3, gavel-hetero (default: all)")
    p.add_argument("--quick", action="store_true", help="one workload per setting (minutes; indicative only)")
    p.add_argument("--out", default="reproduce_out", help="report folder (its cache/ makes reruns resume)")
    p.add_argument("--traces", default=None, help="traces folder (default: $GOODOPT_TRACES or ../shared/traces)")
    p.add_argument("--workers", type=WORKERS, default=None, help="local processes (default: one per CPU)")
    p.add_argument("--dask", default=None, metavar="tcp://HOST:PORT", type=_dask_address,
                   help="run on this Dask scheduler instead of local processes")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_reproduce)
    return ap


def _configure_logging(verbose: int) -> None:
    """``-v``: goodopt's info; ``-vv``: goodopt's debug; ``-vvv``: every library's debug too."""
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger().setLevel(logging.DEBUG if verbose >= 3 else logging.WARNING)
    logging.getLogger("goodopt").setLevel([logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)])


def main(argv=None) -> int:
    """Entry point: parse, configure logging, run; returns the exit status (2 on bad input)."""
    _configure_logging(0)  # warnings while the arguments are read (a plug-in that fails to load) are shown too
    args = build_parser().parse_args(argv)
    _configure_logging(args.verbose)
    if not sys.stderr.isatty() and not getattr(args, "quiet", False) and not getattr(args, "json", False):
        logging.getLogger("goodopt.progress").setLevel(logging.INFO)  # no bar to show: plain progress lines
    try:
        return args.func(args)
    except Interrupted as exc:
        print(f"goodopt: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("goodopt: interrupted; nothing was written", file=sys.stderr)
        _leave_a_running_solver()
        return 130
    except GoodoptError as exc:
        print(f"goodopt: error: {exc}", file=sys.stderr)
        return 2


def _leave_a_running_solver() -> None:
    """Exit at once (status 130) if a solver asked to stop by Ctrl-C is still inside its C code: tearing the
    interpreter down around it could crash or hang the exit. Files were already closed or cleaned up."""
    import threading

    from .solvers.backend import SOLVER_THREAD

    if any(t.name == SOLVER_THREAD and t.is_alive() for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
