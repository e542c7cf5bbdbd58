"""Round-based simulation of rigid throughput-only jobs on GPU types, as Gavel's simulator runs them.

A :class:`~goodopt.gavel.RigidJob` runs ``total_steps`` steps on
``scale_factor`` GPUs of one type at a time, at that type's measured
throughput (Gavel's ``simulation_throughputs.json``, consolidated). Each round
of ``round_s`` seconds:

1. jobs whose arrival time has passed join the active set;
2. when the set of active jobs changed, the policy's time fractions ``X``
   (jobs x types) are recomputed by :func:`~goodopt.solvers.gavel.solve_gavel`
   on the active jobs' :class:`~goodopt.gavel.ThroughputMatrix` (remaining
   steps and elapsed times filled in). A *heterogeneity-agnostic* policy
   sees GPU types as interchangeable (Gavel builds its agnostic policies by
   setting every throughput to 1): it solves the policy on one pooled type
   holding every GPU, each job at throughput 1, and spreads each job's time
   over the types it can use in proportion to their GPUs -- the type-blind
   answer (an LP with equal throughputs everywhere has many optima; a simplex
   vertex would pick a type arbitrarily). Its jobs still run at their true
   speed;
3. the round mechanism (:class:`~goodopt.gavel.round_mechanism.RoundMechanism`) gives
   every job one type or nothing, all ``scale_factor`` GPUs there, in order of
   ``X / received``; GPUs are pooled per type;
4. every job with a type advances at its true throughput there; a job that
   finishes inside the round completes at that exact time and its GPUs stay
   idle for the rest of the round. No restart cost is charged (Gavel's
   simulator charges none).

That is ``mechanism: goodopt``, the default. ``mechanism: gavel`` runs steps
2 and 3 as Gavel's simulator does (:mod:`goodopt.gavel.gavel_mechanism`): the
fractions are recomputed only when the jobs changed *and* ``reset_interval_s``
passed since the last recomputation (a job arriving in between waits for it);
each type fills its GPUs from its own queue, in order of ``X`` over the job's
share of the type's time since the last recomputation; a round lasts until its
last job's share of it ends, and an idle cluster waits for the next arrival
rather than the next round; finish-time fairness counts, as Gavel does, the
isolated time of the work already done instead of the time since arrival.

**Space sharing** (a packed policy, e.g. ``max_min_fairness_packed``): the
matrix also holds every pair of active one-GPU jobs whose types Gavel measured
together and for which sharing can beat taking turns
(:func:`~goodopt.gavel.useful_pairs`); the LP gives pairs time fractions of
their own, the mechanism schedules pairs as units (a pair is placed only while
neither member is), and a pair on a type advances both members at their
measured throughputs together. A pair's partner that finishes first leaves the
other to run on at the shared rate for the rest of the round.

The run ends when every job of the measurement ``window`` (job indices
``[lo, hi)`` in arrival order; later jobs keep arriving and load the cluster)
has completed, or at ``max_time_s``: then the window's unfinished jobs are
counted at their age so far (a lower bound) and the run is marked
``saturated``. Gavel measures a window of a long trace the same way, so that
the empty start and the draining end do not count.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import cast

import numpy as np

from goodopt.errors import SimulationError, ValidationError
from goodopt.gavel import PACKED, GavelThroughputs, RigidJob, ThroughputMatrix, entity_fields, spread, useful_pairs
from goodopt.gavel.gavel_mechanism import GavelRounds
from goodopt.gavel.round_mechanism import RoundMechanism
from goodopt.solvers.gavel import check_policy_options, solve_gavel

from .rigid_config import RigidConfig, RigidResult, check_inputs
from .rigid_report import job_table, run_summary
from .round_steps import advance_round

log = logging.getLogger(__name__)

#: A longer trace when asked with how many jobs the run has (None: no more).
More = Callable[[int], Sequence[RigidJob] | None]
#: Scheduling units: a job's name (or ``a+b``) and its trace indices.
Units = list[tuple[str, tuple[int, ...]]]


def simulate_rigid(jobs: Sequence[RigidJob], throughputs: GavelThroughputs, capacity: Mapping[str, int], config: RigidConfig,
                   seed: int = 0, more: More | None = None) -> RigidResult:
    """Run ``jobs`` (:class:`~goodopt.gavel.RigidJob`, any order) on ``capacity`` (GPU type -> GPUs).

    ``seed`` draws the order in which an agnostic policy's types are filled under ``mechanism: gavel`` (Gavel
    shuffles them every round); nothing else is random. ``more(n)``, when given, is asked for a longer trace
    (the same first ``n`` jobs, then later ones; None: no more) whenever every job has arrived before the
    window finished."""
    jobs = sorted(jobs, key=lambda j: j.arrival_s)
    types = tuple(capacity)
    check_inputs(jobs, throughputs, types, capacity)
    window = config.window or (0, len(jobs))
    if window[1] > len(jobs):
        raise ValidationError("window", f"ends at job {window[1]} but the trace has {len(jobs)} jobs",
                              "use a shorter window or more jobs")
    run = _Run(jobs, throughputs, types, np.array([capacity[t] for t in types], dtype=np.int64), config,
               np.random.default_rng(seed), more)
    t0 = time.perf_counter()
    run.until_window_done(set(range(*window)))
    return RigidResult(job_table(run, window), run_summary(run, window, time.perf_counter() - t0))


def simulate_rigid_steady(trace: Callable[[int], Sequence[RigidJob]], n_jobs: int, throughputs: GavelThroughputs,
                          capacity: Mapping[str, int], config: RigidConfig, max_jobs: int = 1_000_000,
                          seed: int = 0) -> RigidResult:
    """:func:`simulate_rigid` with jobs arriving until every job of the window has finished, as Gavel's
    simulator keeps generating them: a window measured while the cluster drains would understate the load.

    ``trace(n)`` gives the first ``n`` jobs of one endless trace (the same first jobs for every ``n``, as a
    seeded generator drawing job after job does). The run starts with ``n_jobs`` of them; whenever all have
    arrived before the window finished, the trace is doubled (up to ``max_jobs``) and the run goes on with
    the later jobs arriving when they would have. Without a window every job is measured and the trace is
    run as it is.
    """
    n = int(n_jobs)
    if config.window is None:
        return simulate_rigid(trace(n), throughputs, capacity, config, seed)

    def more(have: int) -> Sequence[RigidJob] | None:
        m = min(2 * have, int(max_jobs))
        if m <= have:
            return None
        log.debug("rigid run: every job arrived before the window finished; %d -> %d jobs", have, m)
        return trace(m)

    return simulate_rigid(trace(n), throughputs, capacity, config, seed, more)


class _Run:
    """One run's mutable state."""

    def __init__(self, jobs: Sequence[RigidJob], throughputs: GavelThroughputs, types: tuple[str, ...], capacity: np.ndarray,
                 config: RigidConfig, rng: np.random.Generator, more: More | None = None) -> None:
        self.jobs: list[RigidJob] = []
        self.types, self.capacity, self.cfg = types, capacity, config
        self.throughputs, self.more = throughputs, more
        self.rate = np.zeros((0, len(types)))
        self.total_steps, self.scale = np.zeros(0), np.zeros(0, dtype=np.int64)  # per job
        self.weight, self.arrival = np.zeros(0), np.zeros(0)
        self.done_steps, self.completion, self.gpu_s = np.zeros(0), np.zeros(0), np.zeros(0)
        self.last_type, self.changes = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        self.shared_s, self.isolated_s = np.zeros(0), np.zeros(0)  # isolated_s: mechanism gavel, FTF (below)
        self._append(jobs)
        self.pair_rate: dict[tuple[int, ...], np.ndarray | None] = {}  # (job, job) -> (K, 2) rates together, or None
        self.mechanism = RoundMechanism(types)
        self.gavel = GavelRounds(len(types), config.round_s, config.reset_interval_s) \
            if config.mechanism == "gavel" else None
        self.rng = rng
        self.policy_opts = check_policy_options(config.policy, dict(config.options))  # checked once per run
        self.isolated: dict[int, tuple[float, float]] = {}  # mechanism gavel, FTF: job -> (remaining, isolated speed)
        self.units: Units = []
        self.ux, self.x_for = np.zeros((0, len(types))), cast(tuple[str, ...], ())
        self.last_unit: dict[str, int] = {}  # unit -> type it ran on last round (lease continuation)
        self.n_rounds, self.n_solves, self.lp_s = 0, 0, 0.0
        self.t = 0.0
        # mechanism gavel: the jobs last synced, with their GPUs and rates; the types in order
        self.synced: tuple[np.ndarray | None, np.ndarray, np.ndarray] = (None, self.scale, self.rate)
        self.type_order = np.arange(len(types))

    def _append(self, jobs: Sequence[RigidJob]) -> None:
        """Add later jobs of the trace (and their per-job state)."""
        n, K = len(jobs), len(self.types)
        rate = np.array([[self.throughputs.rate(t, j.job_type, j.scale_factor)
                          if self.capacity[k] >= j.scale_factor else 0.0 for k, t in enumerate(self.types)]
                         for j in jobs]).reshape(n, K)
        self.jobs = self.jobs + list(jobs)
        self.rate = np.vstack([self.rate, rate])
        self.total_steps = np.concatenate([self.total_steps, [float(j.total_steps) for j in jobs]])
        self.scale = np.concatenate([self.scale, np.array([j.scale_factor for j in jobs], dtype=np.int64)])
        self.weight = np.concatenate([self.weight, np.array([j.weight for j in jobs], dtype=float)])
        self.arrival = np.concatenate([self.arrival, np.array([j.arrival_s for j in jobs], dtype=float)])
        for name, fill, dtype in (("done_steps", 0.0, float), ("completion", np.nan, float), ("gpu_s", 0.0, float),
                                  ("last_type", -1, np.int64), ("changes", 0, np.int64), ("shared_s", 0.0, float),
                                  ("isolated_s", 0.0, float)):
            setattr(self, name, np.concatenate([getattr(self, name), np.full(n, fill, dtype=dtype)]))

    def _extend(self) -> None:
        """Ask for a longer trace and append its later jobs (they must extend the jobs run so far)."""
        got = None if self.more is None else self.more(len(self.jobs))
        longer = None if got is None else sorted(got, key=lambda j: j.arrival_s)
        if longer is None or len(longer) <= len(self.jobs):
            self.more = None
            return
        have = len(self.jobs)
        if [j.name for j in longer[:have]] != [j.name for j in self.jobs] \
                or longer[have].arrival_s < self.jobs[-1].arrival_s:
            raise SimulationError("a longer trace must begin with the jobs of the shorter one, in order")
        check_inputs(longer[have:], self.throughputs, self.types, dict(zip(self.types, self.capacity.tolist())))
        self._append(longer[have:])

    def _arrival(self, i: int) -> float | None:
        """Arrival time of the trace's ``i``-th job (the trace extended if it is the first beyond it), None
        past the end."""
        if i == len(self.jobs) and self.more is not None:
            self._extend()
        return self.jobs[i].arrival_s if i < len(self.jobs) else None

    def until_window_done(self, window: set[int]) -> None:
        cfg, nxt, left = self.cfg, 0, set(window)
        ids = np.zeros(0, dtype=np.int64)  # the active jobs (trace indices, in arrival order); a new array on a change
        while left:
            if self.t > cfg.max_time_s:
                log.info("rigid run stopped at max_time_s = %g s with %d window job(s) unfinished", cfg.max_time_s,
                         len(left))
                return
            arrived = nxt
            while (arrival := self._arrival(nxt)) is not None and arrival <= self.t:
                nxt += 1
            if nxt != arrived:
                ids = np.concatenate([ids, np.arange(arrived, nxt)])
            if cfg.max_active_jobs is not None and len(ids) > cfg.max_active_jobs:
                log.info("rigid run stopped at %g s: %d jobs queued (max_active_jobs %d)", self.t, len(ids),
                         cfg.max_active_jobs)
                return
            step = None
            if len(ids):
                step = self._round(ids.tolist()) if self.gavel is None else self._gavel_round(self.gavel, ids)
                running = np.isnan(self.completion[ids])
                if not running.all():
                    left.difference_update(ids[~running].tolist())
                    ids = ids[running]
            if step is None and (arrival := self._arrival(nxt)) is not None:  # nothing ran: on to the next arrival
                self.t = self._next_start(arrival)
                continue
            self.t += cfg.round_s if step is None else step
            self.n_rounds += 1

    def _next_start(self, arrival_s: float) -> float:
        """When the round after an idle stretch starts: the next arrival's round (goodopt's rounds keep a
        fixed grid), or the arrival itself (Gavel's simulator jumps to it)."""
        if self.gavel is not None:
            return max(self.t, arrival_s)
        return max(self.t + self.cfg.round_s, np.floor(arrival_s / self.cfg.round_s) * self.cfg.round_s)

    def _round(self, active: list[int]) -> float | None:
        """One round of goodopt's mechanism; its length (always a whole round: rounds keep a fixed grid)."""
        names = tuple(self.jobs[j].name for j in active)
        if names != self.x_for:
            self.units, self.ux = self._fractions(active)
            self.x_for = names
            self.mechanism.forget(set(self.mechanism.rounds) - {key for key, _ in self.units})
        keys = [key for key, _ in self.units]
        members = [m for _, m in self.units]
        scale = self.scale[[m[0] for m in members]]
        current = np.array([self.last_unit.get(key, -1) for key in keys], dtype=np.int64)
        assigned = self.mechanism.assign(keys, self.ux, scale, self.capacity, current, members=members)
        on = assigned >= 0
        self._check_capacity(assigned[on], scale[on])
        self.mechanism.record(keys, assigned, self.cfg.round_s)
        self.last_unit = {key: int(k) for key, k in zip(keys, assigned) if k >= 0}
        idx: list[int] = []  # a job is in at most one placed unit
        ks: list[int] = []
        rates: list[float] = []
        shared: list[bool] = []
        for mem, k in zip(members, assigned.tolist()):
            if k < 0:
                continue
            idx += mem
            ks += [k] * len(mem)
            rates += [self.rate[mem[0], k]] if len(mem) == 1 else cast(np.ndarray, self.pair_rate[mem])[k].tolist()
            shared += [len(mem) > 1] * len(mem)
        self._advance(np.array(idx, dtype=np.int64), np.array(ks, dtype=np.int64), np.array(rates, dtype=float),
                      np.array(shared, dtype=bool))
        return self.cfg.round_s

    def _gavel_round(self, g: GavelRounds, ids: np.ndarray) -> float | None:
        """One round of Gavel's mechanism ``g`` for the active jobs ``ids`` (trace indices, as the mechanism knows
        them; a new array whenever they change); it lasts until its last job's share of it ends (None: no job
        ran)."""
        if ids is not self.synced[0]:  # the same jobs as last round: syncing them would change nothing
            g.sync(ids)
            self.synced = (ids, self.scale[ids], self.rate[ids])
        _, scale, rate = self.synced
        if g.due(self.t):
            units, x = self._fractions(ids.tolist())  # one unit per job: this mechanism runs no pairs
            g.reset(self.t, [members[0] for _, members in units], x)
        order = self.rng.permutation(len(self.types)) if self.cfg.agnostic else self.type_order
        # queued without an allocation: no type (its GPUs idle this round)
        assigned = g.round_types(ids, scale, self.capacity, rate, order)
        on = assigned >= 0
        if not on.any():
            return None
        self._check_capacity(assigned[on], scale[on])
        idx, ks = ids[on], assigned[on]
        seconds = self._advance(idx, ks, self.rate[idx, ks], np.zeros(len(idx), dtype=bool))
        g.record(idx, ks, seconds)
        return float(seconds.max())

    def _check_capacity(self, types: np.ndarray, scale: np.ndarray) -> None:
        """Refuse a round that gives some GPU type more GPUs than it has."""
        if np.any(np.bincount(types, weights=scale, minlength=len(self.types)) > self.capacity):
            raise SimulationError(f"round at t={self.t:g}s: a GPU type is over capacity")

    def _advance(self, idx: np.ndarray, ks: np.ndarray, rates: np.ndarray, shared: np.ndarray) -> np.ndarray:
        """Jobs ``idx`` (distinct) run this round on types ``ks`` at ``rates`` (``shared``: beside a partner);
        each runs the round or until it finishes, then completes at that exact time. Counts type changes.
        Returns each job's seconds. Shapes: (n,) each -> (n,)."""
        seconds = np.empty(len(idx))
        bad = advance_round(idx, ks, rates, shared, self.scale, self.total_steps, self.done_steps, self.gpu_s,
                            self.shared_s, self.last_type, self.changes, self.completion, self.t, self.cfg.round_s,
                            seconds)
        if bad >= 0:
            raise SimulationError(f"job {self.jobs[idx[bad]].name} was given type {self.types[ks[bad]]!r} where "
                                  f"it cannot run")
        return seconds

    def _fractions(self, active: list[int]) -> tuple[Units, np.ndarray]:
        """The scheduling units (job name or ``a+b``, their job indices) and their time fractions (U, K)."""
        jobs = [self.jobs[j] for j in active]
        thr = self.rate[active]
        remaining = np.maximum(self.total_steps[active] - self.done_steps[active], 1e-9)
        pairs = both = None
        if self.cfg.agnostic:  # one pooled type, throughput 1: remaining work in seconds at the best speed
            names, seen, cap = cast(tuple[str, ...], ("pooled",)), np.ones((len(jobs), 1)), np.array([self.capacity.sum()])
            remaining = remaining / thr.max(axis=1)
        else:
            names, seen, cap = self.types, thr, self.capacity
            if self.cfg.policy in PACKED:
                pairs, both = self._pairs(active)
        mx = ThroughputMatrix(
            job_names=tuple(j.name for j in jobs), type_names=names, throughput=seen,
            scale_factor=self.scale[active], capacity=cap, weights=self.weight[active], remaining_steps=remaining,
            elapsed_s=np.maximum(self.t - self.arrival[active], 0.0), arrival_order=np.arange(len(jobs)),
            pairs=pairs, pair_throughput=both, **entity_fields(self.cfg.entities, jobs))
        if self.gavel is not None and self.cfg.policy == "finish_time_fairness":
            mx = mx.with_isolated_s(self._isolated_finish(active, mx, remaining))
        res = solve_gavel(mx, self.cfg.policy, self.policy_opts)
        self.n_solves += 1
        self.lp_s += res.seconds
        units: Units = [(j.name, (i,)) for i, j in zip(active, jobs)]
        x = spread(res.x[:, 0], thr > 0, self.capacity, mx.scale_factor) if self.cfg.agnostic else res.x
        if pairs is None:
            return units, x
        pair_x = cast(np.ndarray, res.pair_x)  # with pairs, the policy's answer has their fractions
        keep = np.flatnonzero(pair_x.sum(axis=1) > 1e-9)
        for a, b in pairs[keep]:
            units.append((f"{jobs[a].name}+{jobs[b].name}", (active[a], active[b])))
        return units, np.vstack([x, pair_x[keep]])

    def _isolated_finish(self, active: list[int], mx: ThroughputMatrix, remaining: np.ndarray) -> np.ndarray:
        """Gavel's finish time in isolation: the isolated time of the work done so far (summed from one
        recomputation to the next at the isolated speed of the earlier one) plus the rest at today's."""
        eq = mx.equal_share_throughput()
        for j, rest in zip(active, remaining):
            if j in self.isolated:
                before, was = self.isolated[j]
                self.isolated_s[j] += (before - rest) / was
        self.isolated = dict(zip(active, zip(remaining.tolist(), eq.tolist())))
        return np.maximum(self.isolated_s[active] + remaining / eq, 1e-9)

    def _pairs(self, active: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Useful pairs of the active one-GPU jobs (local indices) and their throughputs together (P, K, 2)."""
        ones = [i for i, j in enumerate(active) if self.jobs[j].scale_factor == 1]
        pairs: list[tuple[int, int]] = []
        both: list[np.ndarray] = []
        for n, a in enumerate(ones):
            for b in ones[n + 1:]:
                key = (active[a], active[b])
                if key not in self.pair_rate:
                    self.pair_rate[key] = pair_rates(self.throughputs, self.types, self.jobs, self.rate, *key)
                rates = self.pair_rate[key]
                if rates is not None:
                    pairs.append((a, b))
                    both.append(rates)
        if not pairs:
            return np.zeros((0, 2), dtype=np.int64), np.zeros((0, len(self.types), 2))
        return np.array(pairs, dtype=np.int64), np.array(both)


def pair_rates(throughputs: GavelThroughputs, types: tuple[str, ...], jobs: Sequence[RigidJob], rate: np.ndarray,
               ga: int, gb: int) -> np.ndarray | None:
    """(K, 2) throughputs of jobs ``ga``, ``gb`` (indices into ``jobs``, whose rates alone are ``rate`` (J, K))
    together where sharing is useful, else None."""
    a, b = jobs[ga], jobs[gb]
    out = np.zeros((len(types), 2))
    for k, t in enumerate(types):
        hit = throughputs.pairs.get((t, a.job_type, b.job_type))
        swapped = throughputs.pairs.get((t, b.job_type, a.job_type))
        if hit is not None:
            out[k] = hit
        elif swapped is not None:
            out[k] = swapped[::-1]
    alone = np.stack([rate[ga], rate[gb]], axis=1)
    out[~useful_pairs(alone[None], out[None])[0]] = 0.0
    return out if out.any() else None
