"""Optimisation formulations of the allocation problem (``goodopt.formulations``).

Holds the pymoo genetic-algorithm problem and operators (Pollux), the exact and
piecewise-linearised MILP models (pyomo), and Gavel's LP policies. pymoo is
imported only by the GA modules and pyomo only by the MILP/LP modules.
"""
