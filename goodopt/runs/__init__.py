"""Runs: many solves or simulations on one runner, cached, with safe outputs.

* :mod:`~goodopt.runs.spec` -- the sweep grid, read from YAML;
* :mod:`~goodopt.runs.tasks` -- one task model per kind, and how a task runs;
* :mod:`~goodopt.runs.cache` -- results stored under a key of all their inputs;
* :mod:`~goodopt.runs.execute` -- one runner: inline, local processes or Dask;
* :mod:`~goodopt.runs.tables` -- result rows, reference columns, the table writer;
* :mod:`~goodopt.runs.sweep`, :mod:`~goodopt.runs.compare`,
  :mod:`~goodopt.runs.simulations` -- the three ways to run a grid.
"""

from .compare import compare
from .spec import SweepSpec, load_spec, spec_from_dict, spec_to_dict
from .sweep import SweepResult, run_sweep
from .tables import COLUMNS, summary, write_table

__all__ = ["COLUMNS", "SweepResult", "SweepSpec", "compare", "load_spec", "run_sweep", "spec_from_dict",
           "spec_to_dict", "summary", "write_table"]
