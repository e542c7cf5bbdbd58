"""How close a front comes to a reference front (the exact one): hypervolume, IGD+ and the additive epsilon
indicator (moocore's), and the share of the reference's points it attains.

Every criterion is first scaled by the reference front to ``[0, 1]``, 0 its best value and 1 its worst, and
minimised, so that no unit outweighs another; the hypervolume's reference point is 1.1 in every criterion, and
``hv_ratio`` is the front's hypervolume over the reference front's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import Array
from ..errors import ValidationError
from .front import Front, quantized

#: The hypervolume's reference point, in scaled criteria.
HV_REFERENCE = 1.1
#: The indicators a front is judged by (the fields of :class:`Indicators` but the unscaled hypervolume).
JUDGED = ("hv_ratio", "igd_plus", "eps_additive", "attained")
#: A reference point counts as attained when the front holds a point at most this much worse (scaled) in each criterion.
ATTAIN_TOL = 1e-6


@dataclass(frozen=True)
class Indicators:
    """Of one front against a reference: ``hv`` (scaled), ``hv_ratio`` (to the reference's), ``igd_plus``,
    ``eps_additive`` (the least shift, scaled, that makes the front weakly dominate the reference) and
    ``attained`` (share of the reference's points weakly dominated within :data:`ATTAIN_TOL`)."""

    hv: float
    hv_ratio: float
    igd_plus: float
    eps_additive: float
    attained: float


def scaled(values: Array, reference: Front) -> Array:
    """``values`` scaled by the reference front (0 best, 1 worst, minimised). Shapes: (n, K) -> (n, K)."""
    ref = reference.values
    sign = np.where(reference.maximise, -1.0, 1.0)
    r = ref * sign
    lo, hi = r.min(axis=0), r.max(axis=0)
    span = np.where(hi - lo > 0, hi - lo, 1.0)
    return (np.asarray(values, float).reshape(-1, ref.shape[1]) * sign - lo) / span


def indicators(front: Front, reference: Front) -> Indicators:
    """The indicators of ``front`` against ``reference`` (same criteria)."""
    import moocore

    if front.criteria != reference.criteria:
        raise ValidationError("front", "must have the reference front's criteria")
    if not reference.points:
        raise ValidationError("reference", "holds no point")
    ref = scaled(reference.values, reference)
    own = scaled(front.values, reference)
    point = np.full(ref.shape[1], HV_REFERENCE)
    ref_hv = float(moocore.hypervolume(ref, ref=point))
    if not len(own):
        return Indicators(0.0, 0.0, float("inf"), float("inf"), 0.0)
    hv = float(moocore.hypervolume(own, ref=point))
    attained = np.all(quantized(own)[None, :, :] <= ref[:, None, :] + ATTAIN_TOL, axis=2).any(axis=1)
    return Indicators(hv=hv, hv_ratio=hv / ref_hv if ref_hv > 0 else float("nan"),
                      igd_plus=float(moocore.igd_plus(own, ref=ref)),
                      eps_additive=float(moocore.epsilon_additive(own, ref=ref)), attained=float(attained.mean()))
