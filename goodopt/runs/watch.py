"""What running tasks report of themselves, shown while a run goes on.

A simulation reports its simulated time and jobs done every second or so
(:func:`goodopt.progress.task_progress`), in this process or in a local
worker, whose reports reach the parent through a queue. :class:`TaskWatch`
puts them on the run's progress bar (``simulations 0/2 (generated-1.0-0 /
pollux: 40/120 jobs, 3.2 h simulated, 2 min in)``) and, where no
terminal shows a bar (``nohup``, CI, a notebook's log), writes a plain progress
record every :data:`PLAIN_EVERY_S` seconds to the ``goodopt.progress`` logger.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue as queue_module
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from goodopt.progress import PLAIN_EVERY_S, report, set_task_sink

if TYPE_CHECKING:
    from queue import Queue

    from rich.progress import Progress, TaskID

__all__ = ["PLAIN_EVERY_S", "Route", "TaskWatch", "report_queue", "watching"]


class Tally(Protocol):
    """What a watch reads of a run's count of tasks."""

    done: int
    total: int


class TaskWatch:
    """The running tasks' last reports, shown on ``bar``'s row ``row`` under ``label``."""

    def __init__(self, bar: Progress, row: TaskID, label: str, tally: Tally) -> None:
        self.bar, self.row, self.label, self.tally = bar, row, label, tally
        self.current = label
        self.plain = not sys.stderr.isatty()
        self.running: dict[str, tuple[float, int, int, float]] = {}
        self._lock = threading.Lock()
        self._last_plain = time.monotonic()

    def update(self, label: str, time_s: float, n_done: int, n_jobs: int) -> None:
        now = time.monotonic()
        with self._lock:
            first = self.running.get(label, (0.0, 0, 0, now))[3]
            if n_done >= n_jobs:
                self.running.pop(label, None)
            else:
                self.running[label] = (time_s, n_done, n_jobs, first)
        self.show()

    def show(self) -> None:
        """Refresh the bar's line, and write a plain line when one is due."""
        with self._lock:
            parts = [_describe(label, *state) for label, state in self.running.items()]
        text = "; ".join(parts)
        self.bar.update(self.row, description=f"{self.current} ({text})" if text else self.current)
        now = time.monotonic()
        if self.plain and now - self._last_plain >= PLAIN_EVERY_S:
            self._last_plain = now
            report("%s: %d of %d done%s", self.label, self.tally.done, self.tally.total,
                   f"; running {text}" if text else "")


def _describe(label: str, time_s: float, n_done: int, n_jobs: int, first: float) -> str:
    """One running task's line. No time left is promised: a simulation's last jobs cost more than its first
    (the queue grows with the load), so jobs done per minute so far underestimate what is left."""
    elapsed = time.monotonic() - first
    since = f", {elapsed / 60:.0f} min in" if elapsed > 5 else ""
    return f"{label}: {n_done}/{n_jobs} jobs, {time_s / 3600:.1f} h simulated{since}"


def _exit_with_parent(parent_pid: int) -> None:
    """In the queue's server process: exit when the parent process is gone (even after its SIGKILL)."""
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="goodopt-parent-watch", daemon=True).start()


class Route:
    """Where the workers' reports go now: ``target`` (a :meth:`TaskWatch.update`), or nowhere (None)."""

    def __init__(self) -> None:
        self.target: Callable[..., None] | None = None

    def deliver(self, *message: Any) -> None:  # Any: a progress message of any kind
        target = self.target
        if target is not None:
            target(*message)


@contextlib.contextmanager
def report_queue() -> Iterator[tuple[Queue[Any], Route]]:  # Any: progress messages of any kind
    """A queue local workers put their reports on, drained in this process to the yielded :class:`Route`'s
    target while the block runs. Yields (queue, route)."""
    from multiprocessing.managers import SyncManager

    manager = SyncManager(ctx=multiprocessing.get_context("spawn"))
    manager.start(initializer=_exit_with_parent, initargs=(os.getpid(),))  # gone with a killed parent, too
    q = manager.Queue()
    route = Route()
    stop = threading.Event()

    def drain() -> None:
        while not stop.is_set():
            try:
                route.deliver(*q.get(timeout=0.25))
            except queue_module.Empty:
                continue
            except (EOFError, OSError, TypeError):  # the manager went away
                return

    thread = threading.Thread(target=drain, name="goodopt-progress", daemon=True)
    thread.start()
    try:
        yield q, route
    finally:
        stop.set()
        thread.join(timeout=2)
        manager.shutdown()


@contextlib.contextmanager
def watching(watch: TaskWatch, local_workers: bool, route: Route | None = None) -> Iterator[Queue[Any] | None]:  # Any: progress messages of any kind
    """Route task reports to ``watch`` while the block runs: directly in this process, and for local workers
    through a queue (yielded, for the workers' initializer; None without workers). Given the ``route`` of an
    open :func:`report_queue` (workers that outlive this block), its reports go to ``watch`` until the block
    ends and None is yielded."""
    set_task_sink(watch.update)
    try:
        if route is not None:
            route.target = watch.update
            try:
                yield None
            finally:
                route.target = None
        elif local_workers:
            with report_queue() as (q, own):
                own.target = watch.update
                yield q
        else:
            yield None
    finally:
        set_task_sink(None)
