"""Properties of the power-mean fitness and the re-allocation factor."""

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from goodopt import ValidationError, power_mean, realloc_factor

from .reference import ref_power_mean, ref_power_mean_exact

values = st.lists(st.floats(0.01, 100.0), min_size=1, max_size=8)
ps = st.sampled_from([-math.inf, -8.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 5.0, math.inf])


@given(values, ps)
def test_between_min_and_max(v, p):
    f = power_mean(np.array(v), p)
    assert min(v) * (1 - 1e-9) <= f <= max(v) * (1 + 1e-9)


@given(values, st.floats(-6, 6), st.floats(-6, 6))
def test_non_decreasing_in_p(v, p1, p2):
    lo, hi = sorted((p1, p2))
    assert power_mean(np.array(v), lo) <= power_mean(np.array(v), hi) * (1 + 1e-9)


@given(values)
def test_special_cases(v):
    a = np.array(v)
    assert power_mean(a, 1) == pytest.approx(np.mean(a))
    assert power_mean(a, 0) == pytest.approx(math.exp(np.mean(np.log(a))))
    assert power_mean(a, -math.inf) == min(v)
    assert power_mean(a, math.inf) == max(v)
    assert power_mean(a, -1) == pytest.approx(len(v) / np.sum(1 / a))


@given(values, ps, st.floats(0.1, 10))
def test_homogeneous(v, p, c):
    a = np.array(v)
    assert power_mean(c * a, p) == pytest.approx(c * power_mean(a, p), rel=1e-9)


@given(values, ps, st.randoms(use_true_random=False))
def test_symmetric(v, p, rnd):
    w = list(v)
    rnd.shuffle(w)
    assert power_mean(np.array(w), p) == pytest.approx(power_mean(np.array(v), p), rel=1e-12)


@given(values, ps, st.integers(0, 7), st.floats(0.01, 10))
def test_monotone_in_each_value(v, p, i, delta):
    assume(i < len(v))
    a = np.array(v)
    b = a.copy()
    b[i] += delta
    assert power_mean(b, p) >= power_mean(a, p) * (1 - 1e-12)


@given(values, ps, st.lists(st.integers(1, 4), min_size=8, max_size=8))
def test_integer_weights_equal_repetition(v, p, counts):
    counts = counts[: len(v)]
    a = np.array(v)
    repeated = np.repeat(a, counts)
    assert power_mean(a, p, weights=np.array(counts, float)) == pytest.approx(power_mean(repeated, p), rel=1e-9)


@given(values, ps, st.lists(st.floats(0.1, 5), min_size=8, max_size=8))
def test_matches_scalar_reference(v, p, w):
    w = w[: len(v)]
    assert power_mean(np.array(v), p, weights=np.array(w)) == pytest.approx(ref_power_mean(v, p, w), rel=1e-9)


# the whole range the docs accept: any real p (subnormal ones included) and ±inf, values from eps = 1e-6 on
wide_p = st.one_of(st.floats(-50, 50), st.sampled_from([5e-324, -5e-324, 1e-300, -1e-13, 1e-8, -math.inf, math.inf]))
wide_values = st.lists(st.floats(1e-6, 100.0), min_size=1, max_size=6)


@given(wide_values, wide_p, st.lists(st.floats(0.1, 5), min_size=6, max_size=6))
def test_matches_exact_reference_over_the_whole_range(v, p, w):
    w = w[: len(v)]
    assert power_mean(np.array(v), p, weights=np.array(w)) == pytest.approx(ref_power_mean_exact(v, p, w), rel=1e-9)


def test_population_axis_and_stability():
    v = np.array([[1e-3, 1.0, 2.0], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(power_mean(v, -1), [3 / (1e3 + 1 + 0.5), 1.0])
    # large |p| must not overflow
    assert np.isfinite(power_mean(np.array([1e-3, 50.0]), -40))
    assert power_mean(np.array([1e-3, 50.0]), 40) == pytest.approx(50 * 0.5 ** (1 / 40))


@pytest.mark.parametrize("bad, field", [
    (dict(values=[0.0, 1.0], p=-1), "values"),
    (dict(values=[1.0, 1.0], p=float("nan")), "p"),
    (dict(values=[1.0, 1.0], p="x"), "p"),
    (dict(values=[1.0, 1.0], p=1, weights=[1.0, 0.0]), "weights"),
])
def test_bad_input(bad, field):
    with pytest.raises(ValidationError) as e:
        power_mean(**bad)
    assert e.value.field == field
    assert isinstance(e.value, ValueError)


def test_realloc_factor():
    # age 600 s, 2 restarts, 30 s delay: (600 - 60) / 630
    assert realloc_factor(600, 2, 30) == pytest.approx(540 / 630)
    assert realloc_factor(0, 0, 30) == 0.0
    assert realloc_factor(10, 5, 30) == 0.0
    assert realloc_factor(0, 0, 0) == 1.0
    np.testing.assert_allclose(realloc_factor([3600, 7200], [0, 0], 30), [3600 / 3630, 7200 / 7230])
