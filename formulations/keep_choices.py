"""The keep choices of the node-pattern rows (:mod:`goodopt.formulations.pattern_block`): each node touched by
keep configurations keeps one fitting subset of them (one ``b`` column per subset), listed here for every node
of a GPU type at once."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from goodopt.arrays import Array
from goodopt.problem import AllocationProblem

from .configs import ConfigSet

#: Keep configurations touching one node beyond which its keep subsets (2^n of them) are not listed.
MAX_KEEPS_PER_NODE = 8


@dataclass(frozen=True, eq=False)
class KeepChoices:
    """Every fitting subset of the keep configurations touching a node, which that node may keep (one ``b``
    column each), ordered by node (in the type's node order) and then by subset (as a bit mask over the node's
    keep configurations in configuration order; the empty subset first).

    Per choice: ``node``, ``residual`` GPUs and whether a multi-node job ``blocked`` the node.
    ``member_choice``/``member_config``: each (choice, kept configuration), by choice and then configuration
    order. ``pair_config``/``pair_node``: each keep configuration touching each touched node, sorted by
    configuration and then node (the rows of (B2)). ``touched``: the touched nodes, sorted.
    """

    node: Array
    residual: Array
    blocked: Array
    member_choice: Array
    member_config: Array
    pair_config: Array
    pair_node: Array
    touched: Array

    @property
    def n(self) -> int:
        return len(self.node)


def keep_choices(pr: AllocationProblem, cs: ConfigSet, nodes: Array, keeps: Array) -> tuple[KeepChoices, Array] | None:
    """``(choices, free)``: every fitting subset of the keep configurations touching each node of the type, which
    that node may keep (:class:`KeepChoices`), and the nodes none touches; None when a node is touched by more
    than :data:`MAX_KEEPS_PER_NODE`. Nodes with the same number of keep configurations are enumerated together.
    Shapes: nodes (nodes of the type,), keeps (keep configurations of the type,)."""
    keeps = np.asarray(keeps, np.int64)
    held = pr.current[cs.job[keeps]][:, nodes].T  # (nodes of the type, keeps) GPUs each keep holds there
    at_node, at_keep = np.nonzero(held > 0)  # node-major: each node's keeps in the order of ``keeps``
    count = np.bincount(at_node, minlength=len(nodes))
    if count.max(initial=0) > MAX_KEEPS_PER_NODE:
        return None
    start = np.cumsum(count) - count
    gpus, multi = held[at_node, at_keep].astype(np.int64), cs.multi[keeps[at_keep]].astype(np.int64)
    parts = [_subsets_of(t, np.flatnonzero(count == t), start, gpus, multi, pr.node_capacity[nodes])
             for t in np.unique(count[count > 0]).tolist()]
    order_key, residual, blocked, m_choice, m_entry = (np.concatenate([p[i] for p in parts]) if parts
                                                       else np.zeros(0, np.int64) for i in range(5))
    n_choices = np.array([len(p[0]) for p in parts], np.int64)
    m_choice = m_choice + np.repeat(np.cumsum(n_choices) - n_choices, [len(p[3]) for p in parts])
    order = np.argsort(order_key, kind="stable")
    new_id = np.empty_like(order)
    new_id[order] = np.arange(len(order))
    m_choice = new_id[m_choice]
    m_order = np.argsort(m_choice, kind="stable")
    pair = np.lexsort((at_node, keeps[at_keep]))
    keep = KeepChoices(node=nodes[order_key[order] >> _MASK_BITS], residual=residual[order],
                       blocked=blocked[order].astype(bool), member_choice=m_choice[m_order],
                       member_config=keeps[at_keep[m_entry[m_order]]], pair_config=keeps[at_keep[pair]],
                       pair_node=nodes[at_node[pair]], touched=np.sort(nodes[count > 0]))
    return keep, nodes[count == 0]


#: Bits of a keep subset's mask (at most :data:`MAX_KEEPS_PER_NODE` keep configurations on a node).
_MASK_BITS = MAX_KEEPS_PER_NODE + 1


def _subsets_of(t: int, at: Array, start: Array, gpus: Array, multi: Array, cap: Array) -> tuple[Array, ...]:
    """The fitting keep subsets of the nodes at positions ``at``, each touched by ``t`` keep configurations:
    ``(order key, residual, blocked, member's choice, member's entry)``, the key node position and mask, the
    members' choice counted from 0 here and their entry an index into ``gpus``. Shapes: at (nodes,), start
    (nodes of the type,) first entry of each node, gpus/multi (entries,), cap (nodes of the type,)."""
    entry = start[at][:, None] + np.arange(t)  # (nodes, t)
    members = (np.arange(1 << t)[:, None] >> np.arange(t)[None, :]) & 1  # (subsets, t)
    used, n_multi = gpus[entry] @ members.T, multi[entry] @ members.T  # (nodes, subsets)
    node_i, mask = np.nonzero((used <= cap[at][:, None]) & (n_multi <= 1))
    choice_i, member = np.nonzero(members[mask])  # by choice, then configuration order
    return ((at[node_i] << _MASK_BITS) + mask, cap[at][node_i] - used[node_i, mask], n_multi[node_i, mask] == 1,
            choice_i, entry[node_i[choice_i], member])
