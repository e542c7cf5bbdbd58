"""L-BFGS-B driven on scipy's kernel: scipy.optimize.minimize's answer to the last bit, on bounded problems with
bounds active and inactive, one-sided and free variables, and on the agents' own fits; and minimize itself where
the kernel does not agree."""

import numpy as np
import pytest
from scipy.optimize import minimize

from goodopt import agent_fit, lbfgsb
from goodopt.lbfgsb import minimize_lbfgsb


def _reference(fun, x0, lower, upper, **opts):
    bounds = [(None if not np.isfinite(lo) else lo, None if not np.isfinite(up) else up) for lo, up in zip(lower, upper)]
    return minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds, options=opts)


def _quartic(center, scale):
    """A smooth non-quadratic bowl. Shapes: (n,), (n,) -> objective."""
    def f(x):
        d = (x - center) * scale
        return float(np.sum(d ** 4 + d ** 2) + np.sum(np.sin(x))), (4 * d ** 3 + 2 * d) * scale + np.cos(x)
    return f


def _assert_same(mine, ref):
    assert mine.x.tobytes() == np.asarray(ref.x, dtype=np.float64).tobytes()
    assert mine.fun == float(ref.fun) and mine.nit == ref.nit and mine.nfev == ref.nfev
    assert mine.success == bool(ref.success)


@pytest.mark.parametrize("seed", range(12))
def test_the_answer_is_scipys_to_the_last_bit(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    center, scale = rng.normal(0, 3, n), rng.uniform(0.1, 10, n)
    lower, upper = rng.uniform(-4, 0, n), rng.uniform(0, 4, n)
    kind = rng.integers(0, 4, n)  # 0 free, 1 lower only, 2 both, 3 upper only: every bound kind setulb knows
    lower[(kind == 0) | (kind == 3)] = -np.inf
    upper[(kind == 0) | (kind == 1)] = np.inf
    x0 = rng.normal(0, 5, n)  # outside the bounds too: both clip it first
    opts = {"maxiter": int(rng.choice([3, 50, 2000])), "ftol": float(rng.choice([1e-12, 1e-6])),
            "gtol": float(rng.choice([1e-9, 1e-4]))}
    fun = _quartic(center, scale)
    _assert_same(minimize_lbfgsb(fun, x0, lower, upper, **opts), _reference(fun, x0, lower, upper, **opts))


def test_an_evaluation_limit_stops_it_where_scipy_stops():
    fun = _quartic(np.array([3.0, -2.0, 1.0]), np.array([5.0, 0.2, 1.0]))
    lo, up, x0 = np.full(3, -10.0), np.full(3, 10.0), np.array([9.0, 9.0, -9.0])
    mine = minimize_lbfgsb(fun, x0, lo, up, maxfun=4)
    _assert_same(mine, _reference(fun, x0, lo, up, maxfun=4))
    assert not mine.success


def test_agent_fits_are_those_of_scipy_minimize(monkeypatch):
    """The agents' fits through the driven kernel and through minimize (the kernel refused) agree to the bit."""
    rng = np.random.default_rng(7)
    cases = []
    for _ in range(8):
        o = int(rng.integers(1, 7))
        n = rng.choice([1, 1, 2, 4], o)
        k = n * rng.choice([1, 2, 4], o)
        m = rng.choice([16, 32, 64, 128], o).astype(float)
        sync = np.where(k > 1, rng.uniform(0.01, 0.1, o), 0.0)
        cases.append((n, k, m, sync + rng.uniform(0.05, 0.5, o), sync))
    agent_fit._fit_remembered.cache_clear()
    driven = [agent_fit.fit_agent(*c) for c in cases]
    agent_fit._fit_remembered.cache_clear()
    monkeypatch.setattr(lbfgsb, "kernel_agrees", lambda: False)
    through_minimize = [agent_fit.fit_agent(*c) for c in cases]
    agent_fit._fit_remembered.cache_clear()
    assert driven == through_minimize


def test_the_kernel_agrees_on_this_scipy():
    """The locked scipy's kernel is driven (a changed private signature would fall back, and this says so)."""
    assert lbfgsb.kernel_agrees()
