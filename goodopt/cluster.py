"""Cluster topologies: groups of identical nodes, each node of one GPU type."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .errors import ScenarioError

#: Size bounds of a cluster (far above the 2048-GPU studies; they keep every array in memory).
MAX_NODES, MAX_GPUS_PER_NODE = 4096, 64


@dataclass(frozen=True)
class NodeGroup:
    """``n_nodes`` identical nodes with ``gpus_per_node`` GPUs of ``gpu_type``.

    Nodes are named ``<prefix>-<i>`` (prefix defaults to the GPU type), numbered
    across all groups sharing a prefix.
    """

    gpu_type: str
    gpus_per_node: int
    n_nodes: int
    prefix: str | None = None

    def __post_init__(self) -> None:
        if not self.gpu_type:
            raise ScenarioError("gpu_type", "must be a non-empty string")
        if not 1 <= self.gpus_per_node <= MAX_GPUS_PER_NODE:
            raise ScenarioError("gpus_per_node", f"must lie in [1, {MAX_GPUS_PER_NODE}], got {self.gpus_per_node}")
        if not 1 <= self.n_nodes <= MAX_NODES:
            raise ScenarioError("n_nodes", f"must lie in [1, {MAX_NODES}], got {self.n_nodes}",
                                "model larger clusters as several studies of a part")


@dataclass(frozen=True)
class Cluster:
    """A cluster as an ordered tuple of node groups."""

    groups: tuple[NodeGroup, ...]

    def __post_init__(self) -> None:
        if not self.groups:
            raise ScenarioError("cluster.node_groups", "must list at least one node group")
        object.__setattr__(self, "groups", tuple(self.groups))
        if sum(g.n_nodes for g in self.groups) > MAX_NODES:
            raise ScenarioError("cluster.node_groups", f"more than {MAX_NODES} nodes in all",
                                "model larger clusters as several studies of a part")
        if len(set(self.node_names)) != len(self.node_names):
            raise ScenarioError("cluster.node_groups", "node names collide", "give the groups distinct prefixes")

    @cached_property
    def node_names(self) -> tuple[str, ...]:
        """Node names ``<prefix>-<i>`` in node order."""
        names: list[str] = []
        counters: dict[str, int] = {}
        for g in self.groups:
            prefix = g.prefix or g.gpu_type
            start = counters.get(prefix, 0)
            names += [f"{prefix}-{start + i}" for i in range(g.n_nodes)]
            counters[prefix] = start + g.n_nodes
        return tuple(names)

    @cached_property
    def node_gpu_types(self) -> tuple[str, ...]:
        """GPU type of each node. Shapes: (N,)."""
        return tuple(g.gpu_type for g in self.groups for _ in range(g.n_nodes))

    @cached_property
    def node_capacity(self) -> np.ndarray:
        """GPUs per node. Shapes: (N,)."""
        return np.array([g.gpus_per_node for g in self.groups for _ in range(g.n_nodes)], dtype=np.int64)

    @cached_property
    def gpu_type_names(self) -> tuple[str, ...]:
        """Distinct GPU types in order of first appearance."""
        return tuple(dict.fromkeys(self.node_gpu_types))

    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def n_gpus(self) -> int:
        return int(self.node_capacity.sum())

    def gpus_of_type(self, gpu_type: str) -> int:
        """Total GPUs of one type."""
        return int(sum(g.gpus_per_node * g.n_nodes for g in self.groups if g.gpu_type == gpu_type))

    def max_gpus_per_node(self, gpu_type: str) -> int:
        return max(g.gpus_per_node for g in self.groups if g.gpu_type == gpu_type)

    def describe(self) -> str:
        """A short human-readable summary such as ``16 x 4 t4``."""
        return " + ".join(f"{g.n_nodes}x{g.gpus_per_node} {g.gpu_type}" for g in self.groups)
