"""goodopt's own temporaries beside an output: their one exact name, and which of them are debris.

A temporary of output ``NAME`` is ``.NAME.goodopt-TAG-HOST-PID-ID``; a staging
folder also holds :data:`STAGING_MARKER`. Only such names, of this host, whose
process is gone, are debris (:func:`debris`), and each removal is logged.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

log = logging.getLogger("goodopt.outputs")

#: The file that marks a folder as goodopt's output (an existing folder without it is never replaced).
MARKER = "goodopt-output.json"

#: This machine's name as it stands in goodopt's temporary names (letters, digits and ``_`` only).
HOST = re.sub(r"[^A-Za-z0-9]", "_", socket.gethostname()) or "host"
#: The file inside every staging folder goodopt makes (a folder without it is never removed as debris).
STAGING_MARKER = ".goodopt-staging"
#: The one pattern of goodopt's temporaries beside an output ``NAME``: ``.NAME.goodopt-TAG-HOST-PID-ID``.
TEMP = re.compile(r"^\.(?P<name>.+)\.goodopt-(?P<tag>tmp|partial|old|commit)-(?P<host>[A-Za-z0-9_]+)"
                   r"-(?P<pid>[0-9]{1,10})-(?P<id>[0-9a-f]{8})$")


def temp_name(path: Path, tag: str) -> Path:
    return path.with_name(f".{path.name}.goodopt-{tag}-{HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def debris(folder: Path, name: str | None = None, tags: tuple[str, ...] = ("tmp", "partial", "old")) -> Iterator[Path]:
    """goodopt's temporaries in ``folder`` (of output ``name``, or of any) left by a dead process of this host.

    A name goodopt did not make, another host's temporaries (its process may live) and a folder without
    goodopt's marker inside are never yielded.
    """
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for p in entries:
        m = TEMP.match(p.name)
        if m is None or m["tag"] not in tags or (name is not None and m["name"] != name) or m["host"] != HOST:
            continue
        pid = int(m["pid"])
        if pid == os.getpid() or alive(pid):
            continue
        if p.is_dir() and not p.is_symlink() and not ((p / STAGING_MARKER).is_file() or (p / MARKER).is_file()):
            continue
        yield p


def remove_debris(folder: Path) -> None:
    """Remove goodopt's own temporaries of any output in ``folder`` (a folder only goodopt writes, such as a
    cache) left by interrupted runs on this host (logged)."""
    remove(debris(Path(folder)))


def remove(paths: Iterable[Path]) -> None:
    for p in paths:
        log.warning("removing %s, left by an interrupted goodopt run", p)
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
