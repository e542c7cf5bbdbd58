"""Command-line interface: ``goodopt info | evaluate | solve | families | compare | fit | simulate | sweep |
options | reproduce``.

This module is the command's entry point and imports nothing heavy itself: the parser and the sub-commands
(:mod:`.app`, which load numpy and the solvers in a few tenths of a second) are imported inside :func:`main`,
so that a Ctrl-C at any moment, during those imports too, ends the command with status 130 and one line, never
a ``KeyboardInterrupt`` traceback.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

#: The exit status of an interrupted command (128 + SIGINT), as shells report it.
INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse, configure logging, run; returns the exit status (2 on bad input, 130 on Ctrl-C)."""
    try:
        from .app import run

        return run(argv)
    except KeyboardInterrupt:
        print("goodopt: interrupted; nothing was written", file=sys.stderr)
        return INTERRUPTED


def build_parser() -> argparse.ArgumentParser:
    """The ``goodopt`` argument parser (:func:`goodopt.cli.app.build_parser`)."""
    from .app import build_parser as build

    return build()
