"""A job's progress through one round of the simulation: restart wait, optimiser steps, epoch boundaries.

The engine (:mod:`goodopt.sim.engine`) calls :func:`advance_job` for every job holding GPUs, once a round.
"""

from __future__ import annotations

from .state import SimJob
from .truth import AppTruth


def advance_job(job: SimJob, app: AppTruth, t: float, seconds: float, slow: float, slowdown: float, adaptive: bool, *,
                hetero: bool) -> None:
    """Run ``job`` for ``seconds`` from ``t`` on its allocation (no-op while restarting), under ``app``, its
    ground truth on the GPU type it holds: progress per second is ``gain / iteration time * slow /
    slowdown`` (``slow`` the interference factor, ``slowdown`` its application's calibration slowdown: the
    truth is slowed, the job's agent observes it unslowed); the agent observes each epoch's first step and,
    for an ``adaptive`` job with no fixed batch, re-picks the batch at every epoch boundary."""
    gpu_type = job.gpu_type if hetero else None  # the agent's model of this type (None: its only one)
    wait = min(job.restart_left_s, seconds)
    job.restart_left_s -= wait
    left = seconds - wait
    now = t + wait
    target = app.target_epochs
    placement = job.placement
    observed = False
    while left > 1e-9:
        batch = job.local_bsz * job.n_gpus * (job.accum_steps + 1)
        step, sync = app.times(placement, job.local_bsz)
        t_iter = step + job.accum_steps * max(step - sync, 0.0)
        rate = app.gain(batch, job.epoch) / t_iter * slow / slowdown  # progress per second
        if not observed:
            job.agent.observe(placement, job.local_bsz, step, sync, app.phi(batch, job.epoch), gpu_type=gpu_type)
            observed = True
        boundary = app.epoch_end_progress[job.epoch]
        need = (boundary - job.progress) / rate
        if need > left:
            job.progress += rate * left
            now += left
            left = 0.0
        else:
            job.progress = float(boundary)
            job.epoch += 1
            now += need
            left -= need
            if job.epoch >= target:
                job.completion_s = now
                return
            job.agent.observe(placement, job.local_bsz, step, sync, app.phi(batch, job.epoch), gpu_type=gpu_type)
            if adaptive and job.agent.fixed_batch is None:
                job.local_bsz, job.accum_steps = job.agent.choose(placement, refit=False, gpu_type=gpu_type)
