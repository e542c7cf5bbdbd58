"""The package's structure as tests: no import circles, every import down or sideways through the floors, size
limits on modules, functions, classes and test modules, one file name per module, strict type checks on every
module, and no ``Any`` in a public signature without a comment saying why."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ("goodopt", "solvers", "formulations", "paper_figures")


def _import_graph():
    mods = {}
    for pkg, folder in (("goodopt", ROOT / "goodopt"), ("goodopt.formulations", ROOT / "formulations"),
                        ("goodopt.solvers", ROOT / "solvers")):
        for f in folder.rglob("*.py"):
            parts = list(f.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join([pkg, *parts])] = f
    graph = {}
    for m, f in mods.items():
        pkg = m if f.name == "__init__.py" else m.rsplit(".", 1)[0]
        deps = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1] if node.level else []
                tgt = ".".join(base + ([node.module] if node.module else []))
                for a in node.names:
                    deps.add(f"{tgt}.{a.name}" if f"{tgt}.{a.name}" in mods else tgt)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[m] = {d for d in deps if d in mods and d != m}
    return graph


def test_no_import_circles_and_no_imports_of_the_facade():
    graph = _import_graph()
    # every module's reachable set must not contain the module itself (function-level imports count too)
    for start in graph:
        seen, stack = set(), list(graph[start])
        while stack:
            m = stack.pop()
            if m == start:
                pytest.fail(f"{start} imports itself through a circle")
            if m not in seen:
                seen.add(m)
                stack.extend(graph[m])
    facade = [m for m, deps in graph.items() if "goodopt" in deps and m != "goodopt"]
    assert facade == [], f"modules importing the goodopt facade: {facade}"


#: The floors of the house, bottom up: a module imports only from its own floor or the ones below. The core
#: modules of ``goodopt`` (models, data, the problem and its evaluator) sit below the solvers; only the facade
#: ``goodopt`` itself reaches up to ``solvers``.
FLOORS = ("goodopt.formulations", "goodopt.solvers", "goodopt.library", "goodopt.pareto", "goodopt.sim", "goodopt.runs", "goodopt.reproduce",
          "goodopt.bench", "goodopt.cli")


def _floor(module: str) -> int | None:
    for i, prefix in enumerate(FLOORS):
        if module == prefix or module.startswith(prefix + "."):
            return i
    return None


def test_every_import_goes_down_or_sideways():
    up = []
    for m, deps in _import_graph().items():
        here = _floor(m)
        for d in deps:
            there = _floor(d)
            if there is None or m == "goodopt":
                continue
            # the core (no floor) may use formulations, nothing higher; a floor may use its own and lower ones
            if (here is None and there > 0) or (here is not None and there > here):
                up.append(f"{m} -> {d}")
    assert up == [], f"upward imports: {up}"


def test_no_module_over_400_lines_and_no_function_over_60():
    big, long_ = [], []
    for folder in ("goodopt", "solvers", "formulations", "paper_figures"):
        for f in (ROOT / folder).rglob("*.py"):
            text = f.read_text()
            if text.count("\n") > 400:
                big.append(f"{f.relative_to(ROOT)} ({text.count(chr(10))} lines)")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        node.end_lineno - node.lineno + 1 > 60:
                    long_.append(f"{f.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert big == [] and long_ == [], f"modules over 400 lines: {big}; functions over 60 lines: {long_}"


def test_no_class_over_250_lines():
    big = []
    for folder in ("goodopt", "solvers", "formulations", "paper_figures"):
        for f in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(f.read_text())):
                if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > 250:
                    big.append(f"{f.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert big == [], f"classes over 250 lines: {big}"


def test_no_test_module_over_600_lines():
    # a test module past that holds several subjects: split it by subject (the solver tests are four)
    big = [f"{f.name} ({f.read_text().count(chr(10))} lines)" for f in (ROOT / "tests").glob("*.py")
           if f.read_text().count("\n") > 600]
    assert big == [], f"test modules over 600 lines: {big}"

def test_no_two_modules_share_a_file_name_unless_one_is_the_others_command():
    """A traceback or a search names one module. The only shared names: ``__init__``/``__main__``, and a
    sub-command's module ``goodopt/cli/NAME.py`` beside the module it is the command face of, which its
    docstring names (``:mod:`goodopt....NAME```)."""
    by_name: dict[str, list[Path]] = {}
    for folder in ("goodopt", "solvers", "formulations", "paper_figures", "scenarios"):
        for f in (ROOT / folder).rglob("*.py"):
            if f.name not in ("__init__.py", "__main__.py"):
                by_name.setdefault(f.name, []).append(f.relative_to(ROOT))
    shared = []
    for name, paths in by_name.items():
        if len(paths) < 2:
            continue
        cli = [p for p in paths if p.parts[:2] == ("goodopt", "cli")]
        others = [p for p in paths if p not in cli]
        said = cli and len(others) == 1 and re.search(
            rf":mod:`goodopt\.[\w.]*\b{name[:-3]}`", ast.get_docstring(ast.parse((ROOT / cli[0]).read_text())) or "")
        if not said:
            shared.append(f"{name}: {', '.join(map(str, paths))}")
    assert shared == [], f"file names used twice: {shared}"



#: mypy --strict's checks as pyproject.toml spells them out for the package.
STRICT_OPTIONS = ("disallow_untyped_defs", "disallow_incomplete_defs", "disallow_untyped_calls",
                  "disallow_untyped_decorators", "disallow_any_generics", "disallow_subclassing_any",
                  "check_untyped_defs", "no_implicit_reexport", "strict_equality", "extra_checks")


def test_the_strict_type_checks_cover_the_whole_package():
    """Every module of goodopt is under mypy's strict checks: one override turns them all on for goodopt.*, and
    no other loosens any of them for a goodopt module."""
    import tomllib

    overrides = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    strict = [o for o in overrides if o.get("disallow_untyped_defs") is True]
    assert [o["module"] for o in strict] == [["goodopt.*"]]
    assert [opt for opt in STRICT_OPTIONS if strict[0].get(opt) is not True] == []
    loosened = [(m, opt) for o in overrides for m in o["module"] if m.startswith("goodopt")
                for opt in STRICT_OPTIONS if o.get(opt) is False]
    assert loosened == [], f"modules exempt from the strict checks: {loosened}"


def _names_any(annotation: ast.expr) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "Any" for n in ast.walk(annotation))


def test_no_any_in_a_public_signature_without_a_comment_saying_why():
    """``Any`` in a public function's parameters or return type is a hole in the typed contract: where it stays
    (pyomo and highspy objects without type stubs, YAML values before they are checked, whatever a timed call
    returns), a comment on the signature says why. Named aliases (``ArrayIn``, ``Record``) say it where they are
    defined (goodopt/arrays.py, goodopt/records.py)."""
    silent = []
    for folder in PACKAGE:
        for f in sorted((ROOT / folder).rglob("*.py")):
            lines = f.read_text().splitlines()
            for node in ast.walk(ast.parse("\n".join(lines))):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("_"):
                    continue
                a = node.args
                annotations = [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                               if x is not None and x.annotation is not None] + [node.returns] * (node.returns is not None)
                signature = "\n".join(lines[node.lineno - 1:node.body[0].lineno - 1])
                if any(_names_any(t) for t in annotations) and "#" not in signature:
                    silent.append(f"{f.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert silent == [], f"public signatures with Any and no comment: {silent}"
