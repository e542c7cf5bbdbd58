"""The engine's questions to the policy, each round: its answer (a plug-in's failure named as such) and the check of
that allocation (the invariants of :mod:`goodopt.sim.engine`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from goodopt.errors import GoodoptError, SimulationError

from ..arrays import ArrayIn
from .state import RoundState


def check_allocation(alloc: ArrayIn, state: RoundState, node_type: np.ndarray, types: tuple[str, ...] | list[str] | None,
                     policy_name: str) -> np.ndarray:
    """A policy's answer for ``state`` as a (J, N) int64 array of GPU counts, or a
    :class:`~goodopt.errors.SimulationError` naming the round, the policy and what is wrong: not an array of
    whole, non-negative GPU counts of the state's shape, a node over capacity, a job on two GPU types
    (``types``: the cluster's type names where it has several, else None; ``node_type`` indexes them), or a
    job with a fixed GPU count holding another."""
    J, N = state.n_jobs, state.cluster.n_nodes
    where = f"round {state.round_index} (t={state.time_s:g}s), policy {policy_name!r}"
    try:
        a = np.asarray(alloc)
    except (TypeError, ValueError):
        raise SimulationError(f"{where}: the allocation is not an array of GPU counts") from None
    if a.shape != (J, N):
        raise SimulationError(f"{where}: allocation has shape {a.shape}, expected {(J, N)}")
    if a.dtype.kind not in "iufb" or (a.dtype.kind == "f" and not np.all(np.isfinite(a))):
        raise SimulationError(f"{where}: the allocation holds {a.dtype} values, not whole GPU counts")
    if a.dtype.kind not in "iu":
        if not np.all(a == np.round(a)):
            raise SimulationError(f"{where}: allocation holds fractional GPUs")
        a = a.astype(np.int64)
    if np.any(a < 0):
        raise SimulationError(f"{where}: negative GPU counts")
    over = np.flatnonzero(a.sum(axis=0) > state.cluster.node_capacity)
    if len(over):
        n = over[0]
        raise SimulationError(f"{where}: node {state.cluster.node_names[n]} over capacity "
                              f"({a[:, n].sum()} > {state.cluster.node_capacity[n]})")
    if types is not None:
        per_type = np.stack([(a[:, node_type == g]).sum(axis=1) for g in range(len(types))], axis=1)
        mixed = np.flatnonzero((per_type > 0).sum(axis=1) > 1)
        if len(mixed):
            j = mixed[0]
            raise SimulationError(f"{where}: job {state.jobs[j].name} spans GPU types "
                                  f"{[types[g] for g in np.flatnonzero(per_type[j])]}")
    for j, job in enumerate(state.jobs):
        if job.fixed_gpus is not None and a[j].sum() not in (0, job.fixed_gpus):
            raise SimulationError(f"{where}: job {job.name} must run on exactly {job.fixed_gpus} GPU(s), "
                                  f"got {a[j].sum()}")
    return a


def ask_policy(policy: Any, state: RoundState) -> Any:  # any object with allocate(state); its answer is checked next
    """The policy's answer; a plug-in's exception (a policy not of goodopt's own) ends the run as a
    :class:`SimulationError` naming the policy and the round, its traceback chained."""
    if type(policy).__module__.split(".")[0] == "goodopt":
        return policy.allocate(state)
    try:
        return policy.allocate(state)
    except GoodoptError:
        raise
    except Exception as exc:  # noqa: BLE001 -- someone else's code: its failure is its run's
        raise SimulationError(f"round {state.round_index} (t={state.time_s:g}s): plug-in policy "
                              f"{policy.name!r} raised {type(exc).__name__}: {exc}") from exc
