"""A rigid run's round for its running jobs, compiled (numba): each job runs the round or until it finishes.

The loop does, job by job, what the whole-array statements of the run did (the same operations in the same
order on each job's numbers), so a run's results are the same to the last bit; it saves the two dozen array
operations a round took, which cost more than the arithmetic for the few jobs a round runs.
"""

from __future__ import annotations

from numba import njit

from ..arrays import Array


@njit(cache=True, nogil=True)
def advance_round(idx: Array, ks: Array, rates: Array, shared: Array, scale: Array, total_steps: Array,
                  done_steps: Array, gpu_s: Array, shared_s: Array, last_type: Array, changes: Array,
                  completion: Array, t: float, round_s: float, seconds: Array) -> int:
    """Jobs ``idx`` (distinct) run from ``t`` on types ``ks`` at ``rates`` (``shared``: beside a partner): each
    for ``min(round_s, left / rate)`` seconds (into ``seconds``), then completes at that time if its work is
    done (within 1e-9 of its total). Counts type changes, GPU-seconds and shared seconds; updates the per-job
    arrays (indexed by job) in place. Returns -1, or the position of the first job whose rate is not
    positive (then nothing is changed). Shapes: idx, ks, rates, shared, seconds (n,)."""
    n = len(idx)
    for i in range(n):
        if rates[i] <= 0:
            return i
    for i in range(n):
        j, k = idx[i], ks[i]
        was = last_type[j]
        if k != was and was >= 0:
            changes[j] += 1
        last_type[j] = k
        total = total_steps[j]
        left = total - done_steps[j]
        run = left / rates[i]
        s = round_s if round_s <= run else run
        seconds[i] = s
        done_steps[j] += rates[i] * s
        gpu_s[j] += scale[j] * s
        shared_s[j] += s if shared[i] else 0.0
        if s < round_s or left - rates[i] * s <= 1e-9 * total:
            done_steps[j] = total
            completion[j] = t + s
    return -1
