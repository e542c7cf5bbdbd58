"""The simulator's ground truth (traces and model) and its job agents' fits, against measurements and hand-made data."""


import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goodopt import goodput as gp
from goodopt.fitting import fit_observed
from goodopt.goodput import ThroughputParams
from goodopt.sim import model_truth, simulate, trace_truth
from goodopt.sim.agent import JobAgent
from goodopt.sim.truth import canonical_placement
from goodopt.sim.workload import load_workload

APPS = ("cifar10", "ncf")


@pytest.fixture(scope="module")
def truth():
    return model_truth(APPS)


# ------------------------------------------------------------------ truth
@settings(max_examples=60, deadline=None)
@given(batches=st.lists(st.sampled_from([1.0, 2.0, 3.0, 8.0, 32.0, np.nan]), min_size=1, max_size=8),
       seed=st.integers(0, 2**32 - 1))
def test_a_measured_line_is_the_group_mean_of_its_rows(batches, seed):
    # A placement's line is pandas' per-batch mean, sorted by batch, whether the batches repeat (then averaged
    # the pandas way, to the last bit) or not (then only sorted): the same arrays either way.
    from goodopt.sim.truth import _line

    g = np.random.default_rng(seed)
    df = pd.DataFrame({"local_bsz": batches, "step_time": g.random(len(batches)) / 3,
                       "sync_time": g.random(len(batches)) / 7})
    stated = df.sort_values("local_bsz").groupby("local_bsz", as_index=False)[["step_time", "sync_time"]].mean()
    got = _line(df)
    for got_col, name in zip(got, ("local_bsz", "step_time", "sync_time")):
        assert np.array_equal(got_col, stated[name].to_numpy(float), equal_nan=True)


def test_canonical_placement_is_the_smallest_rotation():
    assert canonical_placement((0, 2, 1, 0, 3)) == "132"
    assert canonical_placement((3, 1, 2)) == "123"
    assert canonical_placement((4, 0, 4)) == "44"
    assert canonical_placement((12,)) is None


def test_trace_truth_matches_measurements(traces):
    truth = trace_truth(traces, ("cifar10",))
    app = truth["cifar10"]
    pl = pd.read_csv(traces / "pollux" / "cifar10" / "placements.csv", dtype={"placement": str})
    row = pl[(pl.placement == "22") & (pl.local_bsz == 128)] if (pl.local_bsz == 128).any() else \
        pl[pl.placement == "22"].iloc[[0]]
    m = int(row.local_bsz.iloc[0])
    step, sync = app.times((2, 0, 2), m)  # same ring as "22"
    assert step == pytest.approx(row.step_time.mean()) and sync == pytest.approx(row.sync_time.mean())
    # linear between two measured per-GPU batches of one placement
    one = pl[pl.placement == "4"].sort_values("local_bsz")
    m0, m1 = one.local_bsz.iloc[2], one.local_bsz.iloc[3]
    mid = (m0 + m1) / 2
    expected = (one.step_time.iloc[2] + one.step_time.iloc[3]) / 2
    assert app.times((4,), mid)[0] == pytest.approx(expected)
    # an unmeasured placement (5 nodes) lies between its 4- and 6-node neighbours
    s5 = app.times((4, 4, 4, 4, 4), 128)[0]
    s4 = app.times((4, 4, 4, 4), 128)[0]
    sc = pd.read_csv(traces / "pollux" / "cifar10" / "scalability.csv")
    six = sc[(sc.num_nodes == 6) & (sc.num_replicas == 24)]
    s6 = float(np.interp(128, six.local_bsz, six.step_time))
    assert min(s4, s6) - 1e-9 <= s5 <= max(s4, s6) + 1e-9


def test_gain_is_scale_times_efficiency(traces):
    app = trace_truth(traces, ("cifar10",))["cifar10"]
    sqr, var = app.stats(1024, 10)
    scale = 1024 / app.init_batch_size
    assert app.gain(1024, 10) == pytest.approx((var + sqr) / (var / scale + sqr))
    assert app.gain(app.init_batch_size, 3) == pytest.approx(1.0)


def test_a_remembered_gain_is_the_gain_computed_afresh(traces, monkeypatch):
    # gains are remembered per (batch, epoch); asked again, in another numeric type, or after the memo was
    # emptied for size, they are bit for bit scale * efficiency computed afresh
    app = trace_truth(traces, ("cifar10",))["cifar10"]
    m0 = app.init_batch_size

    def afresh(b, e):
        return float(b / m0 * gp.efficiency(b, app.phi(b, e), m0))

    asks = [(1024, 10), (1024.0, 10), (np.int64(1024), 10), (256, 0), (1024, 11), (700, 10)]
    fresh = [afresh(b, e) for b, e in asks]
    assert [app.gain(b, e) for b, e in asks] == fresh
    assert [app.gain(b, e) for b, e in asks] == fresh  # now from the memo
    monkeypatch.setattr("goodopt.sim.truth.GAIN_MEMO_SIZE", 2)
    more = [(b, 5) for b in (300, 400, 500, 600)]
    assert [app.gain(b, e) for b, e in more] == [afresh(b, e) for b, e in more]
    assert len(app.__dict__["_gain_memo"]) <= 2


def test_model_truth_needs_epoch_iterations(truth):
    app = truth["cifar10"]
    assert app.epoch_end_progress[0] == pytest.approx(391.0)
    assert app.target_epochs == 100
    assert app.times((2, 2), 128)[0] > app.times((4,), 128)[0] > 0


# ------------------------------------------------------------------ agent
def test_fit_observed_recovers_a_known_model():
    # gamma = 1 (no overlap): step = compute + sync, so every observed quantity is the model's own
    p = ThroughputParams(alpha_c=0.02, beta_c=4e-4, alpha_r=0.01, beta_r=2e-3, alpha_n=0.05, beta_n=5e-3, gamma=1.0)
    n, k, m = np.meshgrid([1, 2], [2, 4, 8], [32, 64, 128])
    n, k, m = n.ravel(), k.ravel(), m.ravel()
    keep = ~((n == 1) & (k > 4)) & ~((n == 2) & (k < 2))
    n, k, m = n[keep], k[keep], m[keep]
    step = gp.step_time(p, m, k, n > 1)
    sync = gp.sync_time(p, k, n > 1)
    fit = fit_observed(n, k, m, step, sync)
    pred = gp.step_time(fit, m, k, n > 1)
    assert np.max(np.abs(np.log(pred / step))) < 0.02


def test_fit_observed_is_optimistic_where_data_are_missing():
    fit = fit_observed([1], [1], [64], [0.2], [0.0])
    assert fit.alpha_r == fit.beta_r == fit.alpha_n == 0  # no multi-GPU data: linear speedup
    assert fit.alpha_c == pytest.approx(0.1) and fit.beta_c == pytest.approx(0.1 / 64)
    fit = fit_observed([1, 1], [1, 2], [64, 64], [0.2, 0.25], [0.0, 0.05])
    assert fit.alpha_n >= fit.alpha_r  # no multi-node data: inter-node never cheaper


def test_agent_exploration_limit_and_fixed_batch(truth):
    agent = JobAgent(truth["cifar10"])
    assert agent.gpu_limit() == 1 and agent.choose((1,)) == (128, 0)
    agent.observe((1,), 128, 0.1, 0.0, 500.0)
    assert agent.gpu_limit() == 2
    agent.observe((2, 2), 128, 0.12, 0.03, 500.0)
    assert agent.gpu_limit() == 8
    for k in (16, 32, 64):
        agent.observe((4,) * (k // 4), 128, 0.2, 0.1, 500.0)
    assert agent.gpu_limit() == min(64, 4096 // truth["cifar10"].min_local_bsz)
    ncf = JobAgent(truth["ncf"], fixed_batch=32768, max_gpus=1)
    assert ncf.gpu_limit() == 1 and ncf.choose((1,)) == (32768, 0)


# ----------------------------------------------------------------- fidelity
@pytest.mark.slow
def test_fidelity_against_the_pollux_paper(traces):
    """Workload 6 at load 1.0 on 16 x 4 T4: Pollux's average JCT is about 50% below
    Optimus+Oracle and about 30% below Tiresias (the paper's headline), within 5 points."""
    from goodopt.generate import testbed_cluster

    wl = load_workload(traces / "pollux" / "workloads" / "load-1.0" / "workload-6.csv")
    truth = trace_truth(traces)
    jct = {p: simulate(wl, testbed_cluster(), p, truth=truth, seed=0).summary["avg_jct"]
           for p in ("pollux", "optimus", "tiresias")}
    vs_optimus = 100 * (1 - jct["pollux"] / jct["optimus"])
    vs_tiresias = 100 * (1 - jct["pollux"] / jct["tiresias"])
    assert abs(vs_optimus - 50) <= 5, jct
    assert abs(vs_tiresias - 30) <= 5, jct


def test_the_optimism_regulariser_keeps_an_unidentified_slope_small():
    # bert's measured (trace) times at 1, 2, 4 GPUs on one node and 8 GPUs on two, per-GPU batch 12: one
    # multi-node count cannot tell the inter-node constant from the per-GPU slope
    obs = {(1, 1, 12): (0.92152, 0.01370), (1, 2, 12): (0.91904, 0.05467), (1, 4, 12): (0.95712, 0.09287),
           (2, 8, 12): (2.53895, 1.66284)}
    keys, vals = np.array(list(obs)), np.array(list(obs.values()))
    # the job's previous fit (before the 8-GPU run) put inter-node sync into the slope
    before = ThroughputParams(alpha_c=0.44, beta_c=0.037, alpha_r=0.055, beta_r=0.019, alpha_n=0.15, beta_n=0.25,
                              gamma=1.0)
    fits = {w: fit_observed(keys[:, 0], keys[:, 1], keys[:, 2], vals[:, 0], vals[:, 1], before, optimism=w)
            for w in (0.0, 1e-2)}
    plain, pollux = fits[0.0], fits[1e-2]
    assert pollux.beta_n / pollux.alpha_n < 0.1 * plain.beta_n / plain.alpha_n
    # the optimistic model expects 16 GPUs to be faster than the plain fit does ...
    assert gp.step_time(pollux, 12, 16, True) < 0.8 * gp.step_time(plain, 12, 16, True)
    # ... and still fits what was observed
    pred = gp.step_time(pollux, keys[:, 2], keys[:, 1], keys[:, 0] > 1)
    assert np.max(np.abs(np.log(pred / vals[:, 0]))) < 0.1


def test_the_optimistic_fit_is_the_same_from_every_starting_point():
    """The regularised objective has one smooth minimum: starts on either side of the unidentified ridge
    (the previous fit's slope large or small, gamma low or high) end at the same parameters."""
    obs = {(1, 1, 12): (0.92152, 0.01370), (1, 2, 12): (0.91904, 0.05467), (1, 4, 12): (0.95712, 0.09287),
           (2, 8, 12): (2.53895, 1.66284)}
    keys, vals = np.array(list(obs)), np.array(list(obs.values()))
    starts = [None] + [ThroughputParams(alpha_c=ac, beta_c=bc, alpha_r=ar, beta_r=br, alpha_n=an, beta_n=bn, gamma=g)
                       for ac, bc, ar, br, an, bn, g in [(0.44, 0.037, 0.055, 0.019, 0.15, 0.25, 1.0),
                                                         (0.3, 0.05, 0.1, 0.001, 1.0, 0.01, 2.0),
                                                         (0.5, 0.03, 0.01, 0.05, 0.05, 0.5, 1.2),
                                                         (0.44, 0.037, 0.055, 0.019, 0.15, 0.25, 3.0)]]
    fits = [fit_observed(keys[:, 0], keys[:, 1], keys[:, 2], vals[:, 0], vals[:, 1], s, optimism=1e-2).as_array()
            for s in starts]
    for f in fits[1:]:
        np.testing.assert_allclose(f, fits[0], rtol=2e-3, atol=1e-6)
    assert fits[0][5] / fits[0][4] < 0.02  # beta_n / alpha_n: the cost sits in the constant


def test_fit_observed_keeps_unidentified_slopes_at_their_prior():
    # a 2-GPU multi-node observation says nothing about the per-GPU inter-node slope
    obs = {(1, 1, 200): (0.9235, 0.0012), (2, 2, 198): (0.9502, 0.0049), (1, 4, 195): (0.9815, 0.0089),
           (1, 3, 185): (0.9194, 0.0017), (1, 2, 198): (0.9359, 0.0156)}
    keys = np.array(list(obs))
    vals = np.array(list(obs.values()))
    fit = fit_observed(keys[:, 0], keys[:, 1], keys[:, 2], vals[:, 0], vals[:, 1])
    assert fit.beta_n == pytest.approx(1.1 * fit.beta_r)
    g4 = gp.best_config(fit, 4, False, 8000.0, 200, 12800, 20, 200)[0]
    g8 = gp.best_config(fit, 8, True, 8000.0, 200, 12800, 20, 200)[0]
    assert g8 > g4  # sync is ~1% of the step: more GPUs must look better
