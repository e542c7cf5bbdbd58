"""Tiny instances and comparisons shared by the solver tests."""

import numpy as np
from hypothesis import strategies as st

from goodopt.cluster import Cluster, NodeGroup
from goodopt.generate import random_scenario
from goodopt.scenario import Objective

P_VALUES = [-np.inf, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0]
TOL = 1e-6


def tiny_problem(seed, n_nodes, cap, n_jobs, p, two_types, interference):
    if two_types and n_nodes > 1:
        groups = (NodeGroup("t4", cap, n_nodes - 1), NodeGroup("a100", cap, 1))
    else:
        groups = (NodeGroup("t4", cap, n_nodes),)
    sc = random_scenario(seed, Cluster(groups), n_jobs, running_fraction=0.7,
                         objective=Objective(p=p, interference_avoidance=interference))
    return sc.problem()


tiny = st.builds(
    tiny_problem, seed=st.integers(0, 10_000), n_nodes=st.integers(1, 3), cap=st.integers(1, 4),
    n_jobs=st.integers(1, 4), p=st.sampled_from(P_VALUES), two_types=st.booleans(), interference=st.booleans(),
)


def reference(res):
    """The reference fitness the exact model's objective was scaled to (None at p = +-inf)."""
    return res.extra.get("objective_scale", {}).get("reference")


def close(a, b, tol=TOL):
    return abs(a - b) <= tol * max(1.0, abs(b))
