import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import goodopt
from goodopt.cluster import Cluster, NodeGroup
from goodopt.generate import random_scenario

# Under CI (CI set) hypothesis draws the same examples on every run, so a verdict does not depend on the machine or
# the moment; elsewhere every run draws anew (and replays the failures it saved), to keep finding cases.
settings.register_profile("goodopt", deadline=None, max_examples=60, derandomize=bool(os.environ.get("CI")),
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("goodopt")

REPO = Path(__file__).resolve().parent.parent


def _traces_path() -> Path:
    env = os.environ.get("GOODOPT_TRACES")
    return Path(env) if env else REPO.parent / "shared" / "traces"


@pytest.fixture(scope="session")
def traces() -> Path:
    path = _traces_path()
    if not (path / "pollux").is_dir():
        pytest.skip(f"published traces not found at {path} (set GOODOPT_TRACES to the traces folder)")
    return path


@pytest.fixture(scope="session")
def testbed():
    return goodopt.load_scenario("pollux-testbed")


@pytest.fixture(scope="session")
def hetero_scenario():
    cluster = Cluster((NodeGroup("t4", 4, 2), NodeGroup("a100", 8, 1), NodeGroup("rtx2080ti", 8, 1)))
    return random_scenario(11, cluster, 7, running_fraction=0.8, name="hetero")


def random_population(rng, problem, size, max_per_cell=None):
    """Random (P, J, N) populations, mostly sparse, some infeasible."""
    cap = problem.node_capacity if max_per_cell is None else np.full(problem.n_nodes, max_per_cell)
    pop = rng.integers(0, cap + 1, size=(size, problem.n_jobs, problem.n_nodes))
    mask = rng.random(pop.shape) < 0.8
    pop[mask] = 0
    return pop


@pytest.fixture
def ctrl_c_raises():
    """Ctrl-C raising KeyboardInterrupt, as at a terminal (a shell's background job, such as a CI step, may start
    with SIGINT ignored); the previous handler afterwards."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
