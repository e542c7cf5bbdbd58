"""The upper bounds in pyproject.toml: each direct dependency capped at the version the suite passed with.

    python .ci/pins.py uncapped   print every dependency (test extra included) without its cap, for
                                  `make test-latest`, which tries the newest releases on purpose
    python .ci/pins.py cap        rewrite each cap to the version installed in this Python's environment,
                                  for `make lock` after `make test-latest` passed

Only the text after ``<=`` in a dependency line changes; the lower bounds stay as written.
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
CAP = re.compile(r'"(?P<name>[A-Za-z0-9_.\-]+)(?P<extra>\[[^\]]*\])?(?P<lower>[^",]*),<=(?P<cap>[^"]+)"')


def requirements() -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    return project["dependencies"] + project["optional-dependencies"]["test"]


def uncapped() -> list[str]:
    return [re.sub(r",<=[^,]+$", "", req) for req in requirements()]


def recapped(text: str) -> str:
    return CAP.sub(lambda m: f'"{m["name"]}{m["extra"] or ""}{m["lower"]},<={version(m["name"])}"', text)


if __name__ == "__main__":
    if sys.argv[1:] == ["uncapped"]:
        print(" ".join(uncapped()))
    elif sys.argv[1:] == ["cap"]:
        PYPROJECT.write_text(recapped(PYPROJECT.read_text()))
    else:
        sys.exit(__doc__)
