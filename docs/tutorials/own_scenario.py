"""Write your own scenario"""

# %%
# A scenario is a cluster, an objective and jobs. Write it as YAML (every field
# is listed in [File formats](../formats.md)); goodopt checks it on load.

# %%
from pathlib import Path

Path("two-types.yaml").write_text("""
name: two-types
cluster:
  node_groups:
    - {gpu_type: t4, gpus_per_node: 4, n_nodes: 2}
    - {gpu_type: a100, gpus_per_node: 8, n_nodes: 1}
objective: {p: -1, eps: 0.001, restart_delay_s: 30}
jobs:
  - {name: bert-0, application: bert, age_s: 3600, max_gpus: 8}
  - {name: cifar-0, application: cifar10, age_s: 600, allocation: {t4-0: 2}, n_reallocs: 1}
  - {name: imagenet-0, application: imagenet, age_s: 7200}
  - {name: ncf-0, application: ncf, age_s: 300}
  - {name: yolo-0, application: yolov3, age_s: 1800, max_gpus: 4}
""")

import goodopt

scenario = goodopt.load_scenario("two-types.yaml")
problem = scenario.problem()
print(problem.n_jobs, "jobs,", problem.n_gpus, "GPUs on nodes", ", ".join(problem.node_names))

# %%
# A mistake is reported with the field that holds it and the fix, as an error
# of goodopt's own hierarchy (here a `ValueError` too):

# %%
Path("broken.yaml").write_text(Path("two-types.yaml").read_text().replace("max_gpus: 4", "max_gpus: -4"))
try:
    goodopt.load_scenario("broken.yaml")
except goodopt.GoodoptError as err:
    print(type(err).__name__, "|", err)

# %%
# Solve it exactly, then score an allocation of your own with the same
# evaluator: every method's fitness is this evaluator's number.

# %%
exact = goodopt.solve(scenario, "milp")
print(exact.status, round(exact.fitness, 5))
for job, nodes in exact.to_dict(problem)["allocation"].items():
    print(f"  {job:11s} {nodes}")

mine = problem.allocation_from_mapping({
    "bert-0": {"a100-0": 4}, "cifar-0": {"t4-0": 2}, "imagenet-0": {"a100-0": 4},
    "ncf-0": {"t4-0": 1}, "yolo-0": {"t4-1": 4},
})
ev = problem.evaluator()
print("mine:", round(float(ev.fitness(mine[None])[0]), 5), "against the optimum", round(exact.bound, 5))
