"""Solvers behind ``goodopt.solve`` (``goodopt.solvers``): run a formulation,
report the solution apart from why the solver stopped, and re-score every
allocation with the true evaluator.
"""
