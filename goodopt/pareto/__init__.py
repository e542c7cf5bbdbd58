"""Efficiency, fairness and cost as a Pareto front: exact points (epsilon-constraint on the MILP, each certified),
heuristic fronts (pymoo's multi-objective algorithms) and the indicators that compare them."""
