"""An elastic cluster: which nodes are provisioned, which are on their way, and what they cost.

The cluster given to the simulation is the largest one allowed. Each node
group holds between ``min_nodes`` and its full count of nodes. A requested node
is billed from the request and joins ``provision_delay_s`` later; a removed
node stops being billed at once. Within a group the billed nodes are always
the first ones, and the provisioned ones a prefix of those (requests are
served lowest index first, removals take the highest index first), so the
provisioned sub-cluster keeps its node order from round to round.

The pool integrates cost (USD) and billed GPU-hours over time; a fixed
cluster is the special case with every node provisioned from the start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from goodopt.cluster import Cluster, NodeGroup
from goodopt.errors import SimulationError


@dataclass(frozen=True)
class PoolView:
    """The provisioned nodes as a cluster of their own: ``index[v]`` is the full cluster's node ``v`` maps to."""

    cluster: Cluster | None  # None when no node is provisioned
    index: np.ndarray

    def to_full(self, x: np.ndarray, n_nodes: int) -> np.ndarray:
        """An allocation on the view as one on the full cluster. Shapes: (J, V) -> (J, N)."""
        out = np.zeros((x.shape[0], n_nodes), dtype=np.int64)
        out[:, self.index] = x
        return out


class NodePool:
    """Provisioned and provisioning nodes of one simulation (mutable; owned by the engine)."""

    def __init__(self, cluster: Cluster, usd_per_gpu_s: np.ndarray, *, elastic: bool = False, min_nodes: int = 0,
                 provision_delay_s: float = 0.0):
        self.cluster = cluster
        self.delay_s = float(provision_delay_s)
        self.min_nodes = int(min_nodes)
        starts = np.cumsum([0] + [g.n_nodes for g in cluster.groups])
        self.ranges = [np.arange(a, b) for a, b in zip(starts[:-1], starts[1:])]
        self.up = np.ones(cluster.n_nodes, dtype=bool)
        if elastic:
            self.up[:] = False
            for nodes in self.ranges:
                self.up[nodes[:min(self.min_nodes, len(nodes))]] = True
        self.ready_at = np.full(cluster.n_nodes, np.inf)  # join time of each provisioning node
        self.capacity = cluster.node_capacity
        self.usd_per_s = np.asarray(usd_per_gpu_s, dtype=float) * self.capacity
        self._segments: list[tuple[float, float, int]] = []  # (start, USD per s, billed GPUs)
        self._view: PoolView | None = None

    # --------------------------------------------------------------- state
    @property
    def billed(self) -> np.ndarray:
        """Nodes being paid for: provisioned or on their way. Shapes: (N,)."""
        return self.up | np.isfinite(self.ready_at)

    def counts(self, group: int) -> tuple[int, int]:
        """(provisioned, provisioning) nodes of node group ``group``."""
        nodes = self.ranges[group]
        return int(self.up[nodes].sum()), int(np.isfinite(self.ready_at[nodes]).sum())

    def gpus_up(self) -> int:
        return int(self.capacity[self.up].sum())

    def join(self, t: float) -> None:
        """Nodes whose provisioning delay has passed by ``t`` join."""
        ready = self.ready_at <= t
        if ready.any():
            self.up |= ready
            self.ready_at[ready] = np.inf
            self._view = None

    def resize(self, group: int, target: int, t: float) -> np.ndarray:
        """Bill ``target`` nodes of ``group`` from ``t``; the nodes it removes (provisioned ones: their jobs lose
        those GPUs). Requests join after the provisioning delay; a shrink cancels requests first."""
        nodes = self.ranges[group]
        if not self.min_nodes <= target <= len(nodes):
            raise SimulationError(f"autoscaler asked for {target} nodes of group {group}; allowed "
                                  f"[{self.min_nodes}, {len(nodes)}]")
        billed = nodes[self.billed[nodes]]
        removed = np.zeros(0, dtype=np.int64)
        if target > len(billed):
            new = nodes[len(billed):target]
            self.ready_at[new] = t + self.delay_s
            if self.delay_s == 0:
                self.join(t)
        elif target < len(billed):
            drop = billed[target:]
            removed = drop[self.up[drop]]
            self.ready_at[drop] = np.inf
            self.up[drop] = False
            self._view = None
        return removed

    def view(self) -> PoolView:
        """The provisioned nodes as a cluster (the same object while nothing changes)."""
        if self._view is None:
            if self.up.all():
                self._view = PoolView(self.cluster, np.arange(self.cluster.n_nodes))
            else:
                groups = [NodeGroup(g.gpu_type, g.gpus_per_node, int(self.up[nodes].sum()), g.prefix)
                          for g, nodes in zip(self.cluster.groups, self.ranges) if self.up[nodes].any()]
                self._view = PoolView(Cluster(tuple(groups)) if groups else None, np.flatnonzero(self.up))
        return self._view

    # ---------------------------------------------------------------- cost
    def record(self, t: float) -> float:
        """From ``t`` on, the billed nodes are those of now; returns their price (USD per hour)."""
        billed = self.billed
        rate = float(self.usd_per_s[billed].sum())
        self._segments.append((float(t), rate, int(self.capacity[billed].sum())))
        return rate * 3600.0

    def totals(self, start: float, end: float) -> tuple[float, float]:
        """Cost (USD) and billed GPU-hours between ``start`` and ``end`` (the last record lasts to ``end``)."""
        if not self._segments or end <= start:
            return 0.0, 0.0
        seg = np.array(self._segments)
        t0 = seg[:, 0]
        t1 = np.append(t0[1:], max(end, t0[-1]))
        dt = np.clip(np.minimum(t1, end) - np.maximum(t0, start), 0.0, None)
        return float((seg[:, 1] * dt).sum()), float((seg[:, 2] * dt).sum() / 3600.0)
