"""The ``milp`` and ``milp-pwl`` methods, as named stages over one :class:`~.run.MilpRun`.

``milp`` (``formulation="auto"``, the default):

0. *LP first* (from 2,000 job-node pairs, finite p): the LP relaxation under
   every type's node-pattern rows, rounded and dived from
   (:mod:`.certify`, :mod:`.dive`); it ends the solve when a candidate reaches
   its bound, and otherwise its duals bound every configuration
   (:mod:`.reduce`);
1. *start*: configurations, a greedy incumbent (and the user's warm start),
   configurations whose LP bound lies below the best candidate dropped, the
   objective scaled to the incumbent with options pruned against it
   (:mod:`goodopt.formulations.scaled_objective`);
2. *configuration level* (aggregate capacity per GPU type, a valid
   relaxation), as arrays into HiGHS or through pyomo, re-scaled until the
   solver's answer is resolved (:func:`.levels.solve_config_model`); after the
   LP first, under every type's node-pattern rows at once when reduced costs
   left few configurations beside those the reduced-cost dive held open
   (:data:`.levels.EVERY_TYPE_FIRST_RATIO`);
3. *placement*: the optimum's configurations are placed, by the packing
   heuristic and, per GPU type it cannot pack, by the exact node-pattern
   check (:func:`.exact_placement.place_choice`); a type proven unplaceable gets node-pattern
   rows in the configuration level, which is solved again
   (:func:`.pattern_rows.placement_rows_loop`; no-good cuts where patterns do not apply);
4. *placement level* (job x node model) only when that did not settle it;
5. *judge*: the status comes from the evaluator's re-score and the loosened
   bound (:func:`judge`), never from the solver alone.

``formulation="reference"`` solves the documented exact model once, as built, on the chosen solver
(:mod:`.reference`): the configuration level under every type's node-pattern rows, or the placement level;
nothing runs before it, so every solver is handed the same arrays (the fair ground for comparing solvers).
``formulation="placement"`` solves the placement-level model directly;
``formulation="config"`` stops after the relaxation and its (repaired)
placement, reporting the gap to its bound.

``milp-pwl`` solves the piecewise-linear model of
:mod:`goodopt.formulations.pwl` on the same scaled terms, places and repairs
its configurations, and re-scores the allocation with the evaluator. Its
bound adds the total interpolation error to the model's bound, so it is valid
for the true problem; it never certifies.

Modules, bottom up: :mod:`.run` (the run's state and deadline), :mod:`.models`
(the two models), :mod:`.exact_placement` (exact placement of a choice),
:mod:`.reduce` (reduced-cost fixing), :mod:`.dive` (dives from the LP),
:mod:`.certify` (certificates that end a stage early), :mod:`.pattern_rows`
(making the configuration level place), :mod:`.verdict` (status and result),
:mod:`.levels` (the two levels), :mod:`.method` and :mod:`.pwl_method` (the entry
points).
"""

from .method import solve_milp
from .pwl_method import solve_pwl
from .run import objective_to_fitness
from .verdict import judge

__all__ = ["judge", "objective_to_fitness", "solve_milp", "solve_pwl"]
