"""The command line's parser and runner: one module per sub-command, its ``add_parser(add)`` beside its
``run(args)``; :mod:`.common` holds what they share."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from .._version import __version__
from ..errors import GoodoptError, Interrupted
from . import check, compare, evaluate, families, fit, info, library, options, pareto, reproduce, simulate, solve, sweep

DESCRIPTION = ("goodopt: GPU-cluster allocation for deep-learning jobs, solved exactly and heuristically. "
               "'goodopt COMMAND --help' shows a command's options.")

#: The sub-commands, in the order ``goodopt --help`` lists them.
COMMANDS = (info, evaluate, solve, check, families, library, compare, pareto, fit, simulate, sweep, options, reproduce)


class _Defaults(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` with each option's default, except where there is none to tell (None, False) or the help says
    it already."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text:
            return text
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    """The ``goodopt`` argument parser with one sub-command per module of :data:`COMMANDS`."""
    ap = argparse.ArgumentParser(prog="goodopt", description=DESCRIPTION)
    verbose = "more logging: -v progress and info, -vv goodopt's debug, -vvv every library's debug"
    ap.add_argument("-v", "--verbose", action="count", default=0, help=verbose)
    ap.add_argument("--version", action="version", version=f"goodopt {__version__}")
    # -v is also accepted after the sub-command (its default is left to the top level)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS, help=verbose)
    sub = ap.add_subparsers(dest="command", required=True)

    def add(name: str, **kw: Any) -> argparse.ArgumentParser:  # every sub-command: the common flags, and its defaults shown in --help
        return sub.add_parser(name, parents=[common], formatter_class=_Defaults, **kw)

    for command in COMMANDS:
        command.add_parser(add)
    return ap


def _configure_logging(verbose: int) -> None:
    """``-v``: goodopt's info; ``-vv``: goodopt's debug; ``-vvv``: every library's debug too."""
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger().setLevel(logging.DEBUG if verbose >= 3 else logging.WARNING)
    logging.getLogger("goodopt").setLevel([logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)])


def run(argv: list[str] | None = None) -> int:
    """Parse, configure logging, run; returns the exit status (2 on bad input; :func:`goodopt.cli.main` answers
    a Ctrl-C before the command starts)."""
    _configure_logging(0)  # warnings while the arguments are read (a plug-in that fails to load) are shown too
    args = build_parser().parse_args(argv)
    _configure_logging(args.verbose)
    from ..progress import PROGRESS, plain_progress

    throttle = None
    if not getattr(args, "quiet", False) and not getattr(args, "json", False):
        throttle = plain_progress(args.verbose)  # no bar to show: plain progress lines, one per 30 s unless -v
    from ..solvers.mip_solvers.solver_watch import on_stuck_interrupt

    on_stuck_interrupt(_exit_now)
    try:
        return args.func(args)
    except Interrupted as exc:
        print(f"goodopt: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("goodopt: interrupted; nothing was written", file=sys.stderr)
        return 130
    except GoodoptError as exc:
        print(f"goodopt: error: {exc}", file=sys.stderr)
        return 2
    finally:
        on_stuck_interrupt(None)
        if throttle is not None:
            PROGRESS.removeFilter(throttle)


def _exit_now() -> None:
    """Ctrl-C while HiGHS, still inside its C code, has not stopped: exit at once with status 130 (this thread
    cannot raise into it). A temporary output file it leaves is cleared by the next run."""
    print("goodopt: interrupted; nothing was written", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)
