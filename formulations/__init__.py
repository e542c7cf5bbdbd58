"""Optimisation formulations of the allocation problem (``goodopt.formulations``).

* :mod:`.configs` — job configurations (type, GPU count, single/multi-node), exact pruning;
* :mod:`.milp` — the exact placement-level MILP and its configuration relaxation (pyomo);
* :mod:`.pwl` — the piecewise-linearised MILP over GPU counts (pyomo);
* :mod:`.placement` — placing chosen configurations onto nodes;
* :mod:`.ga` and :mod:`.ga_operators` — Pollux's problem and genetic operators (pymoo).

pymoo is imported only by the GA modules and pyomo only by the MILP modules.
"""
