"""The simulator's settings (:class:`SimConfig`, every time in seconds), checked once, and the published
constants they start from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from goodopt.cluster import Cluster
from goodopt.errors import ValidationError
from goodopt.fitting import OPTIMISM
from goodopt.prices import price_per_gpu_h
from goodopt.profiles import shipped_profile_names
from goodopt.validation import check_number, check_whole, suggest

from .agent import AGENT_FITS
from .autoscale import check_elastic, check_one_group, make_autoscaler
from .presets import SIA_SIM_RESTART_DELAYS_S, SIA_SIM_SLOWDOWNS, sim_preset  # noqa: F401  (importable from here)
from .workload import Workload

if TYPE_CHECKING:
    from .policies.policy import Policy
    from .workload import WorkloadJob

#: Per-application settings as sorted ``(application, number)`` pairs.
PerApp = tuple[tuple[str, float], ...]

#: Applications whose batch and GPU count the Pollux runs kept fixed: app -> (batch, GPUs).
FIXED_APPS = {"ncf": (32768, 1)}


#: Most rounds a simulation may take (max_time_s / interval_s).
MAX_ROUNDS = 10_000_000


def _per_app(name: str, value: Any, minimum: float) -> PerApp:
    """A per-application setting (mapping or pairs) as sorted ``(app, number)`` pairs, each checked."""
    pairs = value.items() if isinstance(value, Mapping) else value
    try:
        pairs = [(str(app), v) for app, v in pairs]
    except (TypeError, ValueError):
        raise ValidationError(name, f"must map application -> number, got {value!r}", "e.g. {cifar10: 50}") \
            from None
    return tuple(sorted((app, check_number(f"{name}.{app}", v, minimum=minimum)) for app, v in pairs))


def _autoscale_options(value: Any) -> dict[str, Any]:
    """``autoscale_options`` (a mapping, or option-value pairs) as a dict; anything else is refused."""
    try:
        options = dict(value.items() if isinstance(value, Mapping) else value)
    except (TypeError, ValueError):
        raise ValidationError("autoscale_options", f"must map option -> value, got {value!r}",
                              "e.g. {every_s: 600}") from None
    bad = [k for k in options if not isinstance(k, str)]
    if bad:
        raise ValidationError("autoscale_options", f"option names are text, got {bad[0]!r}", "e.g. {every_s: 600}")
    return options


@dataclass(frozen=True)
class SimConfig:
    """Engine settings (times in seconds)."""

    interval_s: float = 60.0
    restart_delay_s: float = 30.0
    #: Fraction of progress lost by a multi-node job sharing a node with another multi-node job.
    interference_slowdown: float = 0.0
    max_time_s: float = 60 * 86400.0
    fixed_apps: tuple[tuple[str, tuple[int, int]], ...] = tuple(FIXED_APPS.items())
    gpu_type: str = "t4"
    log_allocations: bool = True
    #: Weight of the job agents' optimism regulariser (Pollux's 1e-2; 0 = plain least squares).
    agent_optimism: float = OPTIMISM
    #: How job agents fit their throughput model: "pollux" (Pollux's agent: all parameters jointly from fixed
    #: starts, :func:`goodopt.agent_fit.fit_agent`) or "goodopt" (constrained least squares on log times, then
    #: the optimism refinement, :func:`goodopt.fitting.fit_observed`).
    agent_fit: str = "pollux"
    #: Per-application restart seconds overriding ``restart_delay_s`` (e.g. :data:`SIA_SIM_RESTART_DELAYS_S`).
    restart_delays_s: PerApp = ()
    #: Per-application calibration slowdowns >= 1 dividing the true goodput (e.g. :data:`SIA_SIM_SLOWDOWNS`).
    slowdowns: PerApp = ()
    #: Pollux's simulator's rule for fixed-batch jobs (ncf under Pollux, every job under the baselines): one GPU
    #: running a total batch above the application's initial batch takes at least one accumulation step.
    single_gpu_accumulation: bool = True
    #: Price per GPU-hour of GPU types (USD), over :data:`goodopt.prices.PRICES_PER_GPU_H`.
    prices_per_gpu_h: PerApp = ()
    #: Auto-scaler of an elastic cluster (:data:`goodopt.sim.autoscale.AUTOSCALERS`), or "none": a fixed cluster.
    autoscale: str = "none"
    #: Options of the auto-scaler (name -> number), e.g. ``{"every_s": 600}``.
    autoscale_options: tuple[tuple[str, Any], ...] = ()
    #: Fewest nodes an elastic cluster keeps (the largest is the simulation's cluster); it starts with these.
    min_nodes: int = 1
    #: Seconds from requesting a node to its joining (billed meanwhile): cloud GPU instances boot in minutes.
    provision_delay_s: float = 180.0

    @classmethod
    def preset(cls, name: str, **changes: Any) -> SimConfig:  # Any: field values, checked by the class
        """The settings of a paper's simulator (:data:`goodopt.sim.presets.SIM_PRESETS`: ``pollux``, ``sia``),
        with ``changes`` over them."""
        return cls(**{**sim_preset(name), **changes})

    @classmethod
    def sia(cls, **changes: Any) -> SimConfig:  # Any: field values, checked by the class
        """The settings of Sia's simulator: its per-application restart delays and calibration slowdowns."""
        return cls.preset("sia", **changes)

    def restart_delay_of(self, app: str) -> float:
        return dict(self.restart_delays_s).get(app, self.restart_delay_s)

    def slowdown_of(self, app: str) -> float:
        return dict(self.slowdowns).get(app, 1.0)

    def price_of(self, gpu_type: str) -> float:
        """USD per GPU-hour of ``gpu_type`` (NaN without a published or given price)."""
        return price_per_gpu_h(gpu_type, self.prices_per_gpu_h)

    def __post_init__(self) -> None:
        object.__setattr__(self, "restart_delays_s", _per_app("restart_delays_s", self.restart_delays_s, 0.0))
        object.__setattr__(self, "slowdowns", _per_app("slowdowns", self.slowdowns, 1.0))
        object.__setattr__(self, "prices_per_gpu_h", _per_app("prices_per_gpu_h", self.prices_per_gpu_h, 0.0))
        check_number("interval_s", self.interval_s, minimum=0, strict=True)
        check_number("restart_delay_s", self.restart_delay_s, minimum=0)
        check_number("max_time_s", self.max_time_s, minimum=0, strict=True)
        check_number("agent_optimism", self.agent_optimism, minimum=0)
        if self.agent_fit not in AGENT_FITS:
            raise ValidationError("agent_fit", f"unknown fit {self.agent_fit!r}", f"choose {' or '.join(AGENT_FITS)}")
        check_number("provision_delay_s", self.provision_delay_s, minimum=0)
        object.__setattr__(self, "min_nodes", check_whole("min_nodes", self.min_nodes, 0))
        options = _autoscale_options(self.autoscale_options)
        object.__setattr__(self, "autoscale_options", tuple(sorted(options.items())))
        if self.autoscale != "none":
            make_autoscaler(self.autoscale, **options)  # names and options checked here, once
        if not isinstance(self.single_gpu_accumulation, bool):
            raise ValidationError("single_gpu_accumulation", f"must be true or false, got {self.single_gpu_accumulation!r}")
        if self.max_time_s / self.interval_s > MAX_ROUNDS:
            raise ValidationError("interval_s", f"{self.interval_s:g} s rounds over max_time_s = "
                                  f"{self.max_time_s:g} s would be more than {MAX_ROUNDS:.0e} rounds",
                                  f"use an interval >= {self.max_time_s / MAX_ROUNDS:g} s or a lower max_time_s")
        if not 0 <= self.interference_slowdown < 1:
            raise ValidationError("interference_slowdown", f"must lie in [0, 1), got {self.interference_slowdown}",
                                  "0.25 means a 25% slower job")


def fixed_gpus(config: SimConfig) -> dict[str, int]:
    """Application -> the GPU count the engine fixes its jobs to (only applications that fix one)."""
    return {app: gpus for app, (_, gpus) in dict(config.fixed_apps).items() if gpus}


def check_setup(workload: Workload, cluster: Cluster, policy: Policy, config: SimConfig) -> None:
    """Every check a run makes before its first round, without running it (dry runs call this too)."""
    check_elastic_setup(policy, config, cluster)
    check_per_app_settings(workload, config)
    policy.check_workload(workload, cluster, fixed_gpus(config))


def check_per_app_settings(workload: Workload | Sequence[WorkloadJob], config: SimConfig) -> None:
    """Every application named by ``restart_delays_s`` or ``slowdowns`` is one goodopt ships a profile of or
    one of the workload's: a misspelt name would silently set nothing."""
    jobs = workload.jobs if isinstance(workload, Workload) else workload
    known = set(shipped_profile_names()) | {wj.application for wj in jobs}
    for name in ("restart_delays_s", "slowdowns"):
        for app, _ in getattr(config, name):
            if app not in known:
                raise ValidationError(f"{name}.{app}", f"no job of the workload runs {app!r}, and goodopt ships "
                                      "no profile of that name", f"{suggest(app, known)}applications: "
                                      f"{', '.join(sorted(known))}")


def check_elastic_setup(policy: Policy, config: SimConfig, cluster: Cluster) -> None:
    """An elastic cluster needs one node group, ``min_nodes`` within it and a policy that plans on whatever
    is provisioned; a fixed cluster takes no ``min_nodes`` other than the default."""
    if config.autoscale == "none":
        return

    check_one_group(cluster)
    fewest = min(g.n_nodes for g in cluster.groups)
    if config.min_nodes > fewest:
        raise ValidationError("min_nodes", f"{config.min_nodes} is more than the cluster's {fewest} nodes "
                              f"({cluster.describe()}), the most an elastic cluster may grow to",
                              f"use at most {fewest}, or a larger cluster")
    check_elastic(policy, config.autoscale)
