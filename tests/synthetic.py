"""Hand-made allocation problems with explicit speedup tables (no profiles)."""

import numpy as np

from goodopt.problem import AllocationProblem


def make_problem(single, *, capacity, multi=None, node_type=None, type_names=("t4",), current=None,
                 realloc=None, p=-1.0, eps=1e-3, interference_avoidance=True, min_gpus=None, max_gpus=None,
                 weights=None):
    """Problem from per-job speedup lists.

    ``single[j][g]`` (or ``single[j]`` for one type) lists S at k = 1, 2, ...
    on one node; ``multi`` likewise for more than one node (default: same).
    """
    single = [row if isinstance(row[0], (list, tuple)) else [row] for row in single]
    multi = single if multi is None else [row if isinstance(row[0], (list, tuple)) else [row] for row in multi]
    J, G = len(single), len(type_names)
    capacity = np.asarray(capacity, dtype=np.int64)
    N = len(capacity)
    K = max(len(v) for row in single + multi for v in row)
    table = np.zeros((J, G, K + 1, 2))
    for j in range(J):
        for g in range(G):
            table[j, g, 1:len(single[j][g]) + 1, 0] = single[j][g]
            table[j, g, 1:len(multi[j][g]) + 1, 1] = multi[j][g]
    table[:, :, :2, 1] = table[:, :, :2, 0]
    node_type = np.zeros(N, np.int64) if node_type is None else np.asarray(node_type)
    current = np.zeros((J, N), np.int64) if current is None else np.asarray(current)
    return AllocationProblem(
        job_names=tuple(f"job{j}" for j in range(J)), node_names=tuple(f"n{n}" for n in range(N)),
        type_names=tuple(type_names), node_type=node_type, node_capacity=capacity, current=current,
        realloc=np.ones(J) if realloc is None else np.asarray(realloc, float),
        weights=np.ones(J) if weights is None else np.asarray(weights, float),
        min_gpus=np.ones(J, np.int64) if min_gpus is None else np.asarray(min_gpus),
        max_gpus=np.full(J, capacity.sum()) if max_gpus is None else np.asarray(max_gpus),
        goodput_table=table, speedup_table=table, local_bsz_table=np.zeros(table.shape, np.int64),
        accum_steps_table=np.zeros(table.shape, np.int64), base_goodput=np.ones(J),
        base_gpus=np.ones(J, np.int64), base_type=np.zeros(J, np.int64), p=p, eps=eps,
        interference_avoidance=interference_avoidance,
    )
