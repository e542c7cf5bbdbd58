"""HiGHS's interrupt check through Python only once a run is asked to stop (:class:`StopOnRequest`).

A watched run (the main thread, or a time limit) used to subscribe highspy's interrupt callback for its whole
length: a call into Python at every simplex, interior-point and branch-and-bound iteration. Now the watch
subscribes it when it asks the run to stop, from its own thread, and HiGHS answers at its next check. These
tests run real HiGHS instances: a run that is not stopped makes no subscription and gives the same answer; a
Ctrl-C and a time-limit stop still end a long MILP within moments; where another wake-up descriptor holds
the signal, the callback is subscribed from the start, as before.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import numpy as np
import pytest

highspy = pytest.importorskip("highspy")

from goodopt.solvers.mip_solvers.highs_run import (  # noqa: E402
    StopOnRequest,
    new_highs,
    pass_arrays,
    read_highs,
    run_highs,
)
from goodopt.solvers.mip_solvers.solver_watch import watchdog_grace_s  # noqa: E402
from goodopt.solvers.result import Termination  # noqa: E402


def _knapsack(n: int, m: int, seed: int = 0, integer: bool = True):
    """max v x s.t. W x <= half of each row's weight, 0 <= x <= 1 (stated as min -v x): with integers, a MILP
    HiGHS spends far more than 20 s on (120 items, 12 rows); as an LP, solved at once."""
    rng = np.random.default_rng(seed)
    w = rng.integers(10, 100, (m, n)).astype(float)
    h = new_highs()
    pass_arrays(h, cost=-(w.sum(0) / m + rng.integers(0, 20, n)), lower=np.zeros(n), upper=np.ones(n),
                row_lower=np.full(m, -np.inf), row_upper=w.sum(1) / 2, indptr=np.arange(0, n * m + 1, m),
                indices=np.tile(np.arange(m), n), data=w.T.ravel(), integer=np.full(n, integer), maximise=False)
    return h


def _transport_ipm(m: int):
    """min c x over an m x m transport LP (supplies <= 50-99, demands 90% of the total), by the interior point
    without crossover: some 3 s of HiGHS's time at m = 700 on a 2-core VM."""
    rng = np.random.default_rng(0)
    supply = rng.integers(50, 100, m).astype(float)
    i, j = np.divmod(np.arange(m * m), m)
    h = new_highs()
    pass_arrays(h, cost=rng.random(m * m), lower=np.zeros(m * m), upper=np.full(m * m, np.inf),
                row_lower=np.concatenate([np.full(m, -np.inf), np.full(m, 0.9 * supply.sum() / m)]),
                row_upper=np.concatenate([supply, np.full(m, np.inf)]), indptr=np.arange(0, 2 * m * m + 1, 2),
                indices=np.stack([i, m + j], 1).ravel(), data=np.ones(2 * m * m), integer=np.zeros(m * m, bool),
                maximise=False)
    h.setOptionValue("solver", "ipm")
    h.setOptionValue("run_crossover", "off")
    return h


@pytest.fixture
def subscriptions(monkeypatch):
    """Every interrupt-callback subscription HiGHS is given (the callback types started)."""
    started = []
    original = highspy.Highs.startCallback

    def spy(self, callback_type):
        started.append(callback_type)
        return original(self, callback_type)

    monkeypatch.setattr(highspy.Highs, "startCallback", spy)
    return started


def test_a_watched_run_not_asked_to_stop_calls_no_python_and_gives_the_same_answer(ctrl_c_raises, subscriptions):
    # The main thread with Python's SIGINT handler: watched (Ctrl-C, and here a time limit too).
    assert threading.current_thread() is threading.main_thread()
    answers = []
    for ipm in (False, True):
        h = _knapsack(300, 40, integer=False)
        if ipm:
            h.setOptionValue("solver", "ipm")
        assert run_highs(h, time_limit_s=60.0) is False
        answers.append(h.getInfo().objective_function_value)
        assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
        assert h.HandleUserInterrupt is False
    assert subscriptions == []
    plain = _knapsack(300, 40, integer=False)
    plain.run()  # unwatched
    assert answers[0] == pytest.approx(plain.getInfo().objective_function_value, rel=1e-9)
    assert answers[1] == pytest.approx(answers[0], rel=1e-6)


def _ctrl_c_during_run(h) -> float:
    """Seconds from the start of ``run_highs(h)`` until it raised KeyboardInterrupt, Ctrl-C arriving after 0.3 s."""
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    t0 = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_highs(h)
    finally:
        timer.cancel()
    return time.perf_counter() - t0


def test_ctrl_c_stops_a_long_milp_through_the_watch(ctrl_c_raises, subscriptions):
    h = _knapsack(120, 12)
    assert _ctrl_c_during_run(h) < 5  # the MILP alone runs past 20 s
    assert h.getModelStatus() == highspy.HighsModelStatus.kInterrupt
    assert len(subscriptions) > 0 and h.HandleUserInterrupt is False  # subscribed to stop, unsubscribed after


def test_ctrl_c_stops_an_interior_point_lp_through_the_watch(ctrl_c_raises, subscriptions):
    h = _transport_ipm(700)
    assert _ctrl_c_during_run(h) < 5
    assert h.getModelStatus() == highspy.HighsModelStatus.kInterrupt and len(subscriptions) > 0


def test_a_time_limit_stop_from_the_watch_thread_reads_as_a_time_limit(subscriptions):
    # HiGHS's own time limit is not set here: only the watch stops the run, past the limit and its grace.
    h = _knapsack(120, 12)
    t0 = time.perf_counter()
    assert run_highs(h, time_limit_s=0.2) is True
    assert time.perf_counter() - t0 < 0.2 + watchdog_grace_s(0.2) + 2.0
    term, has_solution, objective, bound, *_ = read_highs(h, True, sense=-1, stopped=True)
    assert term == Termination.TIME_LIMIT and has_solution and bound >= objective - 1e-9
    assert len(subscriptions) > 0
    # the instance runs again unsubscribed: not stopped at once by the earlier request
    subscriptions.clear()
    h.clearModel()
    h.passModel(_knapsack(300, 40, integer=False).getLp())
    assert run_highs(h, time_limit_s=60.0) is False
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal and subscriptions == []


def test_where_another_wakeup_descriptor_holds_the_signal_the_callback_is_subscribed_from_the_start(
        ctrl_c_raises, subscriptions):
    # An event loop's descriptor stays in place; the Python handler then runs only inside HiGHS's callback.
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    try:
        h = _knapsack(120, 12)
        assert _ctrl_c_during_run(h) < 5
        assert h.getModelStatus() == highspy.HighsModelStatus.kInterrupt
        assert len(subscriptions) > 0
        assert signal.set_wakeup_fd(writer.fileno()) == writer.fileno()  # still the loop's
    finally:
        signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()


class _Recorder:
    def __init__(self):
        self.HandleUserInterrupt = False
        self.cancelled = 0

    def cancelSolve(self):
        self.cancelled += 1


def test_a_request_after_the_run_is_over_does_nothing():
    h = _Recorder()
    stop = StopOnRequest(h)
    stop.request()
    assert h.cancelled == 1 and h.HandleUserInterrupt is True
    stop.close()
    assert h.HandleUserInterrupt is False
    stop.request()
    stop.subscribe()
    assert h.cancelled == 1 and h.HandleUserInterrupt is False


def test_a_request_from_inside_close_on_the_same_thread_does_not_wait_for_itself():
    # Ctrl-C's handler (the watch's) runs in the main thread between bytecodes, possibly inside close(): the
    # request it makes there must not wait for the lock close() holds.
    class Reentering(_Recorder):
        def __setattr__(self, name, value):
            object.__setattr__(self, name, value)
            if name == "HandleUserInterrupt" and value is False and "stop" in self.__dict__:
                self.stop.request()

    h = Reentering()
    h.stop = StopOnRequest(h)
    t = threading.Thread(target=h.stop.close, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive() and h.cancelled == 0 and h.HandleUserInterrupt is False
