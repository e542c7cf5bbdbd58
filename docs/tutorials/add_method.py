"""Add a method of your own"""

# %%
# A method is a function of the validated problem, the evaluator and its
# options that returns a `MethodOutcome`: the allocation and *why* it stopped.
# goodopt does the rest: it re-scores the answer with the evaluator, checks it
# against the constraints and fills the `SolveResult`, exactly as for its own
# methods. Here: a hill climb from greedy's answer whose moves swap the
# allocations of two jobs, scoring a whole population of moves in one
# vectorised call.

# %%
import time
from dataclasses import dataclass

import numpy as np
from goodopt.solvers.api import Method, register_method
from goodopt.solvers.options import MethodOptions
from goodopt.solvers.result import MethodOutcome, Termination

import goodopt


@dataclass(frozen=True, kw_only=True)
class ClimbOptions(MethodOptions):
    method = "climb"
    randomised = True          # goodopt then requires a seed: same seed, same answer
    rounds: int = 200          # rounds of moves
    moves: int = 64            # moves scored per round


def solve_climb(problem, ev, opts, t_start) -> MethodOutcome:
    rng = np.random.default_rng(opts.seed)
    x = goodopt.solve(problem, "greedy").x.copy()
    best = ev.evaluate(x[None])
    fit = float(best.fitness[0])
    for _ in range(opts.rounds):
        pop = np.repeat(x[None], opts.moves, axis=0)
        a, b = rng.integers(problem.n_jobs, size=(2, opts.moves))
        rows = np.arange(opts.moves)
        pop[rows, a], pop[rows, b] = x[b], x[a]                       # jobs a and b trade their GPUs
        res = ev.evaluate(pop)
        score = np.where(res.violation == 0, res.fitness, -np.inf)
        i = int(np.argmax(score))
        if score[i] > fit:
            x, fit = pop[i], float(score[i])
    return MethodOutcome(alloc=x, status=Termination.COMPLETED, solve_s=time.perf_counter() - t_start,
                         solver="climb", raw_status="completed")


register_method("climb", Method(ClimbOptions, solve_climb))

# %%
# The method now takes options like any other (unknown ones are errors that
# list the valid ones), and `compare` ranks it beside the built-in methods
# against the certified optimum:

# %%
from goodopt.runs import compare, summary

table = compare(["family:sia-64:0", "family:sia-64:1"], ["milp", "greedy", "climb"], n_seeds=1, progress=False)
print(summary(table)[["scenario", "method", "fitness", "relative_fitness", "status"]].round(4).to_string(index=False))

# %%
try:
    goodopt.solve(goodopt.load_scenario("family:sia-64:0"), "climb", {"seed": 0, "round": 10})
except goodopt.GoodoptError as err:
    print(type(err).__name__, "|", err)
