"""Optimisation formulations of the allocation problem (``goodopt.formulations``).

* :mod:`.configs` — job configurations (type, GPU count, single/multi-node), exact pruning;
* :mod:`.milp` — the exact placement-level MILP and its configuration relaxation (pyomo);
* :mod:`.pwl` — the piecewise-linearised MILP over GPU counts (pyomo);
* :mod:`.ga` — Pollux's problem for pymoo (its operators live beside the GA, in
  :mod:`goodopt.solvers.ga_operators`; placing configurations onto nodes in :mod:`goodopt.placement`).

pymoo is imported only by the GA module and pyomo only by the MILP modules.
"""
