"""A job agent's own fit (Pollux's semantics): exact gradient, the same answer from every start, the unobserved
parameters fixed as documented, and a fit that recovers a model it can identify."""

import dataclasses

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from goodopt import goodput as gp
from goodopt.agent_fit import LOWER, _Objective, fit_agent
from goodopt.errors import FitError
from goodopt.goodput import ThroughputParams

TRUE = ThroughputParams(alpha_c=0.02, beta_c=3e-4, alpha_r=0.03, beta_r=0.004, alpha_n=0.08, beta_n=0.01, gamma=1.8)

#: (nodes, GPUs, per-GPU batch) of what a job might have run: from one configuration to a rich history.
HISTORIES = {
    "one GPU": ([1], [1], [64]),
    "one GPU, two batches": ([1, 1], [1, 1], [32, 128]),
    "two GPUs on a node": ([1, 1], [1, 2], [64, 64]),
    "first multi-node": ([1, 2], [1, 2], [64, 32]),
    "single node to 8": ([1, 1, 1], [1, 4, 8], [64, 64, 64]),
    "rich": ([1, 1, 1, 2, 2, 4, 1], [1, 2, 4, 2, 8, 16, 1], [64, 64, 32, 64, 32, 32, 128]),
}
STARTS = [None, [1, 1, 1, 1, 1, 1, 5], [1e-3, 1e-6, 1e-3, 1e-6, 1e-3, 1e-6, 1.0], [0.05, 1e-3, 0.5, 0.1, 0.2, 0.05, 9]]


def _observe(history, noise, seed=0):
    n, k, m = (np.array(a) for a in history)
    step = gp.step_time(TRUE, m, k, n > 1) * np.exp(np.random.default_rng(seed).normal(0, noise, len(n)))
    return n, k, m, step, gp.sync_time(TRUE, k, n > 1)


@pytest.mark.parametrize("seed", range(4))
def test_the_gradient_is_exact(seed):
    n, k, m, step, sync = _observe(HISTORIES["rich"], 0.05, seed)
    obj = _Objective(n.astype(float), k.astype(float), m.astype(float), step - sync, step, 1e-2)
    rng = np.random.default_rng(seed)
    p = np.array([0.02, 3e-4, 0.08, 0.01, 0.03, 0.004, 1.8]) * rng.uniform(0.5, 2.0, 7)
    p[6] = 1 + rng.uniform(0, 4)
    numeric = approx_fprime(p, lambda x: obj(x)[0], 1e-9 * np.maximum(np.abs(p), 1e-6))
    np.testing.assert_allclose(obj(p)[1], numeric, rtol=2e-3, atol=1e-4)


@pytest.mark.parametrize("name", list(HISTORIES))
@pytest.mark.parametrize("noise", [0.0, 0.03])
def test_every_start_gives_the_same_model(name, noise):
    """Exact data (noise 0) is where an unsmoothed RMS has its kink; measured data where minima compete."""
    n, k, m, step, sync = _observe(HISTORIES[name], noise)
    fits = [fit_agent(n, k, m, step, sync, start=s) for s in STARTS]
    grid_k = np.array([1, 2, 4, 8, 16, 32])
    for multi in (False, True):
        pred = np.array([gp.step_time(f, 64, grid_k, multi) for f in fits])
        np.testing.assert_allclose(pred, pred[0][None].repeat(len(fits), 0), rtol=1e-4)


def test_a_rich_history_recovers_the_step_times():
    """Without overlap (gamma = 1) step - sync is the compute time the agent fits, and the model is identified."""
    true = dataclasses.replace(TRUE, gamma=1.0)
    n, k, m = (np.array(a) for a in HISTORIES["rich"])
    step, sync = gp.step_time(true, m, k, n > 1), gp.sync_time(true, k, n > 1)
    fit = fit_agent(n, k, m, step, sync)
    np.testing.assert_allclose(gp.step_time(fit, m, k, n > 1), step, rtol=0.02)
    np.testing.assert_allclose(gp.compute_time(fit, m), step - sync, rtol=0.02)


def test_unobserved_parameters_are_fixed_as_pollux_fixes_them():
    n, k, m, step, sync = _observe(HISTORIES["one GPU"], 0.0)
    fit = fit_agent(n, k, m, step, sync)
    assert fit.alpha_c == pytest.approx((step - sync).mean() / 2)  # one batch size: half the compute time
    assert fit.beta_c * 64 == pytest.approx((step - sync).mean() / 2, rel=1e-3)  # the slope takes the rest
    assert fit.alpha_r == fit.beta_r == LOWER[4]  # nothing about sync observed: it costs (almost) nothing
    assert fit.alpha_n == pytest.approx(1.1 * fit.alpha_r) and fit.beta_n == pytest.approx(1.1 * fit.beta_r)

    n, k, m, step, sync = _observe(HISTORIES["two GPUs on a node"], 0.0)
    fit = fit_agent(n, k, m, step, sync)
    assert fit.alpha_r > 1e-3  # a two-GPU sync was seen ...
    assert fit.beta_r == LOWER[5]  # ... but nothing beyond two GPUs
    assert fit.alpha_n >= 1.1 * fit.alpha_r * (1 - 1e-12)  # no multi-node observation: 10% dearer


def test_the_optimism_keeps_an_unidentified_slope_small():
    """One multi-node GPU count cannot tell beta_n from alpha_n; the regulariser puts the cost in alpha_n."""
    n, k, m = np.array([1, 2, 1]), np.array([1, 4, 4]), np.array([64, 64, 64])
    step = gp.step_time(TRUE, m, k, n > 1)
    fit = fit_agent(n, k, m, step, gp.sync_time(TRUE, k, n > 1))
    assert fit.beta_n / fit.alpha_n < 0.12


@pytest.mark.parametrize("bad", [dict(step=[]), dict(step=[np.nan]), dict(step=[-1.0]), dict(sync=[np.inf])])
def test_bad_observations_are_refused(bad):
    args = {"n": [1], "k": [1], "m": [64], "step": [0.1], "sync": [0.0], **bad}
    size = len(args["step"])
    with pytest.raises(FitError):
        fit_agent(args["n"][:size], args["k"][:size], args["m"][:size], args["step"], args["sync"][:size])


def test_the_same_observations_give_the_remembered_fit_and_others_a_fresh_one():
    from goodopt.agent_fit import _fit

    obs = _observe(HISTORIES["first multi-node"], 0.05)
    first = fit_agent(*obs)
    again = fit_agent(*(np.array(a, copy=True) for a in obs))  # equal values, other arrays
    assert again is first
    assert first == _fit(*(np.asarray(a, float) for a in obs), 1e-2, None)  # what a fresh fit gives
    assert fit_agent(*obs, optimism=1e-3) is not first
    moved = list(obs)
    moved[3] = obs[3] * 1.01
    assert fit_agent(*moved).beta_c != first.beta_c


def test_observation_arrays_of_different_lengths_are_refused():
    with pytest.raises(FitError, match="one length"):
        fit_agent([1, 1], [1, 2], [64, 64], [0.1, 0.2], [0.0])


def _objective_as_written(obj, p):
    """The objective of :mod:`goodopt.agent_objective`'s docstring, term by term with Python's math module (the C
    library's exp, log and log1p) and sums in observation order: the arithmetic the compiled loop promises."""
    import math

    from goodopt.agent_objective import GAMMA_WEIGHT, RMS_SMOOTHING

    def log_add_exp(x, y):  # numpy's logaddexp formula
        if x == y:
            return x + math.log(2.0)
        return x + math.log1p(math.exp(y - x)) if x > y else y + math.log1p(math.exp(x - y))

    g, s1, s2 = p[6], 0.0, 0.0
    for i in range(obj.n_obs):
        la = math.log(obj.xa[i, 0] * p[0] + obj.xa[i, 1] * p[1])
        ln = math.log(obj.xn[i, 0] * p[2] + obj.xn[i, 1] * p[3] + obj.xn[i, 2] * p[4] + obj.xn[i, 3] * p[5]
                      + obj.none[i])
        s1 += (la - obj.log_c[i]) ** 2
        s2 += (log_add_exp(g * la, g * ln) / g - obj.log_s[i]) ** 2
    reg = GAMMA_WEIGHT * (g - 1) ** 2 + obj.optimism * ((p[3] / p[2]) ** 2 + (p[5] / p[4]) ** 2)
    return (math.sqrt(s1 / obj.n_obs + RMS_SMOOTHING ** 2) + math.sqrt(s2 / obj.n_obs + RMS_SMOOTHING ** 2)) + reg


@pytest.mark.parametrize("name", list(HISTORIES))
@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_objective_is_its_formula_to_the_last_bit(name, seed):
    """The same value as the formula written out (no BLAS kernel, no vector code path decides a bit), and the
    gradient within rounding of the whole-array statement, at random points, gamma 1 (where both terms of the
    log-sum tie for equal times) to 10, and at a point where compute and sync time are equal."""
    n, k, m, step, sync = _observe(HISTORIES[name], 0.05, seed)
    obj = _Objective(n.astype(float), k.astype(float), m.astype(float), step - sync, step, 1e-2)
    rng = np.random.default_rng(seed)
    points = [np.r_[rng.uniform(1e-3, 0.1, 6), g] for g in (1.0, rng.uniform(1, 10), 10.0)]
    points.append(np.r_[0.01, 0.0, 0.01, 0.0, 0.01, 0.0, 2.0])  # A = N on every multi-GPU observation
    for p in points:
        f, grad = obj(p)
        assert f == _objective_as_written(obj, p)
        # the gradient as whole-array operations, the statement before the loop
        a_time, net = obj.xa @ p[:2], obj.xn @ p[2:6] + obj.none
        la, ln = np.log(a_time), np.log(net)
        log_step = np.logaddexp(p[6] * la, p[6] * ln) / p[6]
        w_a = np.exp(p[6] * (la - log_step))
        e1, e2 = la - obj.log_c, log_step - obj.log_s
        c1 = e1 / (obj.n_obs * np.sqrt(e1 @ e1 / obj.n_obs + 1e-6))
        c2 = e2 / (obj.n_obs * np.sqrt(e2 @ e2 / obj.n_obs + 1e-6))
        want = np.r_[obj.xa.T @ ((c1 + c2 * w_a) / a_time), obj.xn.T @ (c2 * (1 - w_a) / net),
                     c2 @ (w_a * la + (1 - w_a) * ln - log_step) / p[6] + 2e-3 * (p[6] - 1)]
        w, (an, bn, ar, br) = 1e-2, p[2:6]
        want[2:6] += [-2 * w * bn * bn / an ** 3, 2 * w * bn / an ** 2, -2 * w * br * br / ar ** 3, 2 * w * br / ar ** 2]
        np.testing.assert_allclose(grad, want, rtol=1e-12, atol=1e-15)
