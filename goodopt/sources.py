"""Where scenarios come from: a file, a shipped name, or a generated family member.

:func:`load_scenario` accepts all three spellings. :func:`scenario_inputs`
lists the files a spelling reads, so that anything caching a result computed
from a scenario (:mod:`goodopt.runs.cache`) can tell when one of them changed;
:func:`shipped_data_files` lists the shipped scenarios and profiles, which any
scenario may read (applications not listed under ``profiles:`` fall back to
the shipped profiles).
"""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

import yaml

from .errors import ScenarioError
from .families import FAMILIES, family_scenario, parse_family
from .scenario import Scenario, scenario_from_file
from .validation import suggest, usable_path
from .yaml12 import load_yaml

FAMILY_PREFIX = "family:"
log = logging.getLogger(__name__)


def shipped_scenario_names() -> list[str]:
    """Names of the scenarios shipped in ``scenarios/``."""
    root = resources.files("goodopt.scenarios")
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml"))


def _shipped_file(name: str) -> Path | None:
    f = resources.files("goodopt.scenarios") / f"{name}.yaml"
    return Path(str(f)) if f.is_file() else None


def load_scenario(source: object) -> Scenario:  # source: a path, a name or family:NAME:SEED; read as str()
    """Load a scenario from a YAML file, a shipped scenario by name (``pollux-testbed``),
    or a generated family member (``family:testbed-over:3``, see :mod:`goodopt.families`)."""
    s = str(source)
    log.debug("loading scenario %s", s)
    if s.startswith(FAMILY_PREFIX):
        return family_scenario(s)
    p = usable_path(s, "scenario", ScenarioError)
    if not p.is_file() and p.suffix == "" and s in shipped_scenario_names():
        with resources.as_file(resources.files("goodopt.scenarios") / f"{s}.yaml") as f:
            return scenario_from_file(f)
    if not p.exists():
        raise ScenarioError(s, "scenario file not found",
                            f"{suggest(s, shipped_scenario_names())}give a path, a shipped name "
                            f"({', '.join(shipped_scenario_names())}) or "
                            f"family:NAME:SEED (families: {', '.join(FAMILIES)})")
    return scenario_from_file(p)


def check_source(source: object) -> None:
    """Check a scenario spelling before any work: a family member's name and seed, a shipped name, or a
    scenario file (read and validated in full, with its profiles)."""
    s = str(source)
    if s.startswith(FAMILY_PREFIX):
        parse_family(s)
    elif usable_path(s, "scenario").is_file() or Path(s).suffix != "" or s not in shipped_scenario_names():
        load_scenario(s)


def scenario_inputs(source: object) -> list[Path]:
    """The files that loading ``source`` reads besides the shipped data: the scenario file and the
    profile files it references. Empty for family members and shipped names (shipped data only)."""
    s = str(source)
    if s.startswith(FAMILY_PREFIX):
        return []
    p = Path(s)
    if not p.is_file():
        shipped = _shipped_file(s) if p.suffix == "" else None
        return [] if shipped is None else scenario_inputs(shipped)
    out = [p]
    try:
        data = load_yaml(p.read_text())
    except (yaml.YAMLError, UnicodeDecodeError, OSError):
        return out  # loading will fail and say why; the file's own bytes are the input
    refs = data.get("profiles") if isinstance(data, dict) else None
    if isinstance(refs, dict):
        out += [p.parent / str(rel) for rel in refs.values() if (p.parent / str(rel)).is_file()]
    return out


def shipped_data_files() -> list[Path]:
    """Every shipped scenario and profile file (``scenarios/**.yaml``), sorted."""
    root = Path(str(resources.files("goodopt.scenarios")))
    return sorted(root.rglob("*.yaml"))
