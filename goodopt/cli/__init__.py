"""Command-line interface: ``goodopt info | evaluate | solve | families | compare | fit | simulate | sweep |
options | reproduce``.

This module is the command's entry point and imports nothing heavy itself: the parser and the sub-commands
(:mod:`.app`, which load numpy and the solvers in a few tenths of a second) are imported inside :func:`main`,
so that a Ctrl-C at any moment, during those imports too, ends the command with status 130 and one line, never
a ``KeyboardInterrupt`` traceback.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from types import FrameType
    from typing import Any, TypeAlias

    #: What ``signal.getsignal`` returns and ``signal.signal`` takes.
    _Handler: TypeAlias = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None

#: The exit status of an interrupted command (128 + SIGINT), as shells report it.
INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse, configure logging, run; returns the exit status (2 on bad input, 130 on Ctrl-C)."""
    run = _import_the_command_line()
    ctrl_c = _CtrlC.install()
    try:
        status = run(argv)
    except KeyboardInterrupt:
        print("goodopt: interrupted; nothing was written", file=sys.stderr)
        return INTERRUPTED
    finally:
        ctrl_c.remove()
    if ctrl_c.dropped(status):  # raised where it was dropped, and the command ran to its end
        print("goodopt: interrupted (after the command had done its work)", file=sys.stderr)
        return INTERRUPTED
    return status


class _CtrlC:
    """SIGINT handler for a command: raises :class:`KeyboardInterrupt` as Python's own does, and remembers it.

    A ``KeyboardInterrupt`` raised while a C library calls back into Python through ctypes (numba's cache of
    compiled code, loaded on a kernel's first call) is printed as "Exception ignored" and dropped there, and
    the command runs on; one that the command never saw makes it end as interrupted all the same. The solvers'
    watch (:mod:`goodopt.solvers.mip_solvers.solver_watch`) takes this handler for Python's own
    (``raises_keyboard_interrupt``)."""

    raises_keyboard_interrupt = True

    def __init__(self, previous: _Handler) -> None:
        self.previous, self.seen = previous, False

    @classmethod
    def install(cls) -> _CtrlC:
        """In place of Python's own handler in the main thread (elsewhere, or under another handler: inert)."""
        import threading

        handler = cls(signal.getsignal(signal.SIGINT))
        if threading.current_thread() is threading.main_thread() and handler.previous is signal.default_int_handler:
            signal.signal(signal.SIGINT, handler)
        return handler

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.seen = True
        raise KeyboardInterrupt

    def dropped(self, status: int) -> bool:
        """Whether a Ctrl-C came and the command, returning ``status``, did not answer it."""
        return self.seen and status != INTERRUPTED

    def remove(self) -> None:
        """Put the previous handler back (if this one is in place)."""
        if id(signal.getsignal(signal.SIGINT)) == id(self):
            signal.signal(signal.SIGINT, self.previous)


def console() -> int:
    """The ``goodopt`` program (its console script and ``python -m goodopt.cli``): :func:`main`, and an
    interrupted command's status 130 made to stick.

    A Ctrl-C that passed through a C extension's own Python run (numpy's, pyomo's) leaves CPython's "unhandled
    interrupt" mark set even when goodopt catches it, and the interpreter then ends itself by SIGINT after the
    clean return (status -2, 3 of 72 runs interrupted 0.05-1 s after start). So an interrupted program flushes
    its output and logs and ends at once; its outputs were already put in place or cleared by then. A caller of
    :func:`main` in its own process (a notebook) gets the status back instead. Under ``GOODOPT_MATH=portable`` the
    program first starts itself again with the arithmetic pinned (:mod:`goodopt.portable_math`).
    """
    from ..errors import GoodoptError
    from ..portable_math import restart_if_asked

    try:
        restart_if_asked()
    except GoodoptError as exc:
        print(f"goodopt: error: {exc}", file=sys.stderr)
        return 2
    status = main()
    if status == INTERRUPTED:
        _exit_interrupted(say=False)
    return status


def _import_the_command_line() -> Callable[[list[str] | None], int]:
    """:func:`goodopt.cli.app.run`, imported with Ctrl-C held back; a Ctrl-C meanwhile ends the process at once
    with status 130 and one line (nothing was done yet).

    An interrupt delivered inside the imports is not reliably a ``KeyboardInterrupt``: numpy turns one in its
    C extension's import into an ``ImportError`` traceback, and one that passes through an extension's own
    Python run leaves CPython's "unhandled interrupt" mark set, so the interpreter ends itself by SIGINT after
    a clean return (status -2 in 2 of 24 runs interrupted 0.05-1 s after start, catching it). So the signal is
    blocked while the modules load and looked for once they have.
    """
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX: the interrupt as it comes
        try:
            from .app import run
        except KeyboardInterrupt:
            _exit_interrupted()
        return run
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        from .app import run
    finally:
        if signal.SIGINT in signal.sigpending() and signal.SIGINT not in held:
            _exit_interrupted()
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return run


def _exit_interrupted(say: bool = True) -> None:
    import logging

    if say:
        print("goodopt: interrupted; nothing was written", file=sys.stderr)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(INTERRUPTED)


def build_parser() -> argparse.ArgumentParser:
    """The ``goodopt`` argument parser (:func:`goodopt.cli.app.build_parser`)."""
    from .app import build_parser as build

    return build()
