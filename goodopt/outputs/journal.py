"""The journal of an :class:`~goodopt.outputs.OutputSet`'s renames, and finishing the renames of a run killed
half-way through them -- only of journals provably goodopt's (:func:`recover`)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from .names import TEMP, debris, remove

log = logging.getLogger("goodopt.outputs")

#: Foreign journals already warned of in this process.
_SAID: set[str] = set()


def write_durably(path: Path, text: str) -> None:
    """Write and flush to disk (a journal cut short is unreadable, and then nothing was renamed yet)."""
    with open(path, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: commits are not serialised
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def recover(folder: Path) -> None:
    """Finish the renames of output sets whose run was killed while committing them (their journals).

    A journal is goodopt's only if every pair in it is one :meth:`goodopt.outputs.OutputSet.commit` writes: ``final`` inside
    the journal's folder (symbolic links resolved) and ``tmp`` goodopt's temporary of ``final`` beside it, made
    by the journal's own process, a regular file. Any other journal (another shape, a path elsewhere, a
    temporary of another name) is foreign: nothing in it is renamed, and it is left where it is, with a warning.
    """
    journals = list(debris(folder, tags=("commit",)))
    if not journals:
        return
    with folder_lock(folder):
        for journal in journals:
            try:
                pairs = json.loads(journal.read_text())
            except (OSError, ValueError):  # cut short while written: nothing was renamed yet
                journal.unlink(missing_ok=True)
                continue
            why = _foreign_journal(journal, pairs)
            if why:
                if str(journal) not in _SAID:  # once per process: a run reaches the folder once per output
                    _SAID.add(str(journal))
                    log.warning("leaving %s alone: it is not a journal goodopt wrote (%s)", journal, why)
                continue
            done = [final for tmp, final in pairs if _roll_forward(Path(tmp), Path(final))]
            log.warning("finished writing %s, interrupted while it was put in place", ", ".join(done) or "outputs")
            journal.unlink(missing_ok=True)


def _foreign_journal(journal: Path, pairs: object) -> str:
    """Why ``pairs`` (a journal's content) is not a journal of goodopt's, or "" when it is."""
    if not isinstance(pairs, list) or not all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair) for pair in pairs):
        return "not a list of [temporary, output] pairs"
    m = TEMP.match(journal.name)
    if m is None:  # pragma: no cover - debris() yields only goodopt's names
        return "not a journal's name"
    home = journal.parent.resolve()
    for tmp_s, final_s in pairs:
        tmp, final = Path(tmp_s), Path(final_s)
        t = TEMP.match(tmp.name)
        if not (tmp.is_absolute() and final.is_absolute()):
            return f"{tmp_s!r} or {final_s!r} is not an absolute path"
        if not final.parent.resolve().is_relative_to(home) or tmp.parent != final.parent:
            return f"{final_s!r} is not inside {str(journal.parent)!r}"
        if t is None or t["tag"] != "tmp" or t["name"] != final.name or t["host"] != m["host"] \
                or t["pid"] != m["pid"]:
            return f"{tmp_s!r} is not goodopt's temporary of {final_s!r}"
        if tmp.is_symlink() or (tmp.exists() and not tmp.is_file()):
            return f"{tmp_s!r} is not a regular file"
    return ""


def _roll_forward(tmp: Path, final: Path) -> bool:
    if not tmp.exists():
        return False
    os.replace(tmp, final)
    return True


def remove_stale(path: Path) -> None:
    """Remove goodopt's own temporaries of output ``path`` left by interrupted runs on this host (logged)."""
    path = Path(path)
    recover(path.parent)
    remove(debris(path.parent, path.name))
