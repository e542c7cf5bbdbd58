"""The tested versions in pyproject.toml: each direct dependency capped at the version the suite passed with,
and the ``locked`` extra pinning every package of the lock.

    python .ci/pins.py uncapped   print every dependency (test extra included) without its cap, for
                                  `make test-latest`, which tries the newest releases on purpose
    python .ci/pins.py cap        rewrite each cap to the version installed in this Python's environment,
                                  for `make lock` after `make test-latest` passed
    python .ci/pins.py locked     rewrite the ``locked`` extra from requirements.txt (every package at its
                                  locked version, markers kept, the build tools aside) and the build
                                  system's requirements (the build tools at their locked versions), for
                                  `make lock`

Only the text after ``<=`` in a dependency line, the ``locked = [...]`` list and the build system's
``requires = [...]`` change; the lower bounds stay as written.
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
LOCK = PYPROJECT.parent / "requirements.txt"
#: Locked only to build goodopt itself (the Makefile's venv builds it without isolation), not to run it.
BUILD_TOOLS = ("setuptools", "wheel")
PIN = re.compile(r"^(?P<name>[A-Za-z0-9_.\-]+)==(?P<version>[^ ;\\]+)(?:\s*;\s*(?P<marker>[^\\]+?))?\s*\\?$", re.M)
LOCKED_EXTRA = re.compile(r"^locked = \[\n(?:    \".*\",\n)*\]$", re.M)
BUILD_REQUIRES = re.compile(r"^requires = \[[^\]\n]*\]$", re.M)
CAP = re.compile(r'"(?P<name>[A-Za-z0-9_.\-]+)(?P<extra>\[[^\]]*\])?(?P<lower>[^",]*),<=(?P<cap>[^"]+)"')


def requirements() -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    return project["dependencies"] + project["optional-dependencies"]["test"]


def uncapped() -> list[str]:
    return [re.sub(r",<=[^,]+$", "", req) for req in requirements()]


def locked_pins(lock: str) -> list[str]:
    """Every package of the lock text as ``name==version`` (with its environment marker), build tools aside."""
    return [f"{m['name']}=={m['version']}" + (f"; {m['marker']}" if m["marker"] else "")
            for m in PIN.finditer(lock) if m["name"].lower() not in BUILD_TOOLS]


def build_pins(lock: str) -> list[str]:
    """The build tools of the lock text as ``name==version``."""
    return [f"{m['name']}=={m['version']}" for m in PIN.finditer(lock) if m["name"].lower() in BUILD_TOOLS]


def relocked(text: str, lock: str) -> str:
    """``text`` (pyproject.toml) with its ``locked = [...]`` extra and its build system's ``requires`` rewritten
    from ``lock``."""
    block = "locked = [\n" + "".join(f'    "{pin}",\n' for pin in locked_pins(lock)) + "]"
    if not LOCKED_EXTRA.search(text) or not BUILD_REQUIRES.search(text):
        raise SystemExit("pyproject.toml has no 'locked = [' extra or build 'requires = [' to rewrite")
    build = "requires = [" + ", ".join(f'"{pin}"' for pin in build_pins(lock)) + "]"
    return BUILD_REQUIRES.sub(lambda _: build, LOCKED_EXTRA.sub(lambda _: block, text))


def recapped(text: str) -> str:
    return CAP.sub(lambda m: f'"{m["name"]}{m["extra"] or ""}{m["lower"]},<={version(m["name"])}"', text)


if __name__ == "__main__":
    if sys.argv[1:] == ["uncapped"]:
        print(" ".join(uncapped()))
    elif sys.argv[1:] == ["cap"]:
        PYPROJECT.write_text(recapped(PYPROJECT.read_text()))
    elif sys.argv[1:] == ["locked"]:
        PYPROJECT.write_text(relocked(PYPROJECT.read_text(), LOCK.read_text()))
    else:
        sys.exit(__doc__)
