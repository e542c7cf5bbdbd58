"""BLAS libraries run one thread while goodopt solves (goodopt.blas_threads), and get their own count back."""

from __future__ import annotations

import sys
import types
from typing import Any

import goodopt.solvers.api as api
import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from goodopt import blas_threads
from goodopt.blas_threads import one_blas_thread
from goodopt.families import FAMILIES


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_one_thread_inside_the_block_and_the_count_restored_after_it() -> None:
    if not _blas_threads():
        pytest.skip("no BLAS library is loaded in this process")
    with threadpool_limits(2, user_api="blas"):
        with one_blas_thread():
            assert set(_blas_threads()) == {1}
        assert set(_blas_threads()) == {2}


def test_the_libraries_are_listed_again_after_an_import(monkeypatch: pytest.MonkeyPatch) -> None:
    # a BLAS library loads with the module that needs it (scipy's own OpenBLAS with scipy.optimize)
    first = blas_threads._controller()
    assert blas_threads._controller() is first
    monkeypatch.setitem(sys.modules, "goodopt_test_just_imported", types.ModuleType("goodopt_test_just_imported"))
    assert blas_threads._controller() is not first


def test_a_solve_runs_its_method_with_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[int]] = []
    run = api._run

    def recording(*args: Any) -> Any:
        seen.append(_blas_threads())
        return run(*args)

    monkeypatch.setattr(api, "_run", recording)
    with threadpool_limits(2, user_api="blas"):
        res = api.solve(FAMILIES["sia-64"].scenario(0), "greedy")
        assert set(_blas_threads()) == {2}
    assert res.has_solution and seen and set(seen[0]) == {1}


def test_a_long_dot_product_no_longer_follows_the_core_count() -> None:
    # OpenBLAS splits a dot product this long between its threads, each summing its part
    rng = np.random.default_rng(0)
    pairs = [(rng.standard_normal(80_000), rng.standard_normal(80_000)) for _ in range(20)]
    values = []
    for outer in (1, 2, 4):
        with threadpool_limits(outer, user_api="blas"), one_blas_thread():
            values.append([float(a @ b) for a, b in pairs])
    assert values[0] == values[1] == values[2]
