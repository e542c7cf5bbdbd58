"""Benchmark MILP solvers"""

# %%
# Every exact model runs on HiGHS, SCIP, CBC and CP-SAT (and Gurobi where
# gurobipy is installed), handed the same arrays and judged alike: goodopt
# re-scores each answer and re-checks each solver's bound, so a status means
# the same for every solver. `formulation: reference` hands each solver the
# documented model whole, with nothing solved before it: the fair ground.

# %%
from goodopt.runs import compare
from goodopt.runs.performance import method_summary, performance_profile

solvers = ["milp@highs", "milp@scip", "milp@cbc", "milp@cpsat"]
instances = ["family:sia-64:0", "family:sia-64:1", "family:mixed-64:0"]
table = compare(instances, solvers, options={"formulation": "reference", "node_limit": 20000}, progress=False)
print(table[["scenario", "method", "status", "fitness", "bound", "nodes"]].round(5).to_string(index=False))

# %%
# Time is measured here on whatever machine builds this page, so read the
# ratios rather than the seconds. An OR paper's two summaries: per solver, the
# instances solved (to the best answer found, 1e-4) and the shifted geometric
# mean of seconds; and a Dolan-More performance profile, the share of instances
# each solver solves within a factor tau of the fastest.

# %%
print(method_summary(table).round(3).to_string(index=False))

# %%
import matplotlib.pyplot as plt

profile = performance_profile(table)
fig, ax = plt.subplots(figsize=(6, 3.5))
for solver in profile.columns:
    ax.step(profile.index, profile[solver], where="post", label=solver)
ax.set_xscale("log")
ax.set_xlabel("tau (time relative to the fastest)")
ax.set_ylabel("share of instances")
ax.legend()

# %%
# The same comparison from the command line, with the profile drawn:
#
#     goodopt compare family:sia-64:0 family:sia-64:1 --methods milp@highs,milp@scip,milp@cbc \
#         --option formulation=reference --profile solvers.png
#
# To check a solver outside goodopt, write the model with
# `goodopt solve SCENARIO --method milp --write-model model.mps`, solve the file
# with any solver and judge its solution file with `goodopt check`; the shipped
# benchmark library (`scenarios/library`) holds such models with certified
# values ([Benchmarks](../benchmarks.md)).
