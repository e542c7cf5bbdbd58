"""Cloud prices of the shipped GPU types (USD per GPU-hour, on demand), each with its source.

A simulation charges every GPU of the cluster for the time the cluster runs
and every job for the GPU-seconds it holds (:mod:`goodopt.sim.engine`); a
type without a published price costs NaN unless ``SimConfig.prices_per_gpu_h``
names it. Prices are per GPU: an instance's hourly price divided by its GPUs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

#: On-demand price per GPU-hour (USD) of each shipped GPU type with a published cloud price.
PRICES_PER_GPU_H = {
    "t4": 3.912 / 4,  # AWS g4dn.12xlarge (4 x T4, Pollux's testbed node), us-east-1 on demand: $3.912/h
    "a100": 32.7726 / 8,  # AWS p4d.24xlarge (8 x A100), us-east-1 on demand: $32.7726/h
    "v100": 2.48,  # Google Cloud on-demand V100 GPU price, as Gavel used it
    "p100": 1.46,  # Google Cloud on-demand P100 GPU price, as Gavel used it
    "k80": 0.45,  # Google Cloud on-demand K80 GPU price, as Gavel used it
}


def price_per_gpu_h(gpu_type: str, overrides: Mapping[str, float] | Iterable[tuple[str, float]] = ()) -> float:
    """The price of one GPU of ``gpu_type`` per hour: ``overrides`` (pairs or mapping) first, then
    :data:`PRICES_PER_GPU_H`, else NaN (no published price: e.g. RTX 2080Ti, Quadro RTX 6000)."""
    own = dict(overrides)
    if gpu_type in own:
        return float(own[gpu_type])
    return float(PRICES_PER_GPU_H.get(gpu_type, math.nan))
