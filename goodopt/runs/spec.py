"""Sweep specs: the grid a sweep runs, read from YAML and validated once.

A :class:`SweepSpec` names scenarios x methods x seeds (x objective ``p``) for
``kind: solve``, workloads x policies x seeds (x engine settings in
``vary``) for ``kind: simulate``, or scenarios x criteria x front methods
(x seeds) for ``kind: pareto``; the fields are listed below and
:func:`spec_from_dict` checks them.
:mod:`goodopt.runs.tasks` expands a spec into tasks.

Fields
------

Common fields: ``name``, ``kind`` (``solve``, ``simulate``, ``rigid`` or ``pareto``), ``seeds``
(list of whole numbers, or a count ``n`` meaning ``0..n-1``, at most
:data:`~goodopt.runs.spec_fields.MAX_SEEDS`), ``description``.

``kind: solve``: ``scenarios`` (files, shipped names, ``family:NAME:SEED``),
``families`` (``{names: [...], seeds: [...]}``, expanded to family
scenarios), ``methods`` (names or ``{label, method, options}``), ``options``
(method or label -> options), ``time_limit_s`` (wall clock: results then
depend on the machine's load), ``node_limit`` (a deterministic budget of
branch-and-bound nodes per MILP, for every method that takes one; the GA's is ``n_gen``), ``p``
(objective ``p`` values to sweep; ``-inf`` allowed). Seeds apply to
randomised methods only.

``kind: simulate``: ``workloads`` (CSV files, folders, ``generated:LOAD:SEED[:HOURS]``),
``generated`` (``{loads, seeds, hours}``), ``policies`` (names or
``{label, policy, options}``), ``options`` (policy or label -> options),
``cluster`` (a scenario whose cluster is used; default ``pollux-testbed``),
``truth`` (``model``, ``traces`` = ``$GOODOPT_TRACES``, or a folder),
``config`` (engine settings: ``interval_s``, ``restart_delay_s``,
``interference_slowdown``, ``max_time_s``), ``vary`` (engine setting -> list
of values, an extra grid axis each).

``kind: rigid`` (rigid throughput-only jobs, :mod:`goodopt.sim.rigid`):
``rates`` (jobs per hour), ``n_jobs`` per trace, ``window`` (``[lo, hi)``
job indices measured; default all), ``capacity`` (GPU type -> GPUs;
default Gavel's 36 V100 + 36 P100 + 36 K80), ``throughputs`` (Gavel's
file or a traces folder; default ``$GOODOPT_TRACES``), ``policies`` (Gavel
policy names or ``{label, policy, options}``; options: ``agnostic``,
``round_s``, ``max_time_s``, ``arrivals``, ``max_active_jobs``, ``options`` of
the LP), and for every policy ``generator`` (``gavel``: Gavel's own jobs for a
seed; ``numpy``), ``scale_factors`` (GPUs -> probability), ``arrivals`` and
``mechanism`` (``goodopt`` or ``gavel``: Gavel's own round mechanism).
A trace per rate and seed.

``preset`` (``kind: simulate``: ``pollux`` or ``sia``; ``kind: rigid``: ``gavel``) starts the engine settings
from a paper's simulator (:mod:`goodopt.sim.presets`); every setting the spec gives wins over the preset's.

``kind: pareto`` (fronts, :mod:`goodopt.runs.pareto_tasks`): ``scenarios`` and ``families`` as for
``solve``, ``objectives`` (criteria lists such as ``efficiency,fairness,cost``; default
``efficiency,fairness``), ``methods`` (``exact``, ``nsga2``, ``nsga3``, ``moead``, or ``{label, method,
options}`` with the fields of :class:`~goodopt.pareto.exact.ExactFrontOptions` or
:class:`~goodopt.pareto.heuristic.HeuristicFrontOptions`), ``prices`` (GPU type -> USD per GPU-hour, for
``cost``). Seeds apply to the heuristics.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from goodopt.errors import ValidationError
from goodopt.fitness import check_p
from goodopt.gavel import GAVEL_CLUSTER, POLICY_NAMES, read_gavel_throughputs
from goodopt.gavel.generator import check_job_table
from goodopt.pareto.criteria import parse_criteria
from goodopt.pareto.study import FRONT_METHODS, front_options
from goodopt.sim.autoscale import check_elastic, check_one_group
from goodopt.sim.config import SimConfig
from goodopt.sim.policies import POLICIES, make_policy
from goodopt.sim.presets import over_rigid_preset, rigid_preset, sim_preset
from goodopt.sim.rigid_config import RigidConfig
from goodopt.sim.workload import check_workloads, expand_workloads
from goodopt.solvers.api import METHOD_OPTIONS, METHODS, RANDOMISED, options_for
from goodopt.solvers.options import refuse_file_options
from goodopt.sources import load_scenario
from goodopt.traces import traces_dir
from goodopt.validation import Reader, check_number, read_yaml, suggest

from ..records import Record, RecordIn
from .spec_fields import (  # noqa: F401
    MAX_HOURS,
    MAX_LOAD,
    Variant,
    check_name,
    checked,
    generated_workloads,
    local_path,
    p_to_json,
    plain_list,
    refuse_idle_settings,
    scenarios_of,
    seeds_of,
    strings,
    variants_of,
)

KINDS = ("solve", "simulate", "rigid", "pareto")
#: The most tasks a sweep may hold (seeds: MAX_SEEDS; a generated workload's load and hours: MAX_LOAD, MAX_HOURS).
MAX_TASKS = 1_000_000
#: The fields of a sweep spec (the module docstring says what each means).
SPEC_FIELDS = ("name", "kind", "description", "seeds", "options", "scenarios", "families", "methods", "time_limit_s",
               "node_limit", "p", "workloads", "generated", "policies", "cluster", "truth", "config", "vary",
               "rates", "n_jobs", "window", "capacity", "throughputs", "generator", "scale_factors", "arrivals",
               "mechanism", "objectives", "prices", "preset")
#: The most jobs a rigid-job trace may hold.
MAX_RIGID_JOBS = 100_000
#: Engine settings a simulation sweep may set (``config``) or vary (``vary``).
SIM_CONFIG_FIELDS = ("interval_s", "restart_delay_s", "interference_slowdown", "max_time_s", "agent_optimism",
                     "min_nodes", "provision_delay_s")
#: Engine settings a simulation sweep may set in ``config`` as mappings (application, GPU type or option -> number).
MAPPING_FIELDS = ("restart_delays_s", "slowdowns", "prices_per_gpu_h", "autoscale_options")
#: Engine switches (true / false) a simulation sweep may set or vary.
SWITCH_FIELDS = ("single_gpu_accumulation",)
#: Engine settings naming a choice (a string) that a simulation sweep may set or vary.
CHOICE_FIELDS = ("autoscale", "agent_fit")


@dataclass(frozen=True)
class SweepSpec:
    """A sweep grid; see the module docstring and :func:`spec_from_dict` for the fields."""

    name: str
    kind: str
    variants: tuple[Variant, ...]
    seeds: tuple[int, ...] = (0,)
    # kind: solve
    scenarios: tuple[str, ...] = ()
    time_limit_s: float | None = None
    node_limit: int | None = None
    p_values: tuple[float, ...] = ()
    # kind: simulate
    workloads: tuple[str, ...] = ()
    cluster: str = "pollux-testbed"
    truth: str = "model"
    config: Mapping[str, Any] = field(default_factory=dict)
    vary: Mapping[str, Any] = field(default_factory=dict)
    # kind: rigid
    rates: tuple[float, ...] = ()
    n_jobs: int = 0
    window: tuple[int, int] | None = None
    capacity: Mapping[str, Any] = field(default_factory=dict)
    throughputs: str = ""
    #: RigidConfig settings of every policy (``generator``, ``scale_factors``, ``arrivals``), under each
    #: policy's own options.
    rigid_config: Mapping[str, Any] = field(default_factory=dict)
    # kind: pareto (with scenarios)
    objectives: tuple[str, ...] = ()
    prices: Mapping[str, Any] = field(default_factory=dict)


def load_spec(path: str | os.PathLike[str]) -> SweepSpec:
    """Read a sweep spec from YAML (its fields: the module docstring)."""
    p = Path(path)
    data = read_yaml(p, "sweep spec")
    return spec_from_dict(data, base_dir=p.parent, default_name=p.stem)


def spec_from_dict(d: RecordIn, *, base_dir: str | os.PathLike[str] | None = None,
                   default_name: str = "sweep") -> SweepSpec:
    """Validate a sweep mapping, every field and every file it names, before any work.

    The fields are those of the module docstring; every key is checked (a misspelt one is an error with a
    suggestion), as are every method's or policy's options, every scenario, workload and cluster named, and
    the grid's size (at most :data:`MAX_TASKS` tasks).
    """
    r = Reader(d, "spec", ValidationError)
    r.expect(SPEC_FIELDS)
    base = Path(base_dir) if base_dir is not None else None
    kind = r.string("kind", choices=KINDS)
    name = check_name(r.path("name"), r.optional("name", default_name.lstrip(".") or "sweep"))
    r.optional("description", "")
    seeds = seeds_of(r.raw("seeds", [0]), "spec.seeds")
    options = r.sub("options") if r.has("options") and r.data["options"] is not None else None
    if kind == "solve":
        spec = _solve_spec(r, name, seeds, options, base)
    elif kind == "rigid":
        spec = _rigid_spec(r, name, seeds, options, base)
    elif kind == "pareto":
        spec = _pareto_spec(r, name, seeds, options, base)
    else:
        spec = _simulate_spec(r, name, seeds, options, base)
    if options is not None:
        labels = {v.label for v in spec.variants} | {v.name for v in spec.variants}
        options.seen |= labels
        options.done()
    r.done()
    n_tasks = len(spec.variants) * len(seeds) * max(1, len(spec.p_values)) * \
        (len(spec.scenarios) or len(spec.workloads) or len(spec.rates)) * math.prod(len(v) for v in spec.vary.values())
    if n_tasks > MAX_TASKS:
        raise ValidationError("spec", f"the grid has {n_tasks} tasks, more than {MAX_TASKS}",
                              "split it into several sweeps or use fewer seeds / values")
    return spec


def _solve_spec(r: Reader, name: str, seeds: tuple[int, ...], options: Reader | None, base: Path | None) -> SweepSpec:
    variants = variants_of(r, "methods", "method", METHODS, options)
    scenarios = scenarios_of(r, base)
    t = r.number("time_limit_s", None, minimum=0, strict=True)
    nl = r.integer("node_limit", None, minimum=1)
    p_values = tuple(checked(f"spec.p[{i}]", check_p, p) for i, p in enumerate(plain_list(r, "p")))
    for v in variants:
        _check_method_options(v, t, nl)
    return SweepSpec(name, "solve", variants, seeds, scenarios=tuple(scenarios), time_limit_s=t, node_limit=nl,
                     p_values=p_values)


def _pareto_spec(r: Reader, name: str, seeds: tuple[int, ...], options: Reader | None,
                 base: Path | None) -> SweepSpec:
    variants = variants_of(r, "methods", "method", FRONT_METHODS, options)
    scenarios = scenarios_of(r, base)
    objectives = tuple(strings(r, "objectives") or ["efficiency,fairness"])
    prices = r.raw("prices", None) or {}
    if not isinstance(prices, Mapping):
        raise ValidationError("spec.prices", f"must map GPU type -> USD per GPU-hour, got {prices!r}",
                              "e.g. {rtx6000: 1.2}")
    for sc in scenarios:  # every criterion must be computable on every scenario (prices for cost)
        problem = load_scenario(sc).problem()
        for k, obj in enumerate(objectives):
            checked(f"spec.objectives[{k}]", parse_criteria, obj, problem, dict(prices) or None)
    for v in variants:
        checked(f"spec.methods.{v.label}.options", front_options, v.name, v.options)
    return SweepSpec(name, "pareto", variants, seeds, scenarios=tuple(scenarios), objectives=objectives,
                     prices=dict(prices))


def _simulate_spec(r: Reader, name: str, seeds: tuple[int, ...], options: Reader | None,
                   base: Path | None) -> SweepSpec:
    variants = variants_of(r, "policies", "policy", tuple(POLICIES), options)
    for v in variants:
        checked(f"spec.policies.{v.label}.options", lambda v=v: make_policy(v.name, **dict(v.options)))
    workloads = [local_path(w, base) for w in strings(r, "workloads")]
    if r.has("generated"):
        workloads += generated_workloads(r.sub("generated"))
    workloads = checked("spec.workloads", expand_workloads, workloads)
    if not workloads:
        raise ValidationError("spec.workloads", "no workloads", "list workloads or a generated block")
    preset = sim_preset(r.raw("preset"), r.path("preset")) if r.has("preset") else {}
    config = {**preset, **_engine_settings(r, "config", lambda v: [v])}
    vary = _engine_settings(r, "vary", lambda v: v if isinstance(v, list) else None)
    for key, values in vary.items():  # every value now, not on a worker
        for i, v in enumerate(values):
            checked(f"spec.vary.{key}[{i}]", lambda: SimConfig(**{**config, key: v}))
    checked("spec.config", lambda: SimConfig(**config))
    refuse_idle_settings(config, vary)
    scaled = [a for a in vary.get("autoscale", [config.get("autoscale", "none")]) if a != "none"]
    for v in variants if scaled else ():
        check_elastic(make_policy(v.name, **dict(v.options)), scaled[0], f"spec.policies.{v.label}")
    cluster = local_path(str(r.string("cluster", "pollux-testbed")), base)
    the_cluster = checked("spec.cluster", lambda: load_scenario(cluster).cluster)
    n_gpus = the_cluster.n_gpus
    if scaled:
        check_one_group(the_cluster, "spec.cluster")
    longest = max(vary.get("max_time_s", [config.get("max_time_s", SimConfig().max_time_s)]))
    check_workloads(workloads, n_gpus=n_gpus, max_time_s=longest)
    truth = r.string("truth", "model")
    if truth == "traces":
        traces_dir()  # $GOODOPT_TRACES (or the default folder) must exist now, not on a worker
    elif truth != "model":
        truth = local_path(truth, base)
        if not Path(truth).is_dir():
            raise ValidationError("spec.truth", f"{truth!r} is neither model, traces nor a traces folder",
                                  f"{suggest(truth, ('model', 'traces'))}write model, traces, or a folder path")
    return SweepSpec(name, "simulate", variants, seeds, workloads=tuple(workloads), cluster=cluster, truth=truth,
                     config=config, vary=vary)


def _rigid_spec(r: Reader, name: str, seeds: tuple[int, ...], options: Reader | None,
                base: Path | None) -> SweepSpec:
    variants = variants_of(r, "policies", "policy", POLICY_NAMES, options)
    rates = tuple(check_number(f"{r.path('rates')}[{i}]", x, minimum=0, strict=True, maximum=1e6,
                               error=ValidationError) for i, x in enumerate(plain_list(r, "rates", required=True)))
    if not rates:
        raise ValidationError("spec.rates", "is empty", "list job rates per hour, e.g. [2, 4]")
    n_jobs = r.integer("n_jobs", 500, minimum=1)
    if n_jobs > MAX_RIGID_JOBS:
        raise ValidationError("spec.n_jobs", f"must be <= {MAX_RIGID_JOBS}, got {n_jobs}", "draw fewer jobs")
    window = r.raw("window", None)
    if window is not None and (not isinstance(window, list) or len(window) != 2
                               or not all(isinstance(v, int) and not isinstance(v, bool) for v in window)
                               or not 0 <= window[0] < window[1] <= n_jobs):
        raise ValidationError("spec.window", f"must be [lo, hi] job indices with 0 <= lo < hi <= n_jobs, got "
                              f"{window!r}", "e.g. [100, 400]")
    capacity = r.raw("capacity", {t: g * n for t, g, n in GAVEL_CLUSTER})
    if not isinstance(capacity, Mapping) or not capacity:
        raise ValidationError("spec.capacity", f"must map GPU type -> GPUs, got {capacity!r}", "e.g. {v100: 36}")
    src = r.raw("throughputs", None)
    src = str(traces_dir()) if src in (None, "traces") else local_path(src, base)
    thr = checked("spec.throughputs", read_gavel_throughputs, src)
    for t, n in capacity.items():
        if t not in thr.gpu_types:
            raise ValidationError(f"spec.capacity.{t}", "no throughputs for this GPU type",
                                  f"{suggest(str(t), thr.gpu_types)}use types of {list(thr.gpu_types)}")
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1_000_000:
            raise ValidationError(f"spec.capacity.{t}", f"must be a whole number of GPUs >= 1, got {n!r}")
    common = {k: r.raw(k) for k in RIGID_COMMON if r.raw(k, None) is not None}
    if "scale_factors" in common and isinstance(common["scale_factors"], Mapping):
        common["scale_factors"] = tuple(common["scale_factors"].items())
    checked("spec", lambda: RigidConfig(**common))
    if r.has("preset"):  # each policy's settings start from the preset; the spec's own win
        variants = tuple(replace(v, options=over_rigid_preset(rigid_preset(r.raw("preset"), v.name, r.path("preset")),
                                                              {**common, **dict(v.options)})) for v in variants)
    for v in variants:
        if {**common, **dict(v.options)}.get("generator", RigidConfig.generator) == "gavel":
            check_job_table(thr, "spec.generator")
    for v in variants:
        checked(f"spec.policies.{v.label}.options",
                 lambda v=v: RigidConfig(policy=v.name, **{**common, **dict(v.options)}))
    return SweepSpec(name, "rigid", variants, seeds, rates=rates, n_jobs=n_jobs,
                     window=None if window is None else tuple(window), capacity=dict(capacity), throughputs=src,
                     rigid_config=common)


#: RigidConfig settings a rigid spec may give once for every policy.
RIGID_COMMON = ("generator", "scale_factors", "arrivals", "mechanism")


def _engine_settings(r: Reader, key: str, values_of: Callable[[Any], list[Any] | None]) -> dict[str, Any]:
    if not r.has(key) or r.data[key] is None:
        r.seen.add(key)
        return {}
    sub = r.sub(key)
    out: dict[str, Any] = {}
    known = SIM_CONFIG_FIELDS + SWITCH_FIELDS + CHOICE_FIELDS + (MAPPING_FIELDS if key == "config" else ())
    for k in sub.keys():
        if k not in known:
            raise ValidationError(sub.path(str(k)), "not an engine setting",
                                  f"{suggest(k, known)}valid settings: {', '.join(known)}")
        if k in MAPPING_FIELDS:  # application / GPU type -> number, checked by SimConfig
            out[k] = [checked(sub.path(k), lambda v: dict(SimConfig(**{k: v}).__dict__[k]), sub.raw(k))]
            continue
        values = values_of(sub.raw(k))
        if values is None:
            raise ValidationError(sub.path(k), "must be a list of values", f"e.g. {k}: [30, 60]")
        if k in SWITCH_FIELDS:
            bad = [v for v in values if not isinstance(v, bool)]
            if bad:
                raise ValidationError(sub.path(k), f"must be true or false, got {bad[0]!r}", f"e.g. {k}: false")
            out[k] = list(values)
            continue
        if k in CHOICE_FIELDS:  # the names are checked by SimConfig with the rest
            bad = [v for v in values if not isinstance(v, str)]
            if bad:
                raise ValidationError(sub.path(k), f"must be a name, got {bad[0]!r}", f"e.g. {k}: pollux")
            out[k] = list(values)
            continue
        out[k] = [check_number(f"{sub.path(k)}[{i}]", v, error=ValidationError) for i, v in enumerate(values)]
    return {k: v[0] for k, v in out.items()} if key == "config" else out


def _check_method_options(v: Variant, time_limit: float | None, node_limit: int | None) -> None:
    refuse_file_options(f"spec.methods.{v.label}.options", v.options)
    opts = {**({"seed": 0} if v.name in RANDOMISED else {}), **dict(v.options)}
    if time_limit is not None:
        opts.setdefault("time_limit_s", time_limit)
    if node_limit is not None and "node_limit" in METHOD_OPTIONS[v.name]:
        opts.setdefault("node_limit", node_limit)
    checked(f"spec.methods.{v.label}.options", options_for, v.name, opts)


def spec_to_dict(spec: SweepSpec) -> Record:
    """The YAML-ready mapping of ``spec`` (every field explicit)."""
    key = "methods" if spec.kind in ("solve", "pareto") else "policies"
    inner = "method" if spec.kind in ("solve", "pareto") else "policy"
    out: dict[str, object] = {"name": spec.name, "kind": spec.kind, "seeds": list(spec.seeds),
           key: [{"label": v.label, inner: v.name, "options": dict(v.options)} for v in spec.variants]}
    if spec.kind == "solve":
        out.update(scenarios=list(spec.scenarios), time_limit_s=spec.time_limit_s, node_limit=spec.node_limit,
                   p=[p_to_json(p) for p in spec.p_values])
    elif spec.kind == "pareto":
        out.update(scenarios=list(spec.scenarios), objectives=list(spec.objectives), prices=dict(spec.prices))
    elif spec.kind == "rigid":
        out.update(rates=list(spec.rates), n_jobs=spec.n_jobs, window=None if spec.window is None else
                   list(spec.window), capacity=dict(spec.capacity), throughputs=spec.throughputs)
    else:
        out.update(workloads=list(spec.workloads), cluster=spec.cluster, truth=spec.truth,
                   config=dict(spec.config), vary={k: list(v) for k, v in spec.vary.items()})
    return out


