"""Solvers under limits: deadlines, node and time budgets, the watchdog, Ctrl-C, threads."""

import numpy as np
import pytest
from goodopt.solvers import Termination

import goodopt
from goodopt.errors import ValidationError
from goodopt.families import FAMILIES, family_scenario


def test_greedy_stops_at_its_deadline_with_a_feasible_allocation():
    """A deadline already past: greedy stops at its first look at the clock (16 steps) with what it has built,
    which is feasible; no deadline, or a far one, gives the full greedy, step for step."""
    import time

    from goodopt.formulations.configs import enumerate_configs
    from goodopt.solvers.heuristics import greedy
    pr = FAMILIES["cluster-256"].scenario(0).problem()
    cs = enumerate_configs(pr)
    full = greedy(pr, cs)
    cut = greedy(pr, cs, deadline=time.perf_counter())
    far = greedy(pr, cs, deadline=time.perf_counter() + 3600)
    assert cut[2] == 16 < full[2] and pr.evaluator().violation(cut[0]) == 0
    assert pr.evaluator().fitness(cut[0]) < pr.evaluator().fitness(full[0])
    assert far[2] == full[2] and np.array_equal(far[0], full[0])


@pytest.mark.parametrize("method", ["milp", "milp-pwl"])
def test_a_timed_solve_returns_greedys_whole_start_and_its_repairs_stop_at_the_deadline(monkeypatch, method):
    """cluster-2048 with a 0.05 s limit: the LP relaxation cannot finish, so greedy builds the first candidate,
    and runs to its end whatever the limit (cut at the deadline it once gave a few jobs' allocation: 0.05% of
    the optimum on five-types-2048); after the configuration model, greedy repairs its unplaced choice (or the
    PWL model's decoding) and that run gets the solve's deadline (it had none: 1.2 s of greedy after a 0.05 s
    limit). The answer is the time limit's, feasible, and at least greedy's own."""
    from goodopt.solvers.milp import levels, pwl_method
    from goodopt.solvers.milp import method as milp_method

    calls = []

    def spy(original):
        def wrapped(*args, **kwargs):
            calls.append((kwargs.get("start") is not None, kwargs.get("deadline")))
            return original(*args, **kwargs)
        return wrapped

    for module in (levels, milp_method, pwl_method):
        monkeypatch.setattr(module, "greedy", spy(module.greedy))
    pr = FAMILIES["cluster-2048"].scenario(0).problem()
    res = goodopt.solve(pr, method, {"time_limit_s": 0.05})
    assert res.status == Termination.TIME_LIMIT and res.has_solution and res.feasible
    starts = [d for repair, d in calls if not repair]
    assert starts == [None] and all(d is not None for repair, d in calls if repair)
    assert res.fitness >= goodopt.solve(pr, "greedy").fitness * (1 - 1e-12)


@pytest.mark.parametrize("limit", [1e-6, 0.01, 0.1])
@pytest.mark.parametrize("family", ["sia-64", "hetero-16", "five-types-512"])
def test_whatever_the_time_limit_milp_answers_at_least_greedys_start(family, limit):
    pr = FAMILIES[family].scenario(1).problem()
    res = goodopt.solve(pr, "milp", {"time_limit_s": limit})
    assert res.has_solution and res.feasible and res.status in (Termination.TIME_LIMIT, Termination.OPTIMAL)
    assert res.fitness >= goodopt.solve(pr, "greedy").fitness * (1 - 1e-12)


def test_a_pwl_solve_out_of_time_does_not_build_its_model():
    # the limit passes while the configurations are listed: the PWL model (0.7 s to build at 2048 GPUs) is
    # skipped, and the solve says so with the time limit's status and greedy's allocation (stopped at the
    # deadline: feasible) as its incumbent
    pr = FAMILIES["cluster-256"].scenario(0).problem()
    res = goodopt.solve(pr, "milp-pwl", {"time_limit_s": 1e-9})
    assert res.status == Termination.TIME_LIMIT and res.has_solution and res.feasible
    assert res.extra["stages"][-1]["status"].startswith("skipped: time limit")
    assert res.extra["incumbent"] == "greedy"


def test_a_thread_count_beyond_any_machine_is_refused_before_highs_allocates_it():
    """HiGHS sizes its pool up front: 1e8 threads ended in std::bad_alloc inside the solve (a traceback),
    for milp and for the GA's LP-rounded start alike."""
    pr = FAMILIES["tiny"].scenario(0).problem()
    for method, opts in (("milp", {}), ("nsga2", {"seed": 0}), ("ga", {"seed": 0})):
        with pytest.raises(ValidationError, match=r"options\.threads.*at most the machine's cores"):
            goodopt.solve(pr, method, {**opts, "threads": 10**8})
    assert goodopt.solve(pr, "milp", {"threads": 2}).status == Termination.OPTIMAL


def test_placement_model_time_limit_before_solving_is_reported():
    pr = FAMILIES["cluster-256"].scenario(0).problem()
    res = goodopt.solve(pr, "milp", {"formulation": "placement", "time_limit_s": 0.05})
    assert res.status == Termination.TIME_LIMIT
    assert res.has_solution and res.feasible  # the greedy incumbent


def test_node_limit_returns_incumbent_bound_and_gap():
    # The placement-level model of mixed-64 (64 GPUs of three types) does not close at its root; a budget
    # of one branch-and-bound node (deterministic, unlike a time limit) stops it with the incumbent, the
    # root's bound and a gap. The configuration route certifies the same round.
    pr = FAMILIES["mixed-64"].scenario(0).problem()
    res = goodopt.solve(pr, "milp", {"formulation": "placement", "node_limit": 1})
    assert res.status == Termination.ITERATION_LIMIT and res.stats.nodes == 1
    assert res.has_solution and res.feasible
    assert np.isfinite(res.bound) and res.bound >= res.fitness and 0 < res.gap < 0.1
    exact = goodopt.solve(pr, "milp")
    assert exact.status == Termination.OPTIMAL and exact.fitness <= res.bound * (1 + 1e-9)


def test_time_limit_returns_incumbent():
    pr = FAMILIES["mixed-64"].scenario(0).problem()
    res = goodopt.solve(pr, "milp", {"formulation": "placement", "time_limit_s": 0.5})
    assert res.status == Termination.TIME_LIMIT
    assert res.has_solution and res.feasible
    if np.isfinite(res.bound):  # the bound exists once the root was solved, which depends on the machine
        assert res.bound >= res.fitness
    assert res.stats.total_s < 10


class _StuckHighs:
    """Stands in for a HiGHS instance caught in a heuristic that never checks its own time limit: ``run``
    returns only once ``cancelSolve`` is called (or after 30 s, which the test would notice)."""

    def __init__(self):
        import threading

        self.cancelled = threading.Event()
        self.HandleUserInterrupt = False

    def run(self):
        self.cancelled.wait(30)

    def cancelSolve(self):
        self.cancelled.set()


@pytest.mark.parametrize("in_worker", [False, True])
def test_the_watchdog_holds_a_solver_to_its_time_limit(in_worker, caplog):
    # HiGHS may overrun its own limit (it sat in its root rounding heuristic five times past a 300 s limit);
    # run_highs asks it to stop once the limit has passed by the grace, in the main thread and in workers.
    import threading
    import time

    from goodopt.solvers.mip_solvers.highs_run import run_highs
    from goodopt.solvers.mip_solvers.solver_watch import watchdog_grace_s

    h, box = _StuckHighs(), {}

    def call():
        t0 = time.perf_counter()
        box["stopped"] = run_highs(h, time_limit_s=0.2)
        box["seconds"] = time.perf_counter() - t0

    if in_worker:
        t = threading.Thread(target=call)
        t.start()
        t.join(40)
    else:
        call()
    assert box["stopped"] and h.cancelled.is_set()
    assert box["seconds"] < 0.2 + watchdog_grace_s(0.2) + 1.0
    assert "past its 0.2 s time limit" in caplog.text
    assert run_highs(_FinishingHighs(), time_limit_s=5.0) is False  # a solver that stops in time is left alone


class _FinishingHighs(_StuckHighs):
    def run(self):
        return None


def test_one_thread_watches_every_run_and_a_forked_child_gets_its_own():
    # Many runs, one watching thread (none started per run); a child forked while it exists (a sweep's worker)
    # starts its own, which holds a stuck run there to its time limit too.
    import multiprocessing
    import threading

    from goodopt.solvers.mip_solvers.highs_run import run_highs
    from goodopt.solvers.mip_solvers.solver_watch import WATCHDOG_THREAD

    for _ in range(20):
        assert run_highs(_FinishingHighs(), time_limit_s=5.0) is False
    assert sum(t.name == WATCHDOG_THREAD for t in threading.enumerate()) == 1
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        stopped, watchers = pool.apply(_stuck_run_in_child)
    assert stopped and watchers == 1


def _stuck_run_in_child():
    import threading

    from goodopt.solvers.mip_solvers.highs_run import run_highs
    from goodopt.solvers.mip_solvers.solver_watch import WATCHDOG_THREAD

    h = _StuckHighs()
    stopped = run_highs(h, time_limit_s=0.1)
    return stopped and h.cancelled.is_set(), sum(t.name == WATCHDOG_THREAD for t in threading.enumerate())


class _CtrlCHighs(_StuckHighs):
    """Ctrl-C arrives while it runs; ``run`` returns once ``release`` is set (by ``cancelSolve`` unless
    ``deaf``, a solver with no interrupt check for a while), or after 30 s."""

    def __init__(self, deaf=False):
        super().__init__()
        self.deaf, self.release = deaf, __import__("threading").Event()

    def run(self):
        import os
        import signal

        os.kill(os.getpid(), signal.SIGINT)
        self.release.wait(30)

    def cancelSolve(self):
        self.cancelled.set()
        if not self.deaf:
            self.release.set()


def test_ctrl_c_stops_a_solver_on_the_main_thread_and_then_raises(ctrl_c_raises):
    # HiGHS runs on the calling thread; Ctrl-C there asks it to stop (no exception inside its callback) and
    # KeyboardInterrupt follows once it has returned; the handlers are as before afterwards.
    import signal
    import threading
    import time

    from goodopt.solvers.mip_solvers.highs_run import run_highs

    assert threading.current_thread() is threading.main_thread()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    h = _CtrlCHighs()
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        run_highs(h)
    assert h.cancelled.is_set() and time.perf_counter() - t0 < 5
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.set_wakeup_fd(-1) == -1  # the watchdog's wake-up socket is gone again


def test_a_solver_deaf_to_ctrl_c_gets_the_stuck_action_after_the_grace(monkeypatch, ctrl_c_raises):
    # The CLI's action exits at once; here it releases the solver, which shows it ran, and only after the grace.
    import time

    import goodopt.solvers.mip_solvers.solver_watch as watch
    from goodopt.solvers.mip_solvers.highs_run import run_highs

    monkeypatch.setattr(watch, "INTERRUPT_GRACE_S", 0.5)
    h, seen = _CtrlCHighs(deaf=True), {}

    def action():
        seen["after_s"] = time.perf_counter() - t0
        h.release.set()

    watch.on_stuck_interrupt(action)
    try:
        t0 = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            run_highs(h)
    finally:
        watch.on_stuck_interrupt(None)
    assert h.cancelled.is_set() and 0.5 <= seen["after_s"] < 5


def test_a_watchdog_stop_reads_as_a_time_limit_with_the_incumbent():
    # A MILP stopped through the interrupt path (here at its first incumbent) reports TIME_LIMIT, not an
    # error, with that incumbent and a bound: maximise sum_i v_i x_i over 40 binaries, sum_i w_i x_i <= 50.
    import threading

    import highspy
    from goodopt.solvers.mip_solvers.highs_run import new_highs, read_highs, run_highs

    rng = np.random.default_rng(0)
    n = 40
    h = new_highs()
    h.passModel(_knapsack(highspy, rng.integers(10, 60, n), rng.integers(5, 30, n), 50))
    h.HandleUserInterrupt = True
    threads = []
    h.cbMipImprovingSolution += lambda *_: (threads.append(threading.current_thread()), h.cancelSolve())
    run_highs(h)
    term, has_solution, objective, bound, *_ = read_highs(h, True, sense=-1, stopped=True)
    assert h.getModelStatus() == highspy.HighsModelStatus.kInterrupt
    assert threads[0] is threading.main_thread()  # HiGHS ran on the calling thread
    assert term == Termination.TIME_LIMIT and has_solution and bound >= objective - 1e-9
    h.HandleUserInterrupt = False


def _knapsack(highspy, values, weights, capacity):
    lp = highspy.HighsLp()
    n = len(values)
    lp.num_col_, lp.num_row_ = n, 1
    lp.col_cost_ = -np.asarray(values, dtype=float)
    lp.col_lower_, lp.col_upper_ = np.zeros(n), np.ones(n)
    lp.row_lower_, lp.row_upper_ = np.array([-highspy.kHighsInf]), np.array([float(capacity)])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.arange(n + 1)
    lp.a_matrix_.index_ = np.zeros(n, dtype=np.int32)
    lp.a_matrix_.value_ = np.asarray(weights, dtype=float)
    lp.integrality_ = [highspy.HighsVarType.kInteger] * n
    return lp


def test_a_solve_keeps_its_incumbent_and_bound_over_time(testbed):
    exact = goodopt.solve(testbed, "milp")
    ga = goodopt.solve(testbed, "ga", {"seed": 0, "n_gen": 8, "pop_size": 20})
    for res in (exact, ga):
        t = [p[0] for p in res.stats.trace]
        assert len(t) >= 1 and t == sorted(t) and t[-1] <= res.stats.total_s
    assert len(ga.stats.trace) == 8 and all(np.isnan(p[2]) for p in ga.stats.trace)  # a GA proves no bound
    best = [p[1] for p in ga.stats.trace]
    assert best == sorted(best) and best[-1] == pytest.approx(ga.fitness)  # elitist: never worse
    assert exact.stats.trace[-1][2] >= exact.fitness * (1 - 1e-9)  # the last bound bounds the answer
    # the exact course is the run's best placed allocation and best bound: never worse, never looser
    inc = [p[1] for p in exact.stats.trace if np.isfinite(p[1])]
    bnd = [p[2] for p in exact.stats.trace if np.isfinite(p[2])]
    assert inc == sorted(inc) and bnd == sorted(bnd, reverse=True) and max(inc) <= min(bnd) * (1 + 1e-9)
    html = exact._repr_html_()
    assert "<table>" in html and "optimal" in html and f"{exact.fitness:.6g}" in html


def test_highs_runs_on_one_thread_unless_the_threads_option_says_more():
    from goodopt.solvers.mip_solvers.pyomo_route import new_highs

    got = new_highs().getOptionValue("threads")
    assert (got[1] if isinstance(got, tuple) else got) == 1
    res = goodopt.solve(family_scenario("family:tiny:0").problem(), "milp", {"threads": 2})
    assert res.status == Termination.OPTIMAL and res.options["threads"] == 2


def test_runs_asking_for_different_thread_counts_in_one_thread_all_solve():
    # HiGHS sizes a thread's pool at its first run; a later run in that thread asking another size used to end
    # with model status "not set". A sweep worker runs its solves in one thread, so a task with `threads: 2`
    # after one with the default broke every solve that followed.
    import threading

    import highspy
    from goodopt.solvers.mip_solvers.pyomo_route import new_highs, run_highs

    statuses = []

    def worker():
        rng = np.random.default_rng(0)
        for threads in (1, 2, 1, 2):
            h = new_highs()
            h.setOptionValue("threads", threads)
            h.passModel(_knapsack(highspy, rng.integers(10, 60, 40), rng.integers(5, 30, 40), 50))
            run_highs(h)
            statuses.append(h.getModelStatus())

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert statuses == [highspy.HighsModelStatus.kOptimal] * 4
