"""Error hierarchy.

Every error goodopt raises on purpose derives from :class:`GoodoptError` and also
from the matching built-in exception, so callers can catch either
``goodopt.ScenarioError`` or plain ``ValueError``.

Messages name the offending field (as a dotted path such as
``jobs[3].max_gpus``) and say how to fix it.
"""

from __future__ import annotations


class GoodoptError(Exception):
    """Base class of all errors raised by goodopt."""


class ValidationError(GoodoptError, ValueError):
    """An input value is malformed or out of range.

    Attributes
    ----------
    field:
        Dotted path of the offending field (``""`` when the whole input is wrong).
    """

    def __init__(self, field: str, problem: str, fix: str | None = None):
        self.field = field
        self.problem = problem
        self.fix = fix
        where = f"{field}: " if field else ""
        text = f"{where}{problem}"
        if fix:
            text += f" ({fix})"
        super().__init__(text)


class ScenarioError(ValidationError):
    """A scenario file or scenario mapping is invalid."""


class ShapeError(GoodoptError, ValueError):
    """An array has the wrong shape or dtype for the problem it is used with."""


class TraceError(GoodoptError, FileNotFoundError):
    """Published trace files are missing or unreadable."""


class FitError(GoodoptError, RuntimeError):
    """A model could not be fitted to measured data."""


class SolverError(GoodoptError, RuntimeError):
    """A solver failed in a way that produced no usable result."""


class SimulationError(GoodoptError, RuntimeError):
    """A simulation broke an invariant or could not finish (names the round and job)."""
