"""Progress of long work (solver stages, GA generations, fits), as records on one logger.

Long-running code calls :func:`report`; nothing is printed unless someone
listens. Solvers also record their incumbent and bound over time with
:func:`record_point`, which :func:`tracing` collects (a solve's
``stats.trace``). ``goodopt -v`` prints the records as log lines; the command line's
:func:`status_line` shows the latest one on a transient status line while a
command runs (on a terminal, unless ``--quiet``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import sys
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.status import Status

#: The logger progress is reported on.
PROGRESS = logging.getLogger("goodopt.progress")


#: The points of the solve being traced in this context: (start time, list of points), or None.
_TRACE: ContextVar[tuple[float, list[tuple[float, float, float]]] | None] = ContextVar("goodopt_trace", default=None)


@contextlib.contextmanager
def tracing() -> Iterator[list[tuple[float, float, float]]]:
    """Collect the ``(seconds, incumbent, bound)`` points :func:`record_point` records while the block runs
    (in this thread or context); yields the list they go to."""
    points: list[tuple[float, float, float]] = []
    token = _TRACE.set((time.perf_counter(), points))
    try:
        yield points
    finally:
        _TRACE.reset(token)


def record_point(incumbent: float, bound: float = math.nan) -> None:
    """A point of the incumbent and bound over time (fitness units), kept when a solve is traced."""
    current = _TRACE.get()
    if current is not None:
        t0, points = current
        points.append((time.perf_counter() - t0, float(incumbent), float(bound)))


#: Where a task's own progress goes in this process (a worker's queue to its parent, or the parent's display).
#: Where task progress goes: ``sink(label, time_s, n_done, n_jobs)``.
TaskSink = Callable[[str, float, int, int], None]
_SINK: TaskSink | None = None
#: Seconds between two progress messages of one task (the last one is always sent).
SINK_EVERY_S = 1.0
_last_sent: dict[str, float] = {}


def set_task_sink(sink: TaskSink | None) -> None:
    """Send :func:`task_progress` messages to ``sink(label, time_s, n_done, n_jobs)`` (None: nowhere)."""
    global _SINK
    _SINK = sink
    _last_sent.clear()


#: The name of the task running in this context (:func:`task_named`), which its progress reports carry.
_TASK_NAME: ContextVar[str | None] = ContextVar("goodopt_task_name", default=None)


@contextlib.contextmanager
def task_named(name: str) -> Iterator[None]:
    """Within the block, :func:`task_progress` reports under ``name`` (a task's description, which names every
    field its run varies) instead of the label the running code gives itself."""
    token = _TASK_NAME.set(name)
    try:
        yield
    finally:
        _TASK_NAME.reset(token)


def task_progress(label: str, time_s: float, n_done: int, n_jobs: int) -> None:
    """A running task's progress (a simulation: simulated seconds, jobs done of all), at most once a second,
    under the running task's name where one is set (:func:`task_named`), else ``label``."""
    if _SINK is None:
        return
    label = _TASK_NAME.get() or label
    now = time.monotonic()
    if n_done < n_jobs and now - _last_sent.get(label, -math.inf) < SINK_EVERY_S:
        return
    _last_sent[label] = now
    try:
        _SINK(label, float(time_s), int(n_done), int(n_jobs))
    except Exception:  # noqa: BLE001 -- progress must never stop the work (a parent that went away, say)
        pass


def report(message: str, *args: object, detail: bool = False) -> None:
    """Report progress: ``detail`` records (every GA generation) are debug-level, milestones info-level."""
    PROGRESS.log(logging.DEBUG if detail else logging.INFO, message, *args)


def reported(detail: bool = False) -> bool:
    """Whether a :func:`report` of this kind would be handled (callers skip formatting its arguments if not)."""
    return PROGRESS.isEnabledFor(logging.DEBUG if detail else logging.INFO)


#: Seconds between two progress lines when there is no terminal to hold a status line (a log file, CI).
PLAIN_EVERY_S = 30.0


class Throttle(logging.Filter):
    """Let a progress record through only when :data:`PLAIN_EVERY_S` seconds have passed since the last one
    let through (the first at once): without a terminal, one line per 30 s instead of one per MILP stage or
    simulation round. Warnings and errors always pass."""

    def __init__(self, every_s: float = PLAIN_EVERY_S, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.every_s, self.clock, self._last = every_s, clock, -math.inf

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        now = self.clock()
        if now - self._last < self.every_s:
            return False
        self._last = now
        return True


def plain_progress(verbose: int = 0) -> Throttle | None:
    """Where standard error is no terminal (a log file, CI): progress records as plain log lines, info level, one
    per :data:`PLAIN_EVERY_S` unless ``verbose`` (then every one). Returns the filter it put on
    :data:`PROGRESS` (to take off with ``PROGRESS.removeFilter``); None on a terminal, where a status line
    shows progress instead (:func:`status_line`), or when ``verbose`` lets every record through."""
    if sys.stderr.isatty():
        return None
    PROGRESS.setLevel(min(PROGRESS.getEffectiveLevel(), logging.INFO))
    if verbose:
        return None
    throttle = Throttle()
    PROGRESS.addFilter(throttle)
    return throttle


class _StatusHandler(logging.Handler):
    def __init__(self, status: Status, title: str) -> None:
        super().__init__(logging.DEBUG)
        self.status, self.title = status, title

    def emit(self, record: logging.LogRecord) -> None:
        self.status.update(f"{self.title}: {record.getMessage()}")


@contextlib.contextmanager
def status_line(title: str, enabled: bool = True) -> Iterator[None]:
    """Show ``title`` and the latest progress record on standard error while the block runs."""
    if not enabled or not sys.stderr.isatty():
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status(title) as status:
        handlers = [_StatusHandler(status, title), _Forward(PROGRESS.getEffectiveLevel())]
        level, propagate = PROGRESS.level, PROGRESS.propagate
        for h in handlers:
            PROGRESS.addHandler(h)
        PROGRESS.setLevel(logging.DEBUG)  # every record reaches the status line ...
        PROGRESS.propagate = False  # ... and the log only those its level lets through (-v), as before
        try:
            yield
        finally:
            for h in handlers:
                PROGRESS.removeHandler(h)
            PROGRESS.setLevel(level)
            PROGRESS.propagate = propagate


class _Forward(logging.Handler):
    """Hands records at or above the level the log had to the parent loggers' handlers."""

    def emit(self, record: logging.LogRecord) -> None:
        if PROGRESS.parent is not None:
            PROGRESS.parent.handle(record)
