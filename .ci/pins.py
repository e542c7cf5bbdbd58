"""The tested versions in pyproject.toml: every package goodopt runs with, its own dependencies and theirs, pinned
at the lock's version in ``[project] dependencies``; the test tools and theirs likewise in the ``test`` extra; the
build tools in ``[build-system] requires``. Whatever installs goodopt (`pip install .`, `pip install goodopt`,
another project depending on it) gets the versions the suite passed with.

    python .ci/pins.py uncapped   print goodopt's direct dependencies and test tools with their lower bounds only
                                  ([tool.goodopt]), for `make test-latest`, which tries the newest releases on
                                  purpose, and for `make lock`'s resolution
    python .ci/pins.py locked     rewrite the dependencies, the test extra and the build requirements from
                                  requirements.txt (markers kept): the dependencies are the packages the direct
                                  dependencies need, read from this Python's environment (the one the new lock was
                                  taken from), the test extra the rest of the lock, for `make lock`

Only the ``dependencies = [...]``, ``test = [...]`` and ``requires = [...]`` lists change.
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
LOCK = PYPROJECT.parent / "requirements.txt"
#: Locked only to build goodopt itself (the Makefile's venv builds it without isolation), not to run it.
BUILD_TOOLS = ("setuptools", "wheel")
PIN = re.compile(r"^(?P<name>[A-Za-z0-9_.\-]+)==(?P<version>[^ ;\\]+)(?:\s*;\s*(?P<marker>[^\\]+?))?\s*\\?$", re.M)
BUILD_REQUIRES = re.compile(r"^requires = \[[^\]\n]*\]$", re.M)


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def tool_table() -> dict[str, list[str]]:
    return tomllib.loads(PYPROJECT.read_text())["tool"]["goodopt"]


def uncapped() -> list[str]:
    table = tool_table()
    return table["direct-dependencies"] + table["test-tools"]


def runtime_closure(direct: list[str]) -> set[str]:
    """Normalised names of ``direct`` and every package they need, on any platform (markers other than extras are
    kept, not evaluated), read from the installed packages' metadata."""
    from packaging.requirements import Requirement  # here: `uncapped` runs before any package is installed

    seen: set[tuple[str, frozenset[str]]] = set()
    stack = [Requirement(r) for r in direct]
    while stack:
        req = stack.pop()
        key = (norm(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            needs = distribution(req.name).requires or []
        except PackageNotFoundError:
            continue  # another platform's package (its marker says so); the lock lists it with that marker
        for text in needs:
            sub = Requirement(text)
            extra = sub.marker is not None and "extra" in str(sub.marker)
            if not extra or any(sub.marker.evaluate({"extra": e}) for e in req.extras):
                stack.append(sub)
    return {name for name, _ in seen}


def pins(lock: str) -> list[tuple[str, str]]:
    """``(normalised name, "name==version[; marker]")`` of every package of the lock text."""
    return [(norm(m["name"]), f"{m['name']}=={m['version']}" + (f"; {m['marker']}" if m["marker"] else ""))
            for m in PIN.finditer(lock)]


def relocked(text: str, lock: str, runtime: set[str]) -> str:
    """``text`` (pyproject.toml) with its dependencies, test extra and build requirements rewritten from ``lock``."""
    listed = [(name, pin) for name, pin in pins(lock) if name not in BUILD_TOOLS]
    run = [pin for name, pin in listed if name in runtime]
    test = [pin for name, pin in listed if name not in runtime]
    build = [pin for name, pin in pins(lock) if name in BUILD_TOOLS]
    for key, values in (("dependencies", run), ("test", test)):
        block = re.compile(rf"^{key} = \[\n(?:    \".*\",\n)*\]$", re.M)
        if not block.search(text):
            raise SystemExit(f"pyproject.toml has no '{key} = [' list to rewrite")
        listing = f"{key} = [\n" + "".join(f'    "{p}",\n' for p in values) + "]"
        text = block.sub(lambda _, listing=listing: listing, text)
    if not BUILD_REQUIRES.search(text):
        raise SystemExit("pyproject.toml has no build 'requires = [' to rewrite")
    return BUILD_REQUIRES.sub(lambda _: "requires = [" + ", ".join(f'"{p}"' for p in build) + "]", text)


if __name__ == "__main__":
    if sys.argv[1:] == ["uncapped"]:
        print(" ".join(uncapped()))
    elif sys.argv[1:] == ["locked"]:
        closure = runtime_closure(tool_table()["direct-dependencies"])
        PYPROJECT.write_text(relocked(PYPROJECT.read_text(), LOCK.read_text(), closure))
    else:
        sys.exit(__doc__)
