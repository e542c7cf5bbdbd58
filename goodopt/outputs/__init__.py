"""Writing results safely: output paths checked before any work, files and folders replaced atomically.

Every file goodopt writes as a result is first written beside its final name
(a hidden, uniquely named temporary) and then renamed over it, so a reader --
or a kill at any moment -- sees the old file or the new one, never a mix or a
half-written file. A folder of outputs (a simulation's tables) is built in a
hidden staging folder and exchanged with the old one in one step
(``renameat2(RENAME_EXCHANGE)`` on Linux; elsewhere two renames, between which
the old folder survives under a hidden name). Several files written by one
run (a sweep's tables and their metadata, a report, re-fitted profiles) are
put in place together by an :class:`OutputSet`: a journal of the renames
makes the set all-or-nothing, and every metadata file names the run
(``run_id``).

goodopt's temporaries have one exact name, ``.NAME.goodopt-TAG-HOST-PID-ID``,
and staging folders hold a marker file; only such names, of this host, whose
process is gone, are ever removed as debris of an interrupted run, and each
removal is logged as a warning. Nothing else beside an output is touched.

A table's metadata goes to ``NAME.meta.json`` beside ``NAME.csv``, and records
the SHA-256 of the table it describes, so a pair from two different runs is
detectable (:func:`table_matches_meta`).

:func:`check_output` runs before the work: an output that cannot be written,
or would replace an input or a folder that goodopt did not write, is refused
with a :class:`~goodopt.errors.ValidationError` naming the option.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..records import Record
from .journal import folder_lock, remove_stale, write_durably
from .names import HOST, MARKER, STAGING_MARKER, remove_debris, temp_name

__all__ = ["HOST", "MARKER", "STAGING_MARKER", "OutputSet", "atomic_dir", "atomic_path", "check_output",
           "json_default", "meta_path", "output_set", "remove_debris", "sha256_file", "staged_file", "table_matches_meta",
           "write_json", "write_text"]


def meta_path(table_path: str | os.PathLike[str]) -> Path:
    """Where a table's metadata goes: ``res.csv`` -> ``res.meta.json`` (never the table's own name)."""
    p = Path(table_path)
    return p.with_name(f"{p.stem if p.suffix else p.name}.meta.json")


# ------------------------------------------------------------------ checks before work
def check_output(path: str | os.PathLike[str], *, kind: str = "file", option: str = "--out", inputs: Iterable[Any] = (),
                 replaced: bool = True, keep: bool = False) -> Path:  # Any: paths or path-likes, each checked
    """Refuse an output that cannot be written, before any work is done.

    ``kind`` is ``"file"`` or ``"dir"``. Refused: a path that is one of
    ``inputs``; a file output that is an existing folder (or a folder output
    that is an existing file, or a symbolic link); a folder output that exists, is not empty and
    was not written by goodopt (unless ``replaced`` is False: a folder that is
    added to, such as a cache); a location whose folder is not writable; with
    ``keep``, any existing file or non-empty folder (an earlier run's results,
    which the user did not ask to replace: the message names ``--force``).
    Returns the path.
    """
    p = Path(path)
    resolved = _resolved(p)
    if resolved is None:
        raise ValidationError(option, f"{str(p)!r} cannot name a file (a NUL byte, or a loop of links)",
                              "choose another name")
    for inp in inputs:
        if inp is not None and _resolved(inp) == resolved:
            raise ValidationError(option, f"{str(p)!r} is an input of this run and would be overwritten",
                                  "write the results to another name")
    if kind == "file" and p.is_dir():
        raise ValidationError(option, f"{str(p)!r} is a folder, a file name is needed", "e.g. results.csv")
    if kind == "dir" and p.is_symlink():  # replacing it would replace the link; writing through it, elsewhere
        raise ValidationError(option, f"{str(p)!r} is a symbolic link (to {os.readlink(p)!r}), not a folder",
                              "name the folder itself, or a new name")
    if kind == "dir" and p.exists() and not p.is_dir():
        raise ValidationError(option, f"{str(p)!r} is a file, a folder name is needed",
                              "give a new folder name or remove the file")
    if kind == "dir" and replaced and p.is_dir() and any(p.iterdir()) and not (p / MARKER).is_file():
        raise ValidationError(option, f"folder {str(p)!r} is not empty and was not written by goodopt",
                              "give a new folder name; goodopt replaces only folders it wrote")
    if keep and (p.is_file() or (p.is_dir() and any(p.iterdir()))):
        raise ValidationError(option, f"{str(p)!r} holds the results of an earlier run",
                              f"give another {option.split()[0]} or pass --force to replace them")
    if kind == "dir" and not replaced and p.is_dir():
        if not os.access(p, os.W_OK | os.X_OK):
            raise ValidationError(option, f"folder {str(p)!r} is not writable", "choose a writable location")
        return p
    parent = _existing_ancestor(resolved.parent)
    if not parent.is_dir():
        raise ValidationError(option, f"{str(parent)!r} is a file, so {str(p)!r} cannot be created",
                              "choose another location")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValidationError(option, f"folder {str(parent)!r} is not writable", "choose a writable location")
    return p


def _resolved(path: Any) -> Path | None:
    """``path`` resolved, or None where it cannot name a file (a NUL byte in it, a loop of links)."""
    try:
        return Path(path).resolve()
    except (OSError, ValueError, RuntimeError):
        return None


def _existing_ancestor(p: Path) -> Path:
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


# ------------------------------------------------------------------ atomic files
@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path``; renamed over ``path`` when the block ends without error."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path, "tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def staged_file(path: str | os.PathLike[str], name: str, *, output: str | os.PathLike[str] | None = None) -> Iterator[Path]:
    """A path ``name`` in a hidden staging folder beside ``path``, moved onto ``path`` when the block ends
    without error: for writers that choose the format by the file's own name (a solver writing a model). A
    kill leaves only the staging folder, which the next write of ``path`` removes as debris. ``output``: the
    final name when ``path`` is an :class:`OutputSet`'s temporary of it (the staging folder is named for it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    final = Path(output) if output is not None else path
    # the staging folder's name in plain letters: a writer that takes only text paths (highspy) may be handed
    # any byte the user's name holds
    staging = _new_staging(final.with_name(re.sub(r"[^A-Za-z0-9._-]", "_", final.name)))
    try:
        yield staging / name
        os.replace(staging / name, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _new_staging(path: Path) -> Path:
    """A new staging folder of output ``path`` (with its marker), goodopt's leftovers of ``path`` removed first."""
    remove_stale(path)
    staging = temp_name(path, "partial")
    staging.mkdir()
    (staging / STAGING_MARKER).touch()
    return staging


class OutputSet:
    """Several output files put in place together: a reader sees the old set or the new one, never a mix.

    :meth:`path` gives the temporary to write each output to (goodopt's
    leftovers of that name from interrupted runs are removed first, with a
    warning). :meth:`commit` writes a journal of the renames (its commit
    point), renames every temporary over its output and removes the journal,
    holding a lock on the outputs' common folder so concurrent runs commit one
    after the other. A run killed half-way through the renames leaves its
    journal, and the next goodopt run writing there finishes them first.
    :attr:`run_id` names the run in every metadata file it writes.
    """

    def __init__(self) -> None:
        self.run_id = uuid.uuid4().hex
        self._pairs: list[tuple[Path, Path]] = []

    def path(self, final: str | os.PathLike[str]) -> Path:
        """The temporary to write output ``final`` to."""
        final = Path(final).absolute()
        if any(f == final for _, f in self._pairs):
            raise ValueError(f"output {final} is written twice in one run")
        final.parent.mkdir(parents=True, exist_ok=True)
        remove_stale(final)
        tmp = temp_name(final, "tmp")
        self._pairs.append((tmp, final))
        return tmp

    @property
    def outputs(self) -> list[Path]:
        return [f for _, f in self._pairs]

    def commit(self) -> None:
        pairs = [(t, f) for t, f in self._pairs if t.exists()]
        if not pairs:
            return
        folder = Path(os.path.commonpath([str(f.parent) for _, f in pairs]))
        with folder_lock(folder):
            journal = temp_name(folder / "outputs", "commit")
            write_durably(journal, json.dumps([[str(t), str(f)] for t, f in pairs]))
            for tmp, final in pairs:
                os.replace(tmp, final)
            journal.unlink()
        self._pairs = []

    def discard(self) -> None:
        for tmp, _ in self._pairs:
            tmp.unlink(missing_ok=True)
        self._pairs = []


@contextlib.contextmanager
def output_set() -> Iterator[OutputSet]:
    """An :class:`OutputSet` committed when the block ends without error, discarded otherwise."""
    out = OutputSet()
    try:
        yield out
        out.commit()
    finally:
        out.discard()


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_json(path: str | os.PathLike[str], data: Any) -> Path:  # Any: JSON-shaped data
    """Write ``data`` as indented JSON to ``path`` atomically (numpy scalars as numbers)."""
    return write_text(path, json.dumps(data, indent=2, default=json_default))


def json_default(obj: object) -> int | float | bool | str:
    """JSON encoding of numpy scalars (and, as text, of anything else)."""
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return str(obj)


def sha256_file(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def table_matches_meta(table_path: str | os.PathLike[str]) -> bool:
    """Whether ``NAME.meta.json`` describes exactly the table ``NAME.csv`` holds now."""
    try:
        meta = json.loads(meta_path(table_path).read_text())
        return meta.get("table_sha256") == sha256_file(table_path)
    except (OSError, ValueError, AttributeError):
        return False


# ------------------------------------------------------------------ atomic folders
@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str], marker: Record | None = None) -> Iterator[Path]:
    """A staging folder beside ``path``; exchanged with ``path`` when the block ends without error.

    The staging folder gets the :data:`MARKER` file (with ``marker`` as its
    content). On error or interrupt it is removed and ``path`` is untouched.
    goodopt's own staging folders of ``path`` left by dead processes on this
    host are removed first, with a warning (see :func:`~goodopt.outputs.names.debris`). An
    existing folder that is not empty and was not written by goodopt is never
    replaced (:func:`check_output` raises before anything is written).
    """
    path = Path(path)
    check_output(path, kind="dir", option="out_dir")
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = _new_staging(path)
    try:
        yield staging
        write_json(staging / MARKER, marker or {})
        (staging / STAGING_MARKER).unlink()
        _swap_in(staging, path)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _swap_in(staging: Path, path: Path) -> None:
    if not path.exists():
        os.rename(staging, path)
        return
    if _exchange(staging, path):  # staging now holds the old folder
        shutil.rmtree(staging, ignore_errors=True)
        return
    old = temp_name(path, "old")
    os.rename(path, old)
    os.rename(staging, path)
    shutil.rmtree(old, ignore_errors=True)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2``); False where that is not available."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError, TypeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))
