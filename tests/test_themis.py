"""Themis (NSDI'20): finish-time fairness, the filter and the auction, each checked against a hand count or
brute force; then the policy in a simulation, where the fairness knob decides who runs."""

import itertools

import numpy as np
import pytest
from goodopt.formulations.themis import auction, bidders, finish_time_fairness, isolated_time

from goodopt.cluster import Cluster, NodeGroup
from goodopt.errors import ValidationError
from goodopt.sim import model_truth, simulate
from goodopt.sim.workload import Workload, WorkloadJob


def test_finish_time_fairness_compares_the_shared_finish_with_an_equal_share_alone():
    # 2 jobs on 4 GPUs, each asking for 4: alone on half the cluster each runs at half speed
    iso = isolated_time([100.0, 100.0], [4, 4], n_gpus=4, n_jobs=2)
    assert iso.tolist() == [200.0, 200.0]
    # a 1-GPU job gets its whole request on its share: its isolated time is its work
    assert isolated_time([100.0], [1], n_gpus=4, n_jobs=2).tolist() == [100.0]
    # 50 s in the system, 100 s of work left: finishes at 150 s of the 200 s it would take alone
    assert finish_time_fairness([50.0], [100.0], [200.0]).tolist() == [0.75]


@pytest.mark.parametrize("knob, expected", [(0.0, [1, 2, 0, 3]), (0.5, [1, 2]), (0.8, [1]), (0.99, [1])])
def test_the_filter_keeps_the_worst_off_jobs_ties_to_the_earlier(knob, expected):
    rho = [0.5, 2.0, 1.0, 0.5]
    assert bidders(rho, knob).tolist() == expected


def brute_force(values, sizes, capacity):
    best = 0.0
    for r in range(len(values) + 1):
        for subset in itertools.combinations(range(len(values)), r):
            if sum(sizes[i] for i in subset) <= capacity:
                v = sum(values[i] for i in subset)
                if v > best + 1e-12:
                    best = v
    return best


@pytest.mark.parametrize("seed", range(40))
def test_the_auction_is_the_best_knapsack_of_every_choice(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 8))
    sizes = rng.integers(1, 9, n)
    values = rng.choice([0.0, -0.5, 0.3, 0.3, 1.0], n) if seed % 3 == 0 else rng.exponential(1.0, n)  # ties
    capacity = int(rng.integers(0, 17))
    chosen = auction(values, sizes, capacity)
    assert sizes[chosen].sum() <= capacity
    assert (values[chosen] > 0).all()
    assert values[chosen].sum() == pytest.approx(brute_force(values, sizes, capacity), abs=1e-9)


def test_the_auction_keeps_the_earlier_of_two_equal_bids():
    assert auction([1.0, 1.0], [4, 4], 4).tolist() == [True, False]


@pytest.fixture(scope="module")
def truth():
    return model_truth(("cifar10",))


def two_jobs():
    # both jobs want the whole 4-GPU node; B arrives a round after A
    return Workload((WorkloadJob("A", 0.0, "cifar10", 4, 512), WorkloadJob("B", 60.0, "cifar10", 4, 512)))


def test_the_fairness_knob_hands_an_ended_lease_to_the_worst_off_job(truth):
    cluster = Cluster((NodeGroup("t4", 4, 1),))
    fair = simulate(two_jobs(), cluster, "themis", truth=truth, policy_options={"fairness_knob": 0.8}).jobs
    fair = fair.set_index("job")
    # A's 10-minute lease ends at 600 s; only B, the worse off, bids: it takes the node
    assert fair.loc["B", "start_s"] == pytest.approx(600.0)
    assert fair.loc["A", "n_restarts"] >= 1
    # with every job bidding, the auction's welfare goes to A, the job nearer its end: B waits for it
    eff = simulate(two_jobs(), cluster, "themis", truth=truth, policy_options={"fairness_knob": 0.0}).jobs
    eff = eff.set_index("job")
    assert eff.loc["B", "start_s"] >= eff.loc["A", "completion_s"] - 60.0
    assert eff.loc["A", "n_restarts"] == 0


@pytest.mark.parametrize("options, field", [({"fairness_knob": 1.0}, "fairness_knob"),
                                            ({"fairness_knob": -0.1}, "fairness_knob"),
                                            ({"lease_s": -1}, "lease_s")])
def test_bad_themis_options_name_the_option(truth, options, field):
    with pytest.raises(ValidationError, match=field):
        simulate(two_jobs(), Cluster((NodeGroup("t4", 4, 1),)), "themis", truth=truth, policy_options=options)
