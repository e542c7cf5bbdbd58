"""Readers and checks a sweep spec's fields share (:mod:`goodopt.runs.spec` uses them): names, lists, seeds,
paths relative to the spec, settings that would change nothing, the scenarios and the methods or policies
(:class:`Variant`) of a grid."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from goodopt.errors import ValidationError
from goodopt.validation import MAX_LABEL, Reader, check_label, check_number, suggest, usable_path

from ..records import Record, RecordIn

#: Most seeds per grid point.
MAX_SEEDS = 10_000
#: Bounds on a generated workload's load and hours.
MAX_LOAD, MAX_HOURS = 100.0, 24 * 365.0


#: The longest sweep name (it names the default output files).
MAX_NAME = MAX_LABEL


def check_name(where: str, name: object) -> str:
    """A sweep's name: a label, not a path (the default output ``NAME.csv`` is written beside the spec)."""
    return check_label(where, name, "give a plain label such as grid-2024, and choose where the results go with --out")


#: Engine settings of elastic clusters only.
ELASTIC_FIELDS = ("min_nodes", "provision_delay_s", "autoscale_options")


def refuse_idle_settings(config: RecordIn, vary: RecordIn) -> None:
    """Refuse settings that would change nothing: an empty ``vary`` list (a table of no rows) and elastic
    settings without an auto-scaler."""
    for key, values in vary.items():
        if not values:
            raise ValidationError(f"spec.vary.{key}", "is empty, so the sweep would have no rows",
                                  "list at least one value, or drop the key")
    if set(vary.get("autoscale", [config.get("autoscale", "none")])) == {"none"}:
        for key in ELASTIC_FIELDS:
            if key in config or key in vary:
                raise ValidationError(f"spec.{'config' if key in config else 'vary'}.{key}",
                                      "applies to an elastic cluster only, and no auto-scaler is set",
                                      "set config.autoscale (or vary it), or drop the setting")


def checked(where: str, check: Callable[..., Any], *args: Any) -> Any:  # Any: a checker and its arguments; returns the checked value
    """``check(*args)``, with a validation error re-raised under ``where`` unless it already names a file."""
    try:
        return check(*args)
    except ValidationError as exc:
        field = exc.field or ""
        if ":" in field or "/" in field or field.endswith((".yaml", ".csv")):
            raise
        same = field == where.rsplit(".", 1)[-1].split("[")[0]
        raise ValidationError(where, f"{field}: {exc.problem}" if field and not same else exc.problem,
                              exc.fix) from None


def plain_list(r: Reader, key: str, required: bool = False) -> list[Any]:  # Any: JSON-shaped items
    value = r.raw(key) if required else r.raw(key, [])
    if value is None:
        return []
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [value]
    if not isinstance(value, (list, tuple)):
        raise ValidationError(r.path(key), f"must be a list, got {type(value).__name__}")
    return list(value)


def strings(r: Reader, key: str) -> list[str]:
    out = plain_list(r, key)
    for i, v in enumerate(out):
        if not isinstance(v, str) or not v:
            raise ValidationError(f"{r.path(key)}[{i}]", f"must be a non-empty string, got {v!r}")
    return out


def seeds_of(v: object, where: str) -> tuple[int, ...]:
    if isinstance(v, int) and not isinstance(v, bool):
        if not 1 <= v <= MAX_SEEDS:
            raise ValidationError(where, f"a count of seeds must lie in [1, {MAX_SEEDS}], got {v}",
                                  "or list the seeds")
        return tuple(range(v))
    out = [v] if isinstance(v, str) else v
    if not isinstance(out, list) or not out or len(out) > MAX_SEEDS or any(
            isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < 2 ** 32 for s in out):
        raise ValidationError(where, f"must be whole numbers in [0, 2**32) (or a count), got {v!r}",
                              f"e.g. [0, 1, 2] or 3; at most {MAX_SEEDS} seeds")
    return tuple(out)


def local_path(s: object, base: Path | None) -> str:
    """A relative file path is taken relative to the spec's folder (names and families are kept)."""
    s = str(s)
    if base is None or s.startswith(("family:", "generated:")) or Path(s).is_absolute():
        return s
    cand = usable_path(base / s, "spec")
    return str(cand) if cand.exists() else s


def scenarios_of(r: Reader, base: Path | None) -> list[str]:
    """The ``scenarios`` and ``families`` of a spec, every one checked (at least one)."""
    from goodopt.sources import check_source

    scenarios = [local_path(s, base) for s in strings(r, "scenarios")]
    if r.has("families"):
        fam = r.sub("families")
        names = strings(fam, "names")
        fam_seeds = seeds_of(fam.raw("seeds", [0]), fam.path("seeds"))
        fam.done()
        scenarios += [f"family:{n}:{s}" for n in names for s in fam_seeds]
    if not scenarios:
        raise ValidationError("spec.scenarios", "no scenarios", "list scenarios or families")
    for i, sc in enumerate(scenarios):
        checked(f"spec.scenarios[{i}]", check_source, sc)
    return scenarios


def generated_workloads(g: Reader) -> list[str]:
    """The workloads of a ``generated: {loads, seeds, hours}`` block."""
    loads = [check_number(f"{g.path('loads')}[{i}]", x, minimum=0, strict=True, maximum=MAX_LOAD,
                          error=ValidationError) for i, x in enumerate(plain_list(g, "loads", required=True))]
    seeds = seeds_of(g.raw("seeds", [0]), g.path("seeds"))
    hours = g.number("hours", 8, minimum=0, strict=True, maximum=MAX_HOURS)
    g.done()
    return [f"generated:{ld:g}:{s}:{hours:g}" for ld in loads for s in seeds]


@dataclass(frozen=True)
class Variant:
    """A method or policy under a label, with its options (``pwl-8`` = ``milp-pwl`` with 8 breakpoints)."""

    label: str
    name: str
    options: Mapping[str, Any] = field(default_factory=dict)


def variants_of(r: Reader, field_name: str, key: str, known: Collection[str],
                options: Reader | None) -> tuple[Variant, ...]:
    entries = plain_list(r, field_name, required=True)
    if not entries:
        raise ValidationError(r.path(field_name), "is empty", f"list at least one {key}")
    out = []
    for i, e in enumerate(entries):
        where = f"{r.path(field_name)}[{i}]"
        if isinstance(e, str):
            label, name, opts = e, e, {}
        elif isinstance(e, Mapping):
            v = Reader(e, where, ValidationError)
            name = v.string(key)
            label = v.string("label", name)
            opts = v.sub("options").data if v.has("options") and e["options"] is not None else {}
            v.seen.add("options")
            v.done()
        else:
            raise ValidationError(where, f"entry {e!r} is neither a name nor {{label, {key}, options}}")
        if name not in known:
            raise ValidationError(where, f"unknown {key} {name!r}",
                                  f"{suggest(name, known)}choose from {', '.join(known)}")
        base = name.partition("@")[0]  # milp@scip takes milp's options, then its own
        shared = options_of(options, base) if base != name else {}
        out.append(Variant(label, name, {**shared, **options_of(options, name), **options_of(options, label),
                                         **opts}))
    labels = [v.label for v in out]
    if len(set(labels)) != len(labels):
        raise ValidationError(r.path(field_name), "labels must be unique", "give each variant its own label")
    return tuple(out)


def options_of(options: Reader | None, key: str) -> Record:
    if options is None or not options.has(key) or options.data[key] is None:
        return {}
    return dict(options.sub(key).data)


def p_to_json(p: float) -> float | str:
    return p if math.isfinite(p) else str(p)
