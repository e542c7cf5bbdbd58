"""The watch over solver runs on the calling thread (HiGHS's, and the other MILP solvers' of
:mod:`goodopt.solvers.mip_solvers`): past its time limit, or on Ctrl-C, a run is asked to stop, also while the solver
sits where it checks for neither.

One daemon thread per process (:class:`_Monitor`) watches every run under way. It looks at the clock (every
:data:`WATCH_INTERVAL_S`) only while a run has a time limit or Ctrl-C has arrived; otherwise it sleeps until a
signal wakes it, and takes no turn on the interpreter beside a solve. A thread, a socket pair and a wake-up
descriptor of its own for each run cost about 0.3 ms of CPU a run: sia-64 under Sia's objective (some ten HiGHS
runs a solve) took 0.0487 s with them against 0.0447 s without any watch (min of 40 solves each, alternating in
one process).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

#: Name of the thread that watches HiGHS runs.
WATCHDOG_THREAD = "goodopt-highs-watchdog"

#: How often the watch looks at the clock while a run is under way (seconds).
WATCH_INTERVAL_S = 0.1

#: Seconds HiGHS is given to stop after Ctrl-C before :func:`on_stuck_interrupt`'s action runs.
INTERRUPT_GRACE_S = 2.0

_ON_STUCK: Callable[[], None] | None = None


def on_stuck_interrupt(action: Callable[[], None] | None) -> None:
    """Run ``action`` (None: nothing) when HiGHS has not stopped :data:`INTERRUPT_GRACE_S` after Ctrl-C. The
    CLI passes one that exits at once with status 130: it cannot return while HiGHS holds its thread."""
    global _ON_STUCK
    _ON_STUCK = action


def run_watched(run: Callable[[], Any], cancel: Callable[[], Any], time_limit_s: float | None,
                solver: str = "HiGHS", unwatched: Callable[[], Any] | None = None,
                on_start: Callable[[Watch], Any] | None = None) -> tuple[Any, bool]:  # Any: whatever the watched run returns
    """``run()`` on the calling thread under a :class:`Watch`; returns ``(what run returned, whether the watch
    stopped it past its time limit)``. Ctrl-C in the main thread (with Python's own SIGINT handler in place, or
    one that raises as it does: the command line's)
    asks the solver to stop through ``cancel`` and raises :class:`KeyboardInterrupt` once it has stopped; outside
    the main thread without a time limit, a plain ``run()`` (or ``unwatched()``, when given). ``on_start``: called
    with the watch just before ``run()`` (see :attr:`Watch.sigint_needs_python`)."""
    handler = signal.getsignal(signal.SIGINT)
    main = threading.current_thread() is threading.main_thread() \
        and (handler is signal.default_int_handler or getattr(handler, "raises_keyboard_interrupt", False) is True)
    if not main and time_limit_s is None:
        return (unwatched or run)(), False
    guard = Watch(cancel, time_limit_s, catch_sigint=main, solver=solver)
    with guard:
        if on_start is not None:
            on_start(guard)
        value = run()
    if guard.interrupted:
        raise KeyboardInterrupt
    return value, guard.stopped


def watchdog_grace_s(time_limit_s: float) -> float:
    """How long past its time limit HiGHS may run before the watch stops it: 1 s plus 5% of the limit."""
    return 1.0 + 0.05 * float(time_limit_s)


class Watch:
    """One HiGHS run under watch (a context around ``h.run()``): ``stopped`` once it was asked to stop past its
    time limit, ``interrupted`` once Ctrl-C arrived.

    With ``catch_sigint`` (the main thread only) Ctrl-C sets a flag in place of raising: Python runs a signal
    handler in the main thread between bytecodes, here inside HiGHS's interrupt callback, where an exception
    would cross HiGHS's C++. The signal also wakes the watching thread through its socket
    (``signal.set_wakeup_fd``, unless another wake-up descriptor is set), so that a run with no interrupt check
    for a long while is noticed too. Both are as before once the run is over.
    """

    def __init__(self, cancel: Callable[[], Any], time_limit_s: float | None, *, catch_sigint: bool,
                 solver: str = "HiGHS") -> None:
        #: Asks the solver to stop at its next check; called from the watching thread or a signal handler.
        self.cancel, self.solver = cancel, solver
        self.stopped, self.interrupted = False, False
        self.limit_s = None if time_limit_s is None else float(time_limit_s)
        self.catch_sigint = catch_sigint
        self._interrupted_at: float | None = None
        self._stuck = False
        self._saved: tuple[Any, int | None] | None = None
        #: Ctrl-C reaches this run only through the main thread's Python handler (another wake-up descriptor holds
        #: the signal, so the watching thread is not woken): the solver must call into Python to let it run.
        self.sigint_needs_python = False

    def __enter__(self) -> Watch:
        self.t0 = time.perf_counter()
        self.cutoff = None if self.limit_s is None else self.t0 + self.limit_s + watchdog_grace_s(self.limit_s)
        writer = _MONITOR.add(self)
        if self.catch_sigint:
            handler = signal.signal(signal.SIGINT, self.on_sigint)
            previous = signal.set_wakeup_fd(-1)
            if previous == -1:  # another descriptor in use (an event loop's) stays in place
                signal.set_wakeup_fd(writer, warn_on_full_buffer=False)
            else:
                signal.set_wakeup_fd(previous)
                self.sigint_needs_python = True
            self._saved = (handler, None if previous == -1 else previous)
        return self

    def __exit__(self, *exc: Any) -> None:
        _MONITOR.remove(self)
        if self._saved is not None:
            handler, previous = self._saved
            if previous is None:
                signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGINT, handler)

    def on_sigint(self, *_: Any) -> None:  # Any: the signal handler's frame argument
        """Ctrl-C (also the SIGINT handler during the run): ask HiGHS to stop at its next interrupt check (the first
        call counts for the grace)."""
        if self._interrupted_at is None:
            self._interrupted_at = time.perf_counter()
            _MONITOR.wake()  # from the handler, when another wake-up descriptor took the signal: start the grace
        self.interrupted = True
        self.cancel()

    def check(self, now: float) -> None:
        """Past the time limit and its grace: ask HiGHS to stop; still running long after Ctrl-C: the stuck action."""
        if self.cutoff is not None and self.limit_s is not None and not self.stopped and now >= self.cutoff:
            log.warning("%s ran %.1f s past its %.3g s time limit; asking it to stop",
                        self.solver, now - self.t0 - self.limit_s, self.limit_s)
            self.cancel()
            self.stopped = True
        if self._interrupted_at is not None and not self._stuck and now - self._interrupted_at >= INTERRUPT_GRACE_S:
            self._stuck = True
            log.warning("%s has not stopped %.0f s after Ctrl-C; it stops at its next interrupt check",
                        self.solver, INTERRUPT_GRACE_S)
            if _ON_STUCK is not None:
                _ON_STUCK()


class _Monitor:
    """The thread that watches the runs under way, and the socket that wakes it (a run with a time limit
    starting, Ctrl-C, or a signal's wake-up byte). Made again in a forked child, where the parent's thread does
    not exist."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: set[Watch] = set()
        self._pid: int | None = None
        self._sockets: tuple[socket.socket, socket.socket] | None = None

    def add(self, watch: Watch) -> int:
        """Watch ``watch``; returns the descriptor that wakes the thread (for ``signal.set_wakeup_fd``)."""
        with self._lock:
            sockets = self._sockets if self._sockets is not None and self._pid == os.getpid() else self._start()
            self._runs.add(watch)
            if watch.cutoff is not None:  # the thread looks at the clock only for runs with a time limit
                self.wake()
            return sockets[1].fileno()

    def wake(self) -> None:
        """Have the thread look at the runs now (and at the clock, if one needs it)."""
        if self._sockets is not None:
            with contextlib.suppress(OSError):  # a full buffer: the thread is awake already
                self._sockets[1].send(b"\0")

    def remove(self, watch: Watch) -> None:
        with self._lock:
            self._runs.discard(watch)

    def forget(self) -> None:
        """In a forked child: the parent's thread is not there, and its lock may have been held at the fork."""
        self._lock = threading.Lock()
        self._runs = set()
        self._pid = None

    def _start(self) -> tuple[socket.socket, socket.socket]:
        if self._sockets is not None:  # the parent's, in a forked child
            for sock in self._sockets:
                sock.close()
        reader, writer = socket.socketpair()
        for sock in (reader, writer):
            sock.setblocking(False)
        self._sockets, self._pid = (reader, writer), os.getpid()
        threading.Thread(target=self._loop, args=(reader,), name=WATCHDOG_THREAD, daemon=True).start()
        return self._sockets

    def _loop(self, reader: socket.socket) -> None:
        while True:
            with self._lock:
                busy = any(w.cutoff is not None or w.interrupted for w in self._runs)
            sigint = False
            if select.select([reader], [], [], WATCH_INTERVAL_S if busy else None)[0]:
                with contextlib.suppress(BlockingIOError, OSError):
                    sigint = signal.SIGINT in reader.recv(64)
            with self._lock:
                runs = list(self._runs)
            now = time.perf_counter()
            for watch in runs:
                if sigint and watch.catch_sigint:
                    watch.on_sigint()
                watch.check(now)


_MONITOR = _Monitor()
os.register_at_fork(after_in_child=_MONITOR.forget)
