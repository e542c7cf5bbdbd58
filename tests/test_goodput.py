"""The goodput model: efficiency, throughput, batch choice and speedups."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from goodopt import ThroughputParams, ValidationError, shipped_profile
from goodopt import goodput as gp

from .reference import ref_goodput

APPS = ["bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"]
TYPES = ["t4", "v100", "a100", "rtx6000", "rtx2080ti"]


@given(st.floats(1, 1e6), st.integers(1, 10_000), st.floats(0, 1e5))
def test_efficiency_properties(phi, m0, extra):
    m = m0 + extra
    e0 = gp.efficiency(m0, phi, m0)
    e = gp.efficiency(m, phi, m0)
    assert e0 == pytest.approx(1.0)
    assert 0 < e <= 1.0 + 1e-12
    assert gp.efficiency(m + 1, phi, m0) < e
    assert gp.efficiency(m, np.inf, m0) == 1.0


def test_phi_from_gradients_matches_definition():
    assert gp.phi_from_gradients(2.0, 6.0, 128) == pytest.approx(128 * 3.0)
    # Pollux's gain/scale form equals (phi + M0) / (phi + M)
    sqr, var, m0, m = 0.5, 2.0, 100, 800
    scale = m / m0
    gain = (var + sqr) / (var / scale + sqr)
    assert gp.efficiency(m, gp.phi_from_gradients(sqr, var, m0), m0) == pytest.approx(gain / scale)


def test_throughput_model_by_hand():
    p = ThroughputParams(alpha_c=0.1, beta_c=0.01, alpha_r=0.2, beta_r=0.05, alpha_n=0.4, beta_n=0.1, gamma=2.0)
    # one GPU: no sync; step = compute = 0.1 + 0.01 * 30 = 0.4
    assert gp.step_time(p, 30, 1, False) == pytest.approx(0.4)
    # 4 GPUs on one node: T_s = 0.2 + 0.05 * 2 = 0.3; step = sqrt(0.4^2 + 0.3^2) = 0.5
    assert gp.step_time(p, 30, 4, False) == pytest.approx(0.5)
    # 4 GPUs over nodes: T_s = 0.4 + 0.1 * 2 = 0.6
    assert gp.step_time(p, 30, 4, True) == pytest.approx(math.hypot(0.4, 0.6))
    # 2 accumulation steps: T_iter = 2 * 0.4 + 0.5; M = 4 * 30 * 3
    assert gp.throughput(p, 30, 2, 4, False) == pytest.approx(360 / 1.3)


def test_bad_params():
    with pytest.raises(ValidationError, match="gamma"):
        ThroughputParams(0.1, 0.01, 0.2, 0.05, 0.4, 0.1, gamma=0.5)
    with pytest.raises(ValueError, match="beta_c"):
        ThroughputParams(0.1, -0.01, 0.2, 0.05, 0.4, 0.1, gamma=1.0)


@pytest.mark.parametrize("app", APPS)
def test_best_config_matches_scalar_reference(app):
    prof = shipped_profile(app)
    for t in TYPES:
        g = prof.gpu_types[t]
        params = {n: v for n, v in zip(ThroughputParams.names(), g.params.as_array())}
        phi = float(prof.phi_at(prof.target_epochs / 3))
        ks = np.arange(0, 33)
        good, local, accum = gp.best_config(params, ks[:, None], np.array([False, True]), phi,
                                            prof.init_batch_size, prof.max_batch_size,
                                            g.min_local_bsz, g.max_local_bsz)
        for k in ks:
            for multi in (0, 1):
                assert good[k, multi] == pytest.approx(ref_goodput(prof, t, int(k), bool(multi), phi), rel=1e-9)
            if good[k, 0] > 0:
                assert g.min_local_bsz <= local[k, 0] <= g.max_local_bsz
                assert local[k, 0] * k * (accum[k, 0] + 1) >= prof.init_batch_size


@pytest.mark.parametrize("app", APPS)
def test_chosen_batch_no_worse_than_any_candidate(app):
    prof = shipped_profile(app)
    g = prof.gpu_types["t4"]
    phi = float(prof.phi_at(1.0))
    k = np.arange(1, 17)
    micro, accum, valid = gp.candidate_batches(k, prof.init_batch_size, prof.max_batch_size,
                                               g.min_local_bsz, g.max_local_bsz)
    all_g = np.where(valid, gp.goodput(g.params, micro, accum, k, k > 4, phi, prof.init_batch_size), 0)
    best, _, _ = gp.best_config(g.params, k, k > 4, phi, prof.init_batch_size, prof.max_batch_size,
                                g.min_local_bsz, g.max_local_bsz)
    assert np.all(best >= all_g.max(axis=0) - 1e-12)
    # the finer search is never worse than Pollux's 50 candidates by more than rounding
    fine, _, _ = gp.best_config(g.params, k, k > 4, phi, prof.init_batch_size, prof.max_batch_size,
                                g.min_local_bsz, g.max_local_bsz, n_candidates=400)
    assert np.all(fine >= best * (1 - 0.02))


@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("gpu", TYPES)
def test_multi_node_never_faster_than_single_node(app, gpu):
    prof = shipped_profile(app)
    g = prof.gpu_types[gpu]
    assert g.params.alpha_n >= g.params.alpha_r and g.params.beta_n >= g.params.beta_r
    k = np.arange(2, 65)
    phi = float(prof.phi_at(2.0))
    args = (phi, prof.init_batch_size, prof.max_batch_size, g.min_local_bsz, g.max_local_bsz)
    single, _, _ = gp.best_config(g.params, k, False, *args)
    multi, _, _ = gp.best_config(g.params, k, True, *args)
    assert np.all(multi <= single * (1 + 1e-12))


def test_a_table_scores_each_application_once_and_each_job_as_if_alone():
    """goodput_tables scores the candidates of each (parameters, batch limits) once and each job with its own
    phi: every entry equals best_config run for that job alone, bit for bit, with jobs of one application at
    different points of training (phi), two applications, two GPU types and an infinite phi; with a type's
    count capped, the same up to the cap and 0 above; with its nodes' size given, single-node entries the same up
    to that size and 0 above, multi-node ones unchanged."""
    from goodopt.speedup_tables import goodput_tables

    profiles = [shipped_profile(APPS[0])] * 3 + [shipped_profile(APPS[1])] * 2
    phi = np.array([float(profiles[0].phi_at(e)) for e in (0.5, 3.0, 9.0)] + [np.inf, 40.0])
    types = [t for t in TYPES if all(t in p.gpu_types for p in profiles)][:2]
    assert len(types) == 2
    good, local, accum = goodput_tables(profiles, types, phi, 24, 50)
    k, multi = np.arange(25)[:, None], np.array([False, True])[None, :]
    for j, prof in enumerate(profiles):
        for g, t in enumerate(types):
            gt = prof.gpu_types[t]
            alone = gp.best_config(gt.params, k, multi, phi[j], prof.init_batch_size, prof.max_batch_size,
                                   gt.min_local_bsz, gt.max_local_bsz)
            alone[0][:2, 1], alone[1][:2, 1] = alone[0][:2, 0], alone[1][:2, 0]  # the table's k <= 1 rows
            assert np.array_equal(good[j, g], alone[0]) and np.array_equal(local[j, g], alone[1])
            assert np.array_equal(accum[j, g], alone[2])
    assert not np.array_equal(good[0], good[1])  # phi mattered
    capped = goodput_tables(profiles, types, phi, 24, 50, k_caps=[24, 10])  # the second type has 10 GPUs
    for full, cut in zip((good, local, accum), capped):
        assert np.array_equal(cut[:, 0], full[:, 0]) and np.array_equal(cut[:, 1, :11], full[:, 1, :11])
        assert not cut[:, 1, 11:].any()
    on_nodes = goodput_tables(profiles, types, phi, 24, 50, node_caps=[8, 4])  # 8- and 4-GPU nodes
    for full, cut in zip((good, local, accum), on_nodes):
        assert np.array_equal(cut[..., 1], full[..., 1])
        assert np.array_equal(cut[:, 0, :9, 0], full[:, 0, :9, 0]) and np.array_equal(cut[:, 1, :5, 0], full[:, 1, :5, 0])
        assert not cut[:, 0, 9:, 0].any() and not cut[:, 1, 5:, 0].any()
    assert good[:, 1, 5:, 0].any()  # there was something to leave out


def test_speedup_table_basics(testbed):
    pr = testbed.problem()
    t = pr.speedup_table
    assert np.all(t >= 0)
    assert np.all(t[:, :, 0, :] == 0)  # S(0) = 0
    J = pr.n_jobs
    multi = (-(-pr.base_gpus // 4) > 1).astype(int)
    np.testing.assert_allclose(t[np.arange(J), pr.base_type, pr.base_gpus, multi], 1.0)  # S(base) = 1
    assert np.all(pr.base_gpus == -(-64 // J))  # fair share of 64 GPUs among the jobs


def test_one_gpu_base(testbed):
    pr = testbed.with_objective(base="one-gpu").problem()
    np.testing.assert_allclose(pr.speedup_table[:, 0, 1, 0], 1.0)


def _best_candidate_as_arrays(scored, phi, init_batch_size):
    """The rule of gp.best_candidate as whole-array operations (the statement its compiled loop must match)."""
    micro, accum, valid, total, x = scored
    with np.errstate(invalid="ignore", divide="ignore"):  # phi = 0 at no GPUs: 0 / 0, as the loop meets it
        g = np.where(valid, x * gp.efficiency(total, phi, init_batch_size), 0.0)
    best = np.argmax(g, axis=0)[None]
    gbest = np.take_along_axis(g, best, axis=0)[0]
    ok = gbest > 0
    micro_best = np.take_along_axis(np.broadcast_to(micro, g.shape), best, axis=0)[0]
    accum_best = np.take_along_axis(np.broadcast_to(accum, g.shape), best, axis=0)[0]
    return gbest, np.where(ok, micro_best, 0), np.where(ok, accum_best, 0)


@given(st.integers(0, 2**32 - 1), st.sampled_from(APPS), st.sampled_from(["t4", "v100"]), st.booleans(),
       st.sampled_from([2, 7, 50]))
def test_the_compiled_best_candidate_is_the_array_statement_to_the_last_bit(seed, app, gpu, multi, n_candidates):
    """Goodput, micro-batch and steps of the compiled choice equal the array statement's, bit for bit: phi of
    every size (0, tiny, huge, infinite, NaN), jobs in blocks, counts with no valid candidate, tied candidates
    (a zero-throughput row) and a scalar phi."""
    prof = shipped_profile(app)
    g = prof.gpu_types[gpu] if gpu in prof.gpu_types else next(iter(prof.gpu_types.values()))
    rng = np.random.default_rng(seed)
    scored = gp.scored_candidates(g.params, np.arange(17)[None, :], multi, prof.init_batch_size,
                                  prof.max_batch_size, g.min_local_bsz, g.max_local_bsz, n_candidates=n_candidates)
    if rng.random() < 0.3:  # ties: equal throughput for every candidate of some counts
        x = scored[4].copy()
        x[:, :, rng.integers(0, 17)] = 1.0
        scored = (*scored[:4], x)
    phi = rng.choice([0.0, 1e-300, 3.0, 1e4, 1e12, np.inf, np.nan], size=(int(rng.integers(1, 6)), 1))
    table = gp.best_candidate_table(scored, phi[:, 0], prof.init_batch_size)  # the goodput tables' entry
    for got, args in ((gp.best_candidate(scored, phi, prof.init_batch_size), (scored, phi, prof.init_batch_size)),
                      (table, (scored, phi, prof.init_batch_size)),
                      (gp.best_candidate(scored, float(phi[0, 0]), prof.init_batch_size),
                       (scored, float(phi[0, 0]), prof.init_batch_size))):
        for a, b in zip(got, _best_candidate_as_arrays(*args)):
            assert a.shape == b.shape and a.dtype == b.dtype
            assert a.tobytes() == b.tobytes()


def test_the_compiled_best_candidate_takes_numpys_first_nan_and_first_of_ties():
    """By hand: candidate 0 invalid, the rest NaN under phi = NaN (numpy's argmax: the first NaN, candidate 1);
    equal goodputs go to the first; nothing above 0 (NaN included) gives batch 0."""
    micro = np.array([[8], [16], [32]])
    accum = np.zeros((3, 1), np.int64)
    valid = np.array([[False], [True], [True]])
    total = micro * 2
    x = np.array([[5.0], [3.0], [3.0]])
    for phi, want in [(np.nan, (np.nan, 0, 0)), (np.inf, (3.0, 16, 0)), (0.0, (0.0, 0, 0))]:
        m0 = 0.0 if phi == 0.0 else 16.0
        scored = (micro, accum, valid, total, x if phi != 0.0 else x * 0)
        got = gp.best_candidate(scored, np.array([phi]), m0)
        assert got[0].tobytes() == np.array([want[0]]).tobytes() and (got[1][0], got[2][0]) == want[1:]
        assert all(a.tobytes() == b.tobytes() for a, b in zip(got, _best_candidate_as_arrays(scored, np.array([phi]), m0)))


def test_one_configurations_candidates_are_scored_once_and_answer_as_before():
    """A job agent asks best_config for one (k, multi) round after round: the second ask is the remembered
    scoring, bit for bit the answer of scoring afresh, its arrays read-only; another k, type of k or parameter
    is scored anew."""
    prof = shipped_profile("cifar10")
    g = next(iter(prof.gpu_types.values()))
    limits = (prof.init_batch_size, prof.max_batch_size, g.min_local_bsz, g.max_local_bsz)
    gp._SCORED_ONE.clear()
    first = gp.best_config(g.params, 4, True, 3000.0, *limits)
    assert len(gp._SCORED_ONE) == 1
    again = gp.best_config(g.params, 4, True, 3000.0, *limits)
    fresh = gp.best_candidate(gp.scored_candidates(g.params, 4, True, *limits), 3000.0, prof.init_batch_size)
    for a, b, c in zip(first, again, fresh):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes() == np.asarray(c).tobytes()
    scored, columns = next(iter(gp._SCORED_ONE.values()))
    assert not scored[4].flags.writeable and not columns[4].flags.writeable
    for phi in (np.float64(3000.0), np.array(3000.0), np.inf, np.array(np.nan)):  # scalars of every kind
        got, want = gp.best_config(g.params, 4, True, phi, *limits), gp.best_candidate(
            gp.scored_candidates(g.params, 4, True, *limits), phi, prof.init_batch_size)
        assert all(np.asarray(a).tobytes() == np.asarray(b).tobytes() and np.shape(a) == np.shape(b)
                   for a, b in zip(got, want))
    gp.best_config(g.params, 4.0, True, 3000.0, *limits)
    gp.best_config(g.params, 5, True, 3000.0, *limits)
    other = ThroughputParams(**{**{n: getattr(g.params, n) for n in ThroughputParams.names()}, "gamma": 1.5})
    gp.best_config(other, 4, True, 3000.0, *limits)
    assert len(gp._SCORED_ONE) == 4


def test_the_parameter_array_is_in_declaration_order():
    # as_array lists the seven fields by hand (it runs for every job of every simulation round): the order must
    # stay the dataclass's, which names() reads.
    p = ThroughputParams(alpha_c=1.0, beta_c=2.0, alpha_r=3.0, beta_r=4.0, alpha_n=5.0, beta_n=6.0, gamma=7.0)
    assert p.as_array().tolist() == [getattr(p, name) for name in ThroughputParams.names()]
