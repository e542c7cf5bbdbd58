"""Named presets: the settings each paper's simulator ran with, under the paper's name.

A preset is a starting point, not a mode: it fills in settings, and every setting given beside it wins. It is
expanded where the settings are read (:meth:`goodopt.sim.config.SimConfig.preset`,
:meth:`goodopt.sim.rigid_config.RigidConfig.preset`, ``preset:`` in a sweep spec, ``goodopt simulate
--preset``), so a run under a preset is the same run, with the same cache key, as one that spells its settings
out.

Simulations of elastic jobs (:data:`SIM_PRESETS`, the fields of ``SimConfig``):

``pollux``
    Pollux's simulator (OSDI'21 artifact): 60-s rounds, 30-s restarts, job agents fitted as Pollux's agent does
    with its optimism regulariser, ncf kept at its batch on one GPU. These are ``SimConfig``'s defaults.
``sia``
    Sia's simulator (SOSP'23 artifact): Pollux's settings with Sia's per-application checkpoint-restore delays
    (:data:`SIA_SIM_RESTART_DELAYS_S`) and calibration slowdowns (:data:`SIA_SIM_SLOWDOWNS`).

Rigid-job runs (:data:`RIGID_PRESETS`, the fields of ``RigidConfig``):

``gavel``
    Gavel's simulator (OSDI'20 artifact): its own round mechanism (``mechanism: gavel``), 6-minute rounds, jobs
    of the endless trace arriving until the measured window has finished (``arrivals: until_window``), Gavel's
    own job generator, every policy's LP solved by an interior-point method as Gavel's ECOS does
    (``lp_method: ipm``: a point inside the optimal face, not a vertex), and max-min fairness (LAS) as Gavel
    writes it: throughputs scaled by the job's GPU count and no second stage.
"""

from __future__ import annotations

from typing import Any

from goodopt.errors import ValidationError
from goodopt.validation import suggest

from ..records import Record

#: Sia's simulator: checkpoint-restore seconds charged per re-allocation, per application (others: the flat
#: ``restart_delay_s``), from the Sia artifact's simulator.
SIA_SIM_RESTART_DELAYS_S = {"cifar10": 50.0, "deepspeech2": 25.0, "bert": 120.0, "yolov3": 80.0, "imagenet": 250.0}


#: Sia's simulator: each job's true goodput is divided by a calibration slowdown (its jobs observe unslowed
#: times), from the Sia artifact's simulator.
SIA_SIM_SLOWDOWNS = {"cifar10": 1.8, "ncf": 1.5, "bert": 1.2, "deepspeech2": 1.2, "imagenet": 1.2, "yolov3": 1.2}


#: Preset name -> the ``SimConfig`` settings it sets (the module docstring says where each comes from).
SIM_PRESETS: dict[str, dict[str, Any]] = {
    "pollux": {},
    "sia": {"restart_delays_s": SIA_SIM_RESTART_DELAYS_S, "slowdowns": SIA_SIM_SLOWDOWNS},
}


#: Preset name -> the ``RigidConfig`` settings it sets for every policy.
RIGID_PRESETS: dict[str, dict[str, Any]] = {
    "gavel": {"mechanism": "gavel", "arrivals": "until_window", "round_s": 360.0, "generator": "gavel"},
}


#: Preset name -> the LP options it sets: ``"*"`` for every policy, a policy's name for that policy (over ``"*"``).
RIGID_PRESET_LP_OPTIONS: dict[str, dict[str, dict[str, Any]]] = {
    "gavel": {"*": {"lp_method": "ipm"},
              "max_min_fairness": {"lp_method": "ipm", "second_stage": False, "scale_by_size": True}},
}


def _check_name(name: object, known: dict[str, Any], field: str, other: dict[str, Any], other_kind: str) -> str:
    if isinstance(name, str) and name in known:
        return name
    hint = (f"{name!r} is a preset of {other_kind}; " if isinstance(name, str) and name in other else
            suggest(str(name), known))
    raise ValidationError(field, f"unknown preset {name!r}", f"{hint}presets here: {', '.join(known)}")


def sim_preset(name: object, field: str = "preset") -> Record:
    """The ``SimConfig`` settings of preset ``name`` (a copy); an unknown name is an error naming ``field``."""
    name = _check_name(name, SIM_PRESETS, field, RIGID_PRESETS, "rigid-job runs (kind: rigid)")
    return {k: dict(v) if isinstance(v, dict) else v for k, v in SIM_PRESETS[name].items()}


def rigid_preset(name: object, policy: str, field: str = "preset") -> Record:
    """The ``RigidConfig`` settings of preset ``name`` for ``policy``, its LP ``options`` included (a copy)."""
    name = _check_name(name, RIGID_PRESETS, field, SIM_PRESETS, "simulations (kind: simulate)")
    lp = RIGID_PRESET_LP_OPTIONS.get(name, {})
    return {**RIGID_PRESETS[name], "options": dict(lp.get(policy, lp.get("*", {})))}


def over_rigid_preset(preset: Record, given: Record) -> Record:
    """``given`` settings over a rigid ``preset``: each given setting wins, LP ``options`` merged key by key."""
    lp = {**dict(preset.get("options", {})), **dict(given.get("options", {}))}
    return {**preset, **given, "options": lp}
