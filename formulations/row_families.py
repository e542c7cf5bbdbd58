"""The constraint families of the exact models, by the numbers of their docstrings.

:mod:`goodopt.formulations.milp` numbers the objective rows (0a)-(0c), the
placement level (1)-(10) and the configuration level (R2)-(R4), with no-good
cuts (C1); :mod:`goodopt.formulations.pattern_block` the node-pattern rows
(P1)-(P4), (B1), (B2), (M1), (M2). An exported model's rows are named by these
(:mod:`goodopt.solvers.milp.export`), so a violated row read off a file names
the line of the model that it breaks.
"""

from __future__ import annotations

#: One line per family: what its rows say.
FAMILIES: dict[str, str] = {
    "0a": "p = -inf epigraph: t <= eps + the job's speedup",
    "0b": "p = +inf epigraph: t <= eps + the job's speedup + S_max (1 - y_j); one y_j is 1",
    "0c": "a job is idle or runs exactly one configuration: u_j + sum of its z_c = 1",
    "1": "a job runs at most one configuration",
    "2": "a job's GPUs on a type's nodes equal its configuration's GPU count there",
    "3": "a job holds GPUs of a node only if it uses the node",
    "4": "a job uses a node only if it holds GPUs there",
    "5": "a single-node configuration uses one node",
    "6": "a multi-node configuration uses two nodes or more",
    "7": "a node's GPUs: the jobs' GPUs on it fit its capacity",
    "8": "a kept job holds its current GPUs",
    "9": "interference avoidance: at most one multi-node job per node",
    "10": "symmetry breaking between interchangeable nodes",
    "R2": "GPUs per type: the configurations' GPUs fit the type's GPUs",
    "R3": "interference avoidance: multi-node configurations' nodes fit the type's nodes",
    "R4": "bin-packing cut of single-node configurations on one node size",
    "C1": "no-good cut: a set of configurations that cannot be placed",
    "P1": "node patterns: patterns of a node class fit its free nodes",
    "B1": "a node touched by kept jobs keeps one subset of them",
    "B2": "a chosen keep configuration is kept on every node of its row",
    "P2": "node patterns: single-node slots of a size cover the moves of that size",
    "P3": "node patterns: chunks of a size cover the splits that use them",
    "P4": "node patterns: splits of a size cover the multi-node moves of that size",
    "M1": "chunk columns: a job's chunks sum to its multi-node configuration's GPUs",
    "M2": "chunk columns: a multi-node configuration takes two chunks or more",
}

#: The pyomo model's constraint components (:func:`goodopt.formulations.milp.build_model`) by family.
PYOMO_COMPONENTS: dict[str, str] = {
    "idle_job": "0c", "one_config": "1", "pick_one": "0b", "type_capacity": "R2", "multi_nodes": "R3",
    "packing": "R4", "link": "2", "use_upper": "3", "use_lower": "4", "single_node": "5", "multi_node": "6",
    "capacity": "7", "keep": "8", "multi_use": "9", "one_multi": "9", "symmetry": "10", "placement_cuts": "C1",
}


def describe(family: str) -> str:
    """The family's line, or ``""`` for a family this table does not know."""
    return FAMILIES.get(family, "")


def row_name(family: str, k: int) -> str:
    """The ``k``-th row of ``family`` as a name every MPS and LP reader takes (a letter first): ``R2_0``,
    ``F0c_3`` for (0c)."""
    return f"{family}_{k}" if family[:1].isalpha() else f"F{family}_{k}"


def family_of(name: str) -> str:
    """The family of a row named by :func:`row_name`."""
    stem = name.rsplit("_", 1)[0]
    return stem[1:] if stem[:1] == "F" and stem[1:2].isdigit() else stem
