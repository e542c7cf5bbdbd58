"""Error hierarchy.

Every error goodopt raises on purpose derives from :class:`GoodoptError` and also
from the matching built-in exception, so callers can catch either
``goodopt.ScenarioError`` or plain ``ValueError``.

Messages name the offending field (as a dotted path such as
``jobs[3].max_gpus``) and say how to fix it.

Every error survives pickling with its class, message and attributes, so an
error raised on a worker process (or a Dask worker) reaches the caller intact.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class GoodoptError(Exception):
    """Base class of all errors raised by goodopt.

    Pickling rebuilds the error from the arguments its constructor was given
    (kept in ``_init_args``) and restores its attributes, whatever the
    subclass's constructor signature.
    """

    def __init__(self, *args: Any) -> None:
        self._init_args = args
        super().__init__(*args)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), getattr(self, "_init_args", self.args), self.__dict__)


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
        self._init_args = (field, problem, fix)


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


class TaskError(GoodoptError, RuntimeError):
    """Tasks of a run failed; the others' results were kept (cached where a cache was used).

    Attributes
    ----------
    failures:
        ``(task description, error message)`` per failed task, in task order.
    n_tasks:
        How many tasks the run had.
    """

    def __init__(self, failures: Iterable[tuple[object, object]], n_tasks: int) -> None:
        self.failures = tuple((str(d), str(m)) for d, m in failures)
        self.n_tasks = int(n_tasks)
        desc, msg = self.failures[0]
        more = f" (and {len(self.failures) - 1} more failed task(s))" if len(self.failures) > 1 else ""
        super().__init__(f"task {desc}: {msg}{more}")
        self._init_args = (self.failures, self.n_tasks)


class Interrupted(GoodoptError, KeyboardInterrupt):
    """A run was interrupted (Ctrl-C); finished tasks were kept.

    Attributes
    ----------
    n_done, n_tasks:
        Tasks finished (computed now or read from the cache) and tasks in all.
    cached:
        Whether the finished tasks are in a cache, so that running again resumes.
    """

    def __init__(self, n_done: int, n_tasks: int, cached: bool):
        self.n_done, self.n_tasks, self.cached = int(n_done), int(n_tasks), bool(cached)
        if cached:
            text = f"interrupted: {n_done} of {n_tasks} tasks done and cached; run again to resume"
        else:
            text = f"interrupted: {n_done} of {n_tasks} tasks done; nothing was written"
        super().__init__(text)
        self._init_args = (n_done, n_tasks, cached)
