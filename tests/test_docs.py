"""The README and docs/ as a newcomer reads them: every option is documented, every YAML block is valid,
and the commands and Python blocks run as written (the quick ones here, the rest in the slow tier); the README
stays short and quotes no timing, and every tutorial runs."""

import inspect
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from goodopt.solvers.api import METHOD_OPTIONS

from goodopt.runs.spec import spec_from_dict
from goodopt.scenario import scenario_from_dict
from goodopt.sim import policies

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
#: The user guide's pages, in the site's order after the README: their blocks and commands are checked as the
#: README's (formats, options, solvers and extending have tests of their own below).
GUIDE_PAGES = ("install", "cli", "model", "methods", "benchmarks", "gavel", "simulation", "sweeps", "reproduce",
               "data")
GUIDE = "\n".join([README] + [(REPO / "docs" / f"{name}.md").read_text() for name in GUIDE_PAGES])
#: The options page and the declaration its tables are rendered from (goodopt/option_meanings.yaml, which
#: ``goodopt options NAME`` reads too).
OPTIONS_DOC = (REPO / "docs" / "options.md").read_text() + (REPO / "goodopt" / "option_meanings.yaml").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", GUIDE, flags=re.S)


def _commands() -> list[str]:
    """Every ``goodopt ...`` command the README and the guide show (code spans, indented blocks; continuations
    joined)."""
    text = GUIDE.replace("\\\n", " ")
    spans = re.findall(r"`(goodopt [^`]+)`", text)
    indented = re.findall(r"^ {4}(goodopt [^\n#]+)", text, flags=re.M)
    fenced = [line for block in re.findall(r"```\n(.*?)```", text, flags=re.S) for line in block.splitlines()
              if line.startswith("goodopt ")]
    commands = [c.strip() for c in spans + indented + fenced]
    # leave out templates (goodopt sweep SPEC.yaml) and bare command names
    return [c for c in dict.fromkeys(commands) if len(c.split()) > 2 and not re.search(r"\b[A-Z]{3,}\b", c)]


def test_every_method_and_policy_option_is_documented():
    """goodopt's own methods and policies (an installed plug-in documents itself: goodopt options NAME)."""
    from goodopt.solvers.api import REGISTRY

    names = {o for m, opts in METHOD_OPTIONS.items() for o in opts
             if REGISTRY[m].options.__module__.startswith("goodopt.")}
    for cls in policies.POLICIES.values():
        if not cls.__module__.startswith("goodopt."):
            continue
        for klass in cls.__mro__:
            if "__init__" in vars(klass):
                names |= {p for p in inspect.signature(klass.__init__).parameters if p not in ("self", "kw", "args", "kwargs")}
    missing = sorted(n for n in names if f"`{n}`" not in OPTIONS_DOC)
    assert not missing, f"docs/options.md does not name {missing}"


def test_every_yaml_block_of_the_readme_is_valid(tmp_path):
    blocks = _blocks("yaml")
    kinds = []
    for block in blocks:
        data = yaml.safe_load(block)
        if data.get("kind") == "rigid":  # Gavel's throughput file, in miniature: the README's spec stays the same
            gpus = {"v100": {f"('{t}', {s})": {"null": 1.0} for t in ("x", "y") for s in (1, 2, 4, 8)}}
            (tmp_path / "t.json").write_text(json.dumps({**gpus, "p100": gpus["v100"], "k80": gpus["v100"]}))
            # (a miniature has not Gavel's job types, so it is drawn by numpy)
            spec_from_dict({**data, "throughputs": str(tmp_path / "t.json"), "generator": "numpy"})
            kinds.append("spec")
        elif "kind" in data:
            spec_from_dict(data)
            kinds.append("spec")
        elif "cluster" in data:
            scenario_from_dict(data)
            kinds.append("scenario")
        else:
            kinds.append("allocation")
    assert sorted(kinds) == ["allocation", "scenario", "spec", "spec", "spec", "spec"]


def _run_command(cmd: str, tmp_path: Path, traces: Path | None):
    argv = shlex.split(cmd)
    if any("shared/traces" in a for a in argv):
        if traces is None:
            pytest.skip("the command reads the published traces, which were not found")
        argv = [a.replace("../shared/traces", str(traces)) for a in argv]
    (tmp_path / "a.yaml").write_text(next(b for b in _blocks("yaml") if b.startswith("# a.yaml")))
    (tmp_path / "grid.yaml").write_text(next(b for b in _blocks("yaml") if "name: pwl-study" in b))
    if argv[1] in ("simulate", "sweep"):
        argv.append("--dry-run")  # the run itself is a simulation or a grid: checked, not run, here
    if argv[1] == "sweep" and "--dask" in argv:
        i = argv.index("--dask")
        del argv[i:i + 2]
    env = {**os.environ, "GOODOPT_TRACES": str(traces or tmp_path / "no-traces")}
    return subprocess.run([sys.executable, "-m", "goodopt.cli", *argv[1:]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)


QUICK = ("info", "evaluate", "simulate", "sweep", "families")


@pytest.mark.parametrize("cmd", [c for c in _commands() if c.split()[1] in QUICK])
def test_the_readme_commands_run_as_written(cmd, tmp_path, request):
    traces = _traces(request)
    p = _run_command(cmd, tmp_path, traces)
    assert p.returncode == 0, f"{cmd}\n{p.stderr[-2000:]}"
    assert "Traceback" not in p.stderr


@pytest.mark.slow
@pytest.mark.parametrize("cmd", [c for c in _commands() if c.split()[1] in ("solve", "compare")])
def test_the_readme_solve_and_compare_commands_run_as_written(cmd, tmp_path, request):
    p = _run_command(cmd, tmp_path, _traces(request))
    assert p.returncode == 0, f"{cmd}\n{p.stderr[-2000:]}"


def test_the_readme_arrays_block_runs_as_written():
    import goodopt

    scenario = goodopt.load_scenario("small-2node")
    namespace = {"scenario": scenario}
    exec(compile(_blocks("python")[1], "README.md", "exec"), namespace)
    assert namespace["res"].fitness.shape == (100,)


@pytest.mark.slow
@pytest.mark.parametrize("index", [0, 2])
def test_the_readme_python_blocks_run_as_written(index, tmp_path, request, monkeypatch):
    if index == 2:
        _traces(request, required=True)
    monkeypatch.chdir(tmp_path)
    exec(compile(_blocks("python")[index], "README.md", "exec"), {})


def _traces(request, required=False):
    from .conftest import _traces_path

    path = _traces_path()
    if (path / "pollux").is_dir():
        return path
    if required:
        pytest.skip(f"published traces not found at {path}")
    return None


def _doc_blocks(name: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", (REPO / "docs" / name).read_text(), flags=re.S)


def test_the_formats_page_examples_load_as_written(tmp_path):
    """docs/formats.md: the scenario example, with the page's throughput-profile example as its own
    ``profiles/myapp.yaml``, loads and builds its problem; the application-profile block is a schema sketch
    (``[1, 2, ...]``) and is only parsed."""
    from goodopt.scenario import scenario_from_file

    scenario, app_profile, throughput = _doc_blocks("formats.md", "yaml")
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "myapp.yaml").write_text(throughput)
    (tmp_path / "my-2node.yaml").write_text(scenario)
    sc = scenario_from_file(tmp_path / "my-2node.yaml")
    problem = sc.problem()
    assert (problem.n_jobs, problem.n_nodes) == (2, 2)
    assert "myapp" in sc.profiles
    assert yaml.safe_load(app_profile)["gpu_types"]["t4"]["throughput"]["gamma"] == 1.93


def test_the_extending_recipe_makes_a_method_every_command_takes():
    """docs/extending.md, "From a script": a registered method is solved, compared and swept by name."""
    import numpy as np
    from goodopt.solvers import solve
    from goodopt.solvers.api import REGISTRY, Method, register_method
    from goodopt.solvers.options import MethodOptions
    from goodopt.solvers.result import MethodOutcome, Termination

    from goodopt.runs import compare
    from goodopt.sources import load_scenario

    recipe = _doc_blocks("extending.md", "python")[0]
    assert "MethodOutcome(alloc=alloc, status=Termination.COMPLETED" in recipe

    from dataclasses import dataclass

    @dataclass(frozen=True, kw_only=True)
    class IdleOptions(MethodOptions):
        method = "idle-doc"

    def solve_idle(problem, ev, opts, t_start) -> MethodOutcome:
        alloc = np.zeros((problem.n_jobs, problem.n_nodes), dtype=np.int64)
        return MethodOutcome(alloc=alloc, status=Termination.COMPLETED, solve_s=0.0, solver="idle-doc",
                             raw_status="completed")

    register_method("idle-doc", Method(IdleOptions, solve_idle))
    try:
        assert solve(load_scenario("small-2node"), "idle-doc").feasible
        table = compare(["family:tiny:1"], ["idle-doc", "greedy"], progress=False)
        assert table["method"].tolist() == ["idle-doc", "greedy"]
    finally:
        REGISTRY.pop("idle-doc")


def _locked_versions(text: str) -> dict[str, str]:
    """name -> version of every requirement of the lock that applies to this platform (markers evaluated)."""
    from packaging.markers import Marker

    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==([^ ;\\]+)\s*(?:;\s*([^\\]+?))?\s*\\?$", line)
        if m and (m.group(3) is None or Marker(m.group(3)).evaluate()):
            out[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    return out


@pytest.mark.skipif(os.environ.get("GOODOPT_LOCKED") != "1",
                    reason="only in the Makefile's venv, which installs the lock requirements.txt (make test sets "
                           "GOODOPT_LOCKED=1; make test-latest runs the newest releases on purpose)")
def test_the_venv_holds_exactly_the_locked_versions():
    """The promise of the README's set-up: the suite runs on the versions the lock records, not on whatever
    release is newest where it is installed."""
    from importlib.metadata import PackageNotFoundError, version

    locked = _locked_versions((REPO / "requirements.txt").read_text())
    assert {"numpy", "scipy", "highspy", "pyomo", "pymoo", "pandas", "hypothesis", "setuptools"} <= set(locked)
    wrong = {}
    for name, want in locked.items():
        try:
            have = version(name)
        except PackageNotFoundError:
            have = None
        if have != want:
            wrong[name] = (have, want)
    assert not wrong, f"installed (have, locked): {wrong}"


def test_every_package_goodopt_installs_is_pinned_at_its_locked_version():
    """pyproject.toml's dependencies and its test extra pin every package of the lock at its version, markers kept
    (the build tools aside): whatever installs goodopt (pip install ., or as another project's dependency) gets the
    versions the suite passed with, dependencies of dependencies included, and `pip install ".[test]"` the whole
    lock. The dependencies are what goodopt runs with (no test tool among them); `make test-latest` installs the
    direct dependencies' newest releases instead (.ci/pins.py uncapped) and `make lock` rewrites the pins."""
    import tomllib

    from packaging.markers import Marker

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    runtime, test = project["dependencies"], project["optional-dependencies"]["test"]
    pins = {}
    for req in runtime + test:
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^;\s]+)(?:; (.+))?", req)
        assert m, f"{req}: wants name==version"
        if m[3] is None or Marker(m[3]).evaluate():
            pins[re.sub(r"[-_.]+", "-", m[1]).lower()] = m[2]
    locked = _locked_versions((REPO / "requirements.txt").read_text())  # markers evaluated for this platform
    assert pins == {name: v for name, v in locked.items() if name not in ("setuptools", "wheel")}
    names = {re.split(r"[=;]", req)[0].lower() for req in runtime}
    assert {"numpy", "scipy", "highspy", "pyomo", "pymoo", "pandas", "pillow", "python-dateutil"} <= names
    assert not names & {"pytest", "hypothesis", "mypy", "ruff"}
    lifted = subprocess.run([sys.executable, str(REPO / ".ci" / "pins.py"), "uncapped"], capture_output=True,
                            text=True, check=True).stdout.split()
    assert "numpy>=2.0" in lifted and "pytest>=8.0" in lifted and not any("==" in r for r in lifted)


def test_goodopt_is_built_with_the_locked_build_tools():
    # pip builds goodopt in an isolated environment from [build-system] requires: at the lock's setuptools and
    # wheel, not the newest (make lock rewrites them with the extra)
    import tomllib

    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]
    locked = _locked_versions((REPO / "requirements.txt").read_text())
    assert requires == [f"setuptools=={locked['setuptools']}", f"wheel=={locked['wheel']}"]


def test_the_conventional_requirements_file_installs_the_lock():
    # whoever installs by the usual `pip install -r requirements.txt` gets the locked, hashed versions: the
    # conventional file is the lock itself
    lock = (REPO / "requirements.txt").read_text().splitlines()
    assert not any(ln.strip().startswith("-r") for ln in lock)
    pinned = [i for i, ln in enumerate(lock) if "==" in ln and not ln.startswith("#")]
    assert len(pinned) > 50 and all("--hash=sha256:" in lock[i + 1] for i in pinned)


def test_the_two_lock_files_pin_the_same_versions():
    """pylock.toml (the standard lock format, for uv, pip and other installers) and requirements.txt (what the
    Makefile's venv installs) record one set of tested versions, with hashes in both."""
    import tomllib

    lock = tomllib.loads((REPO / "pylock.toml").read_text())
    standard = {re.sub(r"[-_.]+", "-", p["name"]).lower(): p["version"] for p in lock["packages"]}
    text = (REPO / "requirements.txt").read_text()
    pip_format = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==([^ ;\\]+)", line)
        if m:
            pip_format[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    assert standard == pip_format and len(standard) > 50
    assert all("hashes" in w for p in lock["packages"] for w in p.get("wheels", []))


@pytest.mark.slow
def test_the_readme_library_benchmark_runs_as_written(tmp_path):
    """The README's five lines: CBC outside goodopt on every own-objective instance, the answers checked and
    imported into a comparison on the library (goodopt and CBC from this environment)."""
    script = next(b for b in _blocks("sh") if "runs.csv" in b)
    here = Path(sys.executable).parent
    script = script.replace(".venv/bin/cbc", str(here / "cbc")).replace("goodopt ", f"{here / 'goodopt'} ")
    (tmp_path / "scenarios").symlink_to(Path(__file__).resolve().parents[1] / "scenarios")
    p = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "feasible; fitness" in p.stdout and "Friedman test on primal_integral" in p.stdout
    assert (tmp_path / "t.tex").read_text().count("\\toprule") == 3 and (tmp_path / "p.png").is_file()
    rows = (tmp_path / "runs.csv").read_text().splitlines()
    assert len(rows) == 13  # the header and the 12 own-objective instances


#: A timing or a count the prose would have to keep true by hand: a number followed by a unit of time or
#: by "tests".
TIMING = re.compile(r"\b\d[\d.,]*\s?(?:s|ms|min|minutes?|seconds?|h|hours?|tests)\b")


def test_the_readme_is_short_and_quotes_no_timing_or_count_by_hand():
    """The front door holds what a newcomer reads in minutes; any measured number lives in a generated file
    (the docs render those: docs/data/, ``<!-- table: ... -->``)."""
    assert len(README.splitlines()) <= 150
    prose = re.sub(r"```.*?```", "", README, flags=re.S)
    assert TIMING.findall(prose) == []


def test_the_readme_tells_how_to_run_goodopt_after_the_set_up():
    assert ". .venv/bin/activate" in README
    p = subprocess.run([sys.executable, "-m", "goodopt.cli", "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("goodopt ")


def test_every_rendered_data_table_exists_and_is_stamped():
    """Each ``<!-- table: data/NAME.csv -->`` of the docs names a committed table whose metadata says the
    machine, date and commit it was made on (the docs build renders them and fails on the same)."""
    refs = {m for page in (REPO / "docs").glob("*.md")
            for m in re.findall(r"<!-- table: (\S+?\.csv) -->", page.read_text())}
    assert refs, "the docs render no data table"
    for rel in refs:
        meta = json.loads((REPO / "docs" / rel).with_suffix(".meta.json").read_text())
        assert {"machine", "date", "commit"} <= set(meta), rel


TUTORIALS = sorted(p for p in (REPO / "docs" / "tutorials").glob("*.py") if p.name != "run_tutorial.py")


def test_there_are_tutorials_for_the_five_tasks_and_each_is_in_the_site():
    site = (REPO / "mkdocs.yml").read_text()
    assert len(TUTORIALS) >= 5
    for t in TUTORIALS:
        assert f"tutorials/{t.stem}.md" in site, t.name


@pytest.mark.slow
@pytest.mark.parametrize("script", TUTORIALS, ids=[t.stem for t in TUTORIALS])
def test_the_tutorial_runs_as_the_docs_build_runs_it(script, tmp_path):
    p = subprocess.run([sys.executable, str(REPO / "docs" / "tutorials" / "run_tutorial.py"), str(script),
                        str(tmp_path)], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    cells = json.loads((tmp_path / f"{script.stem}.json").read_text())
    assert any(c.get("stdout", "").strip() for c in cells), "the tutorial printed nothing"


def test_a_scenario_and_a_result_show_themselves_in_a_notebook():
    """The repr of a scenario is one line; its HTML a row per application; a result's HTML its summary and then
    every job's GPUs, nodes and speedup."""
    import goodopt

    sc = goodopt.load_scenario("family:sia-64:0")
    assert len(repr(sc)) < 300 and "32 jobs" in repr(sc)
    apps = {j.application for j in sc.jobs}
    assert sc._repr_html_().count("<tr>") == 1 + len(apps)
    res = goodopt.solve(sc, "greedy")
    page = res._repr_html_()
    assert page.count("<tr>") == 2 + 1 + len(sc.jobs)
    assert all(f"<td>{j.name}</td>" in page for j in sc.jobs)


def test_goodopt_options_gives_every_own_methods_option_its_meaning():
    """``goodopt options NAME`` reads the meanings from the declaration the docs page is rendered from: none of
    goodopt's own methods has an option without one."""
    from goodopt.solvers.api import REGISTRY

    from goodopt.cli.options import meanings

    for method, opts in METHOD_OPTIONS.items():
        if not REGISTRY[method].options.__module__.startswith("goodopt."):
            continue
        known = meanings(method, kind="method")
        missing = [o for o in opts if not known.get(o)]
        assert not missing, f"{method}: no meaning for {missing}"
    assert "queue" in meanings("tiresias", kind="policy")["threshold_gpu_s"]


def test_goodopt_options_gives_every_policys_and_auto_scalers_option_its_meaning():
    """The policies and auto-scalers declare their options as classes, as methods do: each option of each
    (their ``Options``' fields) has a meaning in the declaration ``goodopt options`` and the docs read."""
    from goodopt.cli.options import meanings
    from goodopt.sim.autoscale import AUTOSCALERS
    from goodopt.sim.policies import POLICIES

    for kind, registry in (("policy", POLICIES), ("auto-scaler", AUTOSCALERS)):
        for name, cls in registry.items():
            known = meanings(name, kind=kind)
            missing = [o for o in cls.Options.names() if not known.get(o)]
            assert not missing, f"{kind} {name}: no meaning for {missing}"


# ------------------------------------------------------------------ cross-references in docstrings
ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|exc|obj):`~?([^`<]+)`")


def _package_modules():
    import importlib
    import pkgutil

    import goodopt

    roots = ["goodopt", "goodopt.formulations", "goodopt.solvers", "goodopt.paper_figures"]
    names = list(roots)
    for root in roots:
        pkg = importlib.import_module(root)
        names += [m.name for m in pkgutil.walk_packages(pkg.__path__, root + ".") if not m.name.endswith("__main__")]
    assert goodopt  # the namespace every reference lives in
    return sorted(set(names))


def _has(obj, name: str) -> bool:
    """``obj.name`` exists: an attribute, a dataclass field, an annotation, or (on a class) ``self.name = ...``."""
    if hasattr(obj, name) or name in getattr(obj, "__dataclass_fields__", {}) or name in getattr(obj, "__annotations__", {}):
        return True
    if isinstance(obj, type):
        try:
            return re.search(rf"self\.{re.escape(name)}\s*[:=]", inspect.getsource(obj)) is not None
        except (OSError, TypeError):
            return False
    return False


def _walk(obj, parts) -> bool:
    for p in parts:
        if not _has(obj, p):
            return False
        obj = getattr(obj, p, None)
        if obj is None:  # a field or instance attribute: nothing further to resolve
            return p == parts[-1]
    return True


def _resolves(module, cls, target: str) -> bool:
    import builtins
    import importlib

    if target.startswith("."):
        dots = len(target) - len(target.lstrip("."))
        pkg = module.__name__ if hasattr(module, "__path__") else module.__name__.rpartition(".")[0]
        for _ in range(dots - 1):
            pkg = pkg.rpartition(".")[0]
        target = f"{pkg}.{target.lstrip('.')}".rstrip(".")
    parts = target.split(".")
    for i in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
        try:
            found = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        if _walk(found, parts[i:]):
            return True
        break
    scopes = [module] + ([cls] if cls is not None else []) + [builtins]  # a name relative to where it is written
    return any(_walk(scope, parts) for scope in scopes)


def _unresolved_in(name: str) -> tuple[int, list[str]]:
    """How many references module ``name``'s docstrings make, and those that name nothing."""
    import ast
    import importlib

    module = importlib.import_module(name)
    unresolved, n = [], 0

    def visit(node, cls):
        nonlocal n
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            for target in ROLE.findall(ast.get_docstring(node, clean=False) or ""):
                n += 1
                if not _resolves(module, cls, target.strip()):
                    unresolved.append(f"{name}:{getattr(node, 'lineno', 0)} {target}")
        for child in ast.iter_child_nodes(node):
            visit(child, getattr(cls or module, child.name, None) if isinstance(child, ast.ClassDef) else cls)

    visit(ast.parse(Path(module.__file__).read_text()), None)
    return n, unresolved


def test_every_cross_reference_in_a_docstring_names_something_that_exists():
    """A ``:func:``/``:class:``/``:mod:``/``:meth:``/``:attr:``/``:data:`` reference names a module, or a name
    of the module, class or package it points into: a name that moved or went away is caught here."""
    counts = [_unresolved_in(name) for name in _package_modules()]
    assert sum(n for n, _ in counts) > 500
    unresolved = [u for _, us in counts for u in us]
    assert not unresolved, unresolved


def _names_something(dotted: str) -> bool:
    """Whether ``goodopt.a.b.c`` is a module, or a name reached from the longest importable module prefix."""
    import importlib

    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_every_module_name_and_source_path_in_the_guides_exists():
    """The README and every docs page: each dotted ``goodopt.…`` name is a module or a name in one (the plug-in
    entry-point groups aside), each source path (``solvers/…/x.py``) a file of the repository; a module that
    moved or a name that went away is caught here, as the docstrings' references are above."""
    from goodopt.plugins import METHOD_GROUP, POLICY_GROUP

    missing = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        text = page.read_text()
        for name in set(re.findall(r"\bgoodopt(?:\.[A-Za-z_]\w*)+", text)) - {METHOD_GROUP, POLICY_GROUP}:
            if not _names_something(name):
                missing.append(f"{page.name}: {name}")
        for path in set(re.findall(r"(?<![\w/.])((?:goodopt|solvers|formulations|paper_figures|scenarios|tests)"
                                   r"/[\w/.-]+\.(?:py|yaml|csv))", text)):
            if not (REPO / path).exists():
                missing.append(f"{page.name}: {path}")
    assert not missing, missing
