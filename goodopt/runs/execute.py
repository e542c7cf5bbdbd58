"""Running many tasks: in this process, on a local process pool, or on a Dask cluster.

:func:`map_tasks` is the one runner behind ``compare``, ``sweep``,
``simulate`` and the figures. Its promises:

* ``on_result(i, result)`` is called as each result arrives (the sweep stores
  it in its cache there), so work finished before an error or an interrupt
  is kept;
* a task that raises a :class:`~goodopt.errors.GoodoptError` does not stop the
  others; when all have run, :class:`~goodopt.errors.TaskError` names the
  failed tasks and their messages (goodopt's errors survive pickling, so the
  message is the same under every executor);
* Ctrl-C (``KeyboardInterrupt``) cancels the pending tasks, stops the local
  workers at once and raises :class:`~goodopt.errors.Interrupted` with the
  count of finished tasks;
* local workers are fresh interpreters that ignore Ctrl-C (the parent decides)
  and exit by themselves when their parent process is gone, even after a
  ``SIGKILL`` of the parent; each call starts its own, except inside a
  :func:`kept_workers` block, whose workers serve every call in it (the
  figures' many sweeps).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import multiprocessing
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from goodopt.errors import GoodoptError, Interrupted, TaskError, ValidationError
from goodopt.progress import set_task_sink

from .watch import Route, TaskWatch, report_queue, watching

if TYPE_CHECKING:
    from rich.progress import Progress

log = logging.getLogger(__name__)

#: Seconds between a worker's checks that its parent still runs.
PARENT_POLL_S = 0.5


def _worker_init(parent_pid: int, progress_queue: Any = None) -> None:
    """Set up a local worker: Ctrl-C is the parent's to handle; exit when the parent is gone; tasks' progress
    reports go to the parent through ``progress_queue``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if progress_queue is not None:
        set_task_sink(lambda *message: progress_queue.put_nowait(message))

    def watch() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(1)
            time.sleep(PARENT_POLL_S)

    threading.Thread(target=watch, name="goodopt-parent-watch", daemon=True).start()


#: Seconds to wait for a Dask scheduler to answer.
DASK_CONNECT_S = 10
_DASK_ADDRESS = re.compile(r"(?:(?P<scheme>[a-z]+)://)?\[?[A-Za-z0-9_.:-]+\]?:[0-9]{1,5}")


def check_dask_address(address: str) -> str:
    """``address`` if it reads as a scheduler address (``tcp://HOST:PORT``), else a :class:`ValidationError`."""
    m = _DASK_ADDRESS.fullmatch(str(address))
    if not m or not 0 < int(str(address).rsplit(":", 1)[1]) < 65536:
        raise ValidationError("--dask", f"{address!r} is not a scheduler address",
                              "write tcp://HOST:PORT, e.g. tcp://127.0.0.1:8786")
    if m["scheme"] not in (None, "tcp"):
        raise ValidationError("--dask", f"{m['scheme']}:// schedulers are not supported (TLS and the other "
                              "transports need a security configuration goodopt does not take)",
                              "connect to a tcp:// scheduler you started, e.g. through an SSH tunnel")
    return str(address)


def _connect(client_class: Any, address: str) -> Any:
    """A Dask client of the scheduler at ``address``, or a :class:`ValidationError` within about
    :data:`DASK_CONNECT_S` seconds, whatever answers there: Dask's own timeout covers the connection, not a peer
    that accepts it and never completes the handshake (an HTTP server, the dashboard's port), where it waited
    without end; so the connection is made in a thread of its own and given up on at the deadline."""
    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            box["client"] = client_class(address, timeout=DASK_CONNECT_S)
        except Exception as exc:  # noqa: BLE001 -- whatever answered there, it is not a usable scheduler
            box["error"] = exc

    thread = threading.Thread(target=connect, name="goodopt-dask-connect", daemon=True)
    thread.start()
    thread.join(DASK_CONNECT_S + 2)
    if "client" in box:
        return box["client"]
    exc = box.get("error")
    why = f"{type(exc).__name__}: {str(exc)[:120]}" if exc is not None else "it accepted the connection but " \
        "never answered as a Dask scheduler does"
    raise ValidationError("--dask", f"no Dask scheduler answered at {address} within {DASK_CONNECT_S} s ({why})",
                          "start one with `dask scheduler` (only on a machine you trust: Dask unpickles what the "
                          "scheduler sends) or check the address (the scheduler's port, not its dashboard's)")


@contextlib.contextmanager
def open_executor(workers: int = 1, dask: str | None = None, progress_queue: Any = None) -> Iterator[Any]:  # Any: a multiprocessing queue; yields a concurrent.futures or Dask executor
    """A ``concurrent.futures`` executor: a Dask cluster's (``dask`` address), a process pool, or None (inline)."""
    log.debug("executor: %s", f"Dask at {dask}" if dask else f"{workers} local process(es)" if workers > 1
              else "inline")
    if dask:
        try:
            from distributed import Client
        except ImportError:  # pragma: no cover - dask is a dependency
            raise ValidationError("dask", "dask.distributed is not installed", "pip install 'dask[distributed]'") \
                from None
        check_dask_address(dask)
        client = _connect(Client, dask)
        with client:
            yield client.get_executor()
    elif workers > 1:
        # fresh interpreters, not forks: HiGHS's thread pool does not survive fork (a forked worker's
        # MILP spun forever once the parent had solved one), and nothing else needs the parent's state
        pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                      initializer=_worker_init, initargs=(os.getpid(), progress_queue))
        try:
            yield pool
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    else:
        yield None


class _Kept:
    """A local pool kept open by :func:`kept_workers`, its report route, and whether a stop has ended it."""

    def __init__(self, pool: cf.ProcessPoolExecutor, route: Route) -> None:
        self.pool, self.route, self.stopped = pool, route, False


_KEPT: list[_Kept] = []  # the innermost kept_workers block's pool last


@contextlib.contextmanager
def kept_workers(workers: int) -> Iterator[None]:
    """Keep ``workers`` local processes for every :func:`map_tasks` call with local workers inside the block,
    instead of starting fresh interpreters for each call (each start imports goodopt, about 2 s of CPU).
    Results do not depend on it: a task's answer depends only on its inputs. With ``workers`` <= 1 the
    block runs as it would without it."""
    if workers <= 1:
        yield
        return
    with report_queue() as (q, route):
        pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                      initializer=_worker_init, initargs=(os.getpid(), q))
        kept = _Kept(pool, route)
        _KEPT.append(kept)
        try:
            yield
        finally:
            _KEPT.remove(kept)
            pool.shutdown(wait=True, cancel_futures=True)


def stop_pool(ex: Any, futures: Iterable[cf.Future[Any]] = ()) -> None:  # Any: a concurrent.futures or Dask executor and its futures
    """Cancel ``futures`` (the pending tasks of ``ex``) and end a local pool's worker processes now."""
    for fut in futures:
        fut.cancel()
    if isinstance(ex, cf.ProcessPoolExecutor):
        procs = list((getattr(ex, "_processes", None) or {}).values())
        ex.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            with contextlib.suppress(Exception):
                p.terminate()
        for p in procs:
            with contextlib.suppress(Exception):
                p.join(timeout=5)


def progress_bar(enabled: bool = True) -> Progress:
    """A rich progress bar showing description, done / total and elapsed time."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    disable=not enabled, transient=True)


class _Tally:
    """What a run has done so far, for the messages of :class:`TaskError` and :class:`Interrupted`."""

    def __init__(self, n_before: int, n_total: int, cached: bool) -> None:
        self.done, self.total, self.cached = n_before, n_total, cached
        self.failures: list[tuple[int, str, str]] = []


def map_tasks(fn: Callable[[Any], Any], items: Iterable[Any], *, workers: int = 1, dask: str | None = None,
              progress: Any = True, label: str = "tasks", describe: Callable[[Any], str] = str,
              on_result: Callable[[int, Any], None] | None = None, n_before: int = 0,
              cached: bool = False) -> list[Any]:  # Any: tasks and results of any kind; progress True, False or a rich Progress
    """``[fn(item) for item in items]`` inline, on a process pool or on Dask, with a done/total bar.

    See the module docstring for errors and interrupts. ``describe(item)``
    names a task in messages and in the bar; ``n_before`` tasks of the run
    were done before (read from a cache, which ``cached`` says exists) and
    count as done in an :class:`Interrupted` message. ``progress`` is a flag,
    or a live ``rich.progress.Progress`` to which a row is added.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValidationError("workers", f"must be a whole number >= 1, got {workers!r}")
    items = list(items)
    workers = max(1, min(workers, len(items), os.cpu_count() or 1))
    results: dict[int, object] = {}
    tally = _Tally(n_before, n_before + len(items), cached)
    from rich.progress import Progress

    shared = isinstance(progress, Progress)  # a caller's live bar: add a row to it
    with (contextlib.nullcontext(progress) if shared else progress_bar(bool(progress))) as bar:
        row = bar.add_task(label, total=len(items))

        watch = TaskWatch(bar, row, label, tally)

        def arrived(i: int, fut_or_value: Any, is_future: bool) -> None:  # Any: a future or a value
            try:
                value = fut_or_value.result() if is_future else fut_or_value()
            except Interrupted:
                raise
            except GoodoptError as exc:
                tally.failures.append((i, describe(items[i]), str(exc)))
                log.info("task %s failed: %s", describe(items[i]), exc)
            except BrokenProcessPool:
                tally.failures.append((i, describe(items[i]), "its worker process died (out of memory?)"))
            else:
                results[i] = value
                tally.done += 1
                if on_result is not None:
                    on_result(i, value)
            bar.advance(row)
            watch.show()

        kept = _KEPT[-1] if _KEPT and workers > 1 and not dask and not _KEPT[-1].stopped else None
        try:
            with watching(watch, local_workers=workers > 1 and not dask, route=kept.route if kept else None) as queue:
                _run_all(fn, items, workers, dask, watch, describe, arrived, queue, kept)
        except KeyboardInterrupt:
            raise Interrupted(tally.done, tally.total, tally.cached) from None
        finally:
            if shared:
                bar.remove_task(row)
    if tally.failures:
        tally.failures.sort()
        raise TaskError([(d, m) for _, d, m in tally.failures], tally.total)
    return [results[i] for i in range(len(items))]


def _run_all(fn: Callable[[Any], Any], items: list[Any], workers: int, dask: str | None, watch: TaskWatch,
             describe: Callable[[Any], str], arrived: Callable[[int, Any, bool], None], queue: Any,
             kept: _Kept | None = None) -> None:
    with (contextlib.nullcontext(kept.pool) if kept else open_executor(workers, dask, queue)) as ex:
        if ex is None:
            for i, item in enumerate(items):
                watch.current = describe(item)
                watch.show()
                arrived(i, lambda item=item: fn(item), False)
            return
        futures: dict[cf.Future[Any], int] = {}
        try:
            for i, item in enumerate(items):
                futures[ex.submit(fn, item)] = i
            for fut in _completed(futures, getattr(ex, "_client", None) if dask else None):
                arrived(futures[fut], fut, True)
        except BaseException:
            with _ignoring_sigint():
                stop_pool(ex, futures)
            if kept is not None:
                kept.stopped = True
            raise


#: Seconds without any Dask worker before a run says so (and again each time as long again passes).
NO_WORKER_WARN_S = 30.0


def _completed(futures: Iterable[cf.Future[Any]], client: Any = None) -> Iterator[cf.Future[Any]]:
    """The futures as they finish (:func:`concurrent.futures.as_completed`). With a Dask ``client``, a cluster
    that has had no worker for :data:`NO_WORKER_WARN_S` is said to, with a warning each time that passes again:
    the run keeps waiting (a worker that joins picks the tasks up; Ctrl-C stops it, finished tasks kept)."""
    if client is None:
        yield from cf.as_completed(futures)
        return
    pending, idle = set(futures), _NoWorkers()
    while pending:
        done, pending = cf.wait(pending, timeout=5.0, return_when=cf.FIRST_COMPLETED)
        yield from done
        if pending and not done:
            idle.check(client, len(pending))


class _NoWorkers:
    """How long a Dask cluster has had no worker, said every :data:`NO_WORKER_WARN_S`."""

    def __init__(self) -> None:
        self.since: float | None = None
        self.said = 0

    def check(self, client: Any, n_pending: int) -> None:  # client: a Dask client (distributed is optional)
        try:
            n_workers = len(client.nthreads())
        except Exception:  # noqa: BLE001 -- the scheduler itself is gone: its own error ends the tasks
            return
        now = time.monotonic()
        if n_workers:
            self.since, self.said = None, 0
            return
        self.since = now if self.since is None else self.since
        idle_s = now - self.since
        if idle_s >= NO_WORKER_WARN_S * (self.said + 1):
            self.said += 1
            log.warning("no Dask worker for %.0f s; %d task(s) wait for one (start `dask worker SCHEDULER`, or "
                        "Ctrl-C to stop: finished tasks are kept)", idle_s, n_pending)


@contextlib.contextmanager
def _ignoring_sigint() -> Iterator[None]:
    """Further Ctrl-C presses are ignored while a run cleans up (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
