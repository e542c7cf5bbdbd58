"""Sweep specs: the grid a sweep runs, read from YAML and validated once.

A :class:`SweepSpec` names scenarios x methods x seeds (x objective ``p``) for
``kind: solve``, or workloads x policies x seeds (x engine settings in
``vary``) for ``kind: simulate``; :func:`spec_from_dict` lists every field.
:mod:`goodopt.runs.tasks` expands a spec into tasks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from goodopt.errors import ValidationError

KINDS = ("solve", "simulate")
#: Engine settings a simulation sweep may set (``config``) or vary (``vary``).
SIM_CONFIG_FIELDS = ("interval_s", "restart_delay_s", "interference_slowdown", "max_time_s")


@dataclass(frozen=True)
class Variant:
    """A method or policy under a label, with its options (``pwl-8`` = ``milp-pwl`` with 8 breakpoints)."""

    label: str
    name: str
    options: Mapping = field(default_factory=dict)


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
    config: Mapping = field(default_factory=dict)
    vary: Mapping = field(default_factory=dict)


def load_spec(path) -> SweepSpec:
    """Read a sweep spec from YAML (see :func:`spec_from_dict` for the fields)."""
    p = Path(path)
    if not p.is_file():
        raise ValidationError("spec", f"sweep spec {str(p)!r} not found", "give the path of a YAML file")
    try:
        data = yaml.safe_load(p.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ValidationError("spec", f"{p} is not valid YAML: {exc}") from None
    return spec_from_dict(data, base_dir=p.parent, default_name=p.stem)


def spec_from_dict(d: Mapping, *, base_dir=None, default_name: str = "sweep") -> SweepSpec:
    """Validate a sweep mapping.

    Common fields: ``name``, ``kind`` (``solve`` or ``simulate``), ``seeds``
    (list of ints, or a count ``n`` meaning ``0..n-1``).

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
    """
    if not isinstance(d, Mapping):
        raise ValidationError("spec", f"must be a mapping, got {type(d).__name__}")
    known = {"name", "kind", "seeds", "scenarios", "families", "methods", "options", "time_limit_s", "node_limit", "p",
             "workloads", "generated", "policies", "cluster", "truth", "config", "vary", "description"}
    unknown = sorted(set(d) - known)
    if unknown:
        raise ValidationError(f"spec.{unknown[0]}", "unknown field", f"valid fields: {', '.join(sorted(known))}")
    kind = d.get("kind")
    if kind not in KINDS:
        raise ValidationError("spec.kind", f"must be one of {KINDS}, got {kind!r}")
    seeds = _seeds(d.get("seeds", [0]))
    options = d.get("options") or {}
    if not isinstance(options, Mapping):
        raise ValidationError("spec.options", "must map a method/policy (or label) to its options")
    base = Path(base_dir) if base_dir is not None else None
    name = str(d.get("name", default_name))
    if kind == "solve":
        from goodopt.solvers.api import METHODS

        variants = _variants(d.get("methods"), "methods", "method", METHODS, options)
        scenarios = [_local(s, base) for s in _list(d.get("scenarios", []), "spec.scenarios")]
        fam = d.get("families")
        if fam is not None:
            if not isinstance(fam, Mapping) or "names" not in fam:
                raise ValidationError("spec.families", "must be {names: [...], seeds: [...]}")
            scenarios += [f"family:{n}:{s}" for n in _list(fam["names"], "spec.families.names")
                          for s in _seeds(fam.get("seeds", [0]), "spec.families.seeds")]
        if not scenarios:
            raise ValidationError("spec.scenarios", "no scenarios", "list scenarios or families")
        t = d.get("time_limit_s")
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0):
            raise ValidationError("spec.time_limit_s", f"must be a number > 0, got {t!r}", "omit it for no limit")
        nl = d.get("node_limit")
        if nl is not None and (isinstance(nl, bool) or not isinstance(nl, int) or nl < 1):
            raise ValidationError("spec.node_limit", f"must be a whole number >= 1, got {nl!r}",
                                  "omit it for no node budget")
        from goodopt.fitness import check_p

        p_values = tuple(check_p(p) for p in _list(d.get("p", []), "spec.p"))
        return SweepSpec(name, kind, variants, seeds, scenarios=tuple(scenarios),
                         time_limit_s=None if t is None else float(t), node_limit=nl, p_values=p_values)
    from goodopt.sim.policies import POLICIES

    variants = _variants(d.get("policies"), "policies", "policy", tuple(POLICIES), options)
    workloads = [_local(w, base) for w in _list(d.get("workloads", []), "spec.workloads")]
    gen = d.get("generated")
    if gen is not None:
        if not isinstance(gen, Mapping) or "loads" not in gen:
            raise ValidationError("spec.generated", "must be {loads: [...], seeds: [...], hours: H}")
        hours = gen.get("hours", 8)
        loads = [float(x) for x in _list(gen["loads"], "spec.generated.loads")]
        workloads += [f"generated:{ld:g}:{s}:{hours:g}" for ld in loads
                      for s in _seeds(gen.get("seeds", [0]), "spec.generated.seeds")]
    from goodopt.sim.workload import expand_workloads

    workloads = expand_workloads(workloads)
    if not workloads:
        raise ValidationError("spec.workloads", "no workloads", "list workloads or a generated block")
    config = dict(d.get("config") or {})
    vary = {k: list(_list(v, f"spec.vary.{k}")) for k, v in (d.get("vary") or {}).items()}
    for key in [*config, *vary]:
        if key not in SIM_CONFIG_FIELDS:
            raise ValidationError(f"spec.config.{key}", "not an engine setting",
                                  f"valid settings: {', '.join(SIM_CONFIG_FIELDS)}")
    from goodopt.sim.engine import SimConfig

    for key, values in vary.items():  # validate every value now, not on a worker
        for v in values:
            SimConfig(**{**config, key: v})
    SimConfig(**config)
    truth = str(d.get("truth", "model"))
    if truth not in ("model", "traces"):
        truth = _local(truth, base)
    return SweepSpec(name, kind, variants, seeds, workloads=tuple(workloads), cluster=_local(
        str(d.get("cluster", "pollux-testbed")), base), truth=truth, config=config, vary=vary)


def _list(v, where) -> list:
    if v is None:
        return []
    if isinstance(v, (str, int, float)):
        return [v]
    if not isinstance(v, Iterable):
        raise ValidationError(where, f"must be a list, got {type(v).__name__}")
    return list(v)


def _seeds(v, where="spec.seeds") -> tuple[int, ...]:
    if isinstance(v, int) and not isinstance(v, bool):
        if v < 1:
            raise ValidationError(where, f"a count of seeds must be >= 1, got {v}")
        return tuple(range(v))
    out = _list(v, where)
    if not out or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in out):
        raise ValidationError(where, f"must be whole numbers >= 0 (or a count), got {v!r}")
    return tuple(out)


def _local(s, base) -> str:
    """A relative file path is taken relative to the spec's folder (names and families are kept)."""
    s = str(s)
    if base is None or s.startswith(("family:", "generated:")) or Path(s).is_absolute():
        return s
    cand = base / s
    return str(cand) if cand.exists() else s


def _variants(entries, field_name, key, known, options) -> tuple[Variant, ...]:
    entries = _list(entries, f"spec.{field_name}")
    if not entries:
        raise ValidationError(f"spec.{field_name}", "is empty", f"list at least one {key}")
    out = []
    for e in entries:
        if isinstance(e, str):
            label, name, opts = e, e, {}
        elif isinstance(e, Mapping) and key in e:
            name = str(e[key])
            label, opts = str(e.get("label", name)), dict(e.get("options") or {})
        else:
            raise ValidationError(f"spec.{field_name}", f"entry {e!r} is neither a name nor {{label, {key}, options}}")
        if name not in known:
            raise ValidationError(f"spec.{field_name}", f"unknown {key} {name!r}", f"choose from {', '.join(known)}")
        merged = {**dict(options.get(name) or {}), **dict(options.get(label) or {} if label != name else {}), **opts}
        out.append(Variant(label, name, merged))
    labels = [v.label for v in out]
    if len(set(labels)) != len(labels):
        raise ValidationError(f"spec.{field_name}", "labels must be unique", "give each variant its own label")
    return tuple(out)


def spec_to_dict(spec: SweepSpec) -> dict:
    """The YAML-ready mapping of ``spec`` (every field explicit)."""
    key = "methods" if spec.kind == "solve" else "policies"
    inner = "method" if spec.kind == "solve" else "policy"
    out = {"name": spec.name, "kind": spec.kind, "seeds": list(spec.seeds),
           key: [{"label": v.label, inner: v.name, "options": dict(v.options)} for v in spec.variants]}
    if spec.kind == "solve":
        out.update(scenarios=list(spec.scenarios), time_limit_s=spec.time_limit_s, node_limit=spec.node_limit,
                   p=[p_to_json(p) for p in spec.p_values])
    else:
        out.update(workloads=list(spec.workloads), cluster=spec.cluster, truth=spec.truth,
                   config=dict(spec.config), vary={k: list(v) for k, v in spec.vary.items()})
    return out


def p_to_json(p: float):
    return p if math.isfinite(p) else str(p)
