"""Former home of the sweep runner: see :mod:`goodopt.runs` (this import path keeps working)."""

from .runs.spec import SweepSpec, Variant, load_spec, spec_from_dict, spec_to_dict
from .runs.sweep import SweepResult, run_sweep
from .runs.tasks import TIMING_COLUMNS, expand

__all__ = ["TIMING_COLUMNS", "SweepResult", "SweepSpec", "Variant", "expand", "load_spec", "run_sweep",
           "spec_from_dict", "spec_to_dict"]
