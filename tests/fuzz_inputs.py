"""A seeded fuzz of every input kind, run through the command line.

Each case starts from a valid input (a scenario, a profile, a workload CSV,
an allocation, a sweep spec, or a command line), mutates it with a
``numpy.random.Generator`` (a field replaced by a value from :data:`JUNK`, a
field dropped or added, bytes inserted or the file cut short), and runs the
command that reads it. An *outcome* is the exit status (0, 1 or 2, including
argparse's exit 2) or, for a bug, the exception that escaped: any exception
that is not a clean exit is a *traceback*; a case running longer than
``timeout_s`` is a *hang*.

Run it as ``python -m tests.fuzz_inputs --cases 1000 --seed 0``; it prints a
JSON summary and exits 1 when a traceback or hang was found.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import logging
import signal
import sys
import tempfile
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

SHIPPED = Path(__file__).resolve().parents[1] / "scenarios"

#: Values a mutated field may take: wrong types, edge numbers, sizes far too large, odd text.
JUNK = [None, "", "abc", "x" * 300, -1, 0, 1, 2.7, -0.0, 1e-300, 1e300, 10 ** 20, 10 ** 9, 100000000, True,
        False, ".inf", "-inf", "nan", float("inf"), float("-inf"), float("nan"), [], {}, [1, 2], {"a": 1},
        "²", "a\x00b", "t4-0", "cifar10", "generated:1:0", "family:tiny:0", "\u00e9t\u00e9", "1e12", "-5", "0x10"]

WORKLOAD_HEADER = "name,time,application,num_replicas,batch_size"
WORKLOAD_ROWS = ["cifar10-0,0,cifar10,1,128", "ncf-1,30,ncf,1,256", "bert-2,60,bert,2,12"]

PROFILE = yaml.safe_load((SHIPPED / "profiles" / "ncf.yaml").read_text())

ALLOCATION = {"imagenet-0": {"t4-0": 2}, "ncf-1": {"t4-1": 1}, "cifar10-4": {"t4-0": 2}}

SOLVE_SPEC = {"name": "fz", "kind": "solve", "scenarios": ["small-2node"], "methods": ["greedy", {
    "label": "ga-fast", "method": "ga", "options": {"pop_size": 8, "n_gen": 2}}], "seeds": 2, "p": [-1, 0]}
SIM_SPEC = {"name": "fz", "kind": "simulate", "generated": {"loads": [0.5], "seeds": [0], "hours": 1},
            "policies": ["fifo", {"label": "t", "policy": "tiresias", "options": {}}], "cluster": "small-2node",
            "config": {"interval_s": 60}, "vary": {"restart_delay_s": [0, 30]}}

ARG_TOKENS = ["info", "evaluate", "solve", "compare", "simulate", "sweep", "fit", "small-2node", "pollux-testbed",
              "family:tiny:0", "family:tiny:²", "family:nope:1", "family:tiny", "generated:1:0", "generated:x:0",
              "generated:1:0:1e-9", "--method", "greedy", "gredy", "--methods", ",", "milp,gaa", "--policy",
              "polux", "fifo", "--option", "time_limit_s=99999999999999999999", "n_gen=-1", "pop_size=abc",
              "nosuch=1", "--seed", "-1", "1.5", "--seeds", "0", "100000000", "--interval", "1e-9", "0", "nan",
              "--nodes", "100000000", "-3", "--gpus-per-node", "--time-limit", "-1", "inf", "--allocation", ".",
              "--json", "--out", "-v", "-vv", "--dry-run", "--quiet", "--workers", "0", "--truth", "modle",
              "--dask", "not-a-url", "tcp://", "--gpu-type", "h100", "--cluster", "nope.yaml", "y" * 300, "a\x00b"]


@dataclass
class Report:
    cases: int = 0
    outcomes: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)
    tracebacks: list = field(default_factory=list)
    hangs: list = field(default_factory=list)


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _Timeout()


# ------------------------------------------------------------------ mutations
def _paths(obj, prefix=()):
    """Every (path, value) of a nested structure, containers included."""
    yield prefix, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _set(obj, path, value):
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def mutate_tree(tree, rng: np.random.Generator, n_changes: int = 1):
    """``tree`` with ``n_changes`` random edits (replace, drop, add an unknown key, duplicate)."""
    tree = copy.deepcopy(tree)
    for _ in range(n_changes):
        paths = [p for p, _ in _paths(tree) if p]
        if not paths:
            return JUNK[rng.integers(len(JUNK))]
        path = paths[rng.integers(len(paths))]
        parent = tree
        for key in path[:-1]:
            parent = parent[key]
        op = rng.integers(4)
        if op == 0 or (op == 1 and isinstance(parent, list) and len(parent) <= 1):
            _set(tree, path, copy.deepcopy(JUNK[rng.integers(len(JUNK))]))
        elif op == 1:
            del parent[path[-1]]
        elif op == 2 and isinstance(parent, dict):
            parent[str(path[-1]) + "x"] = copy.deepcopy(JUNK[rng.integers(len(JUNK))])
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
        else:
            _set(tree, path, copy.deepcopy(JUNK[rng.integers(len(JUNK))]))
    return tree


def mutate_bytes(data: bytes, rng: np.random.Generator) -> bytes:
    """Raw damage: a cut, a stray non-UTF-8 byte, a stray quote or bracket, or nothing at all."""
    op = rng.integers(4)
    at = int(rng.integers(len(data) + 1))
    if op == 0:
        return data[:at]
    if op == 1:
        return data[:at] + b"\xff\xfe" + data[at:]
    if op == 2:
        return data[:at] + [b'"', b"[", b"{", b":", b"\t", b"\x00"][rng.integers(6)] + data[at:]
    return b""


def _dump(tree) -> bytes:
    return yaml.safe_dump(tree, allow_unicode=True, sort_keys=False).encode("utf-8")


def _text(tree_or_bytes, rng, raw_prob=0.2) -> bytes:
    data = tree_or_bytes if isinstance(tree_or_bytes, bytes) else _dump(tree_or_bytes)
    return mutate_bytes(data, rng) if rng.random() < raw_prob else data


# ------------------------------------------------------------------ cases: (kind, files, argv)
def case_scenario(rng, tmp: Path):
    tree = yaml.safe_load((SHIPPED / "small-2node.yaml").read_text())
    (tmp / "s.yaml").write_bytes(_text(mutate_tree(tree, rng, 1 + int(rng.integers(2))), rng))
    cmd = [["info"], ["solve", "--method", "greedy", "--json"], ["solve", "--method", "milp", "--time-limit", "5"]]
    return cmd[rng.integers(3)][:1] + [str(tmp / "s.yaml")] + cmd[rng.integers(3)][1:]


def case_profile(rng, tmp: Path):
    (tmp / "myapp.yaml").write_bytes(_text(mutate_tree(PROFILE, rng, 1 + int(rng.integers(2))), rng))
    sc = yaml.safe_load((SHIPPED / "small-2node.yaml").read_text())
    sc["profiles"] = {"myapp": "myapp.yaml"}
    sc["jobs"][1]["application"] = "myapp"
    (tmp / "s.yaml").write_text(yaml.safe_dump(sc))
    return ["info" if rng.random() < 0.5 else "solve", str(tmp / "s.yaml")]


def case_workload(rng, tmp: Path):
    rows = [r.split(",") for r in WORKLOAD_ROWS]
    header = WORKLOAD_HEADER.split(",")
    for _ in range(1 + int(rng.integers(2))):
        op = rng.integers(5)
        if op <= 1:
            row = rows[rng.integers(len(rows))]
            if row:
                row[rng.integers(len(row))] = str(JUNK[rng.integers(len(JUNK))])
        elif op == 2:
            rows[rng.integers(len(rows))].pop()
        elif op == 3:
            header[rng.integers(5)] = ["nmae", "arrival", "", "num_replicas"][rng.integers(4)]
        else:
            rows.append(list(rows[rng.integers(len(rows))]))
    data = ("\n".join([",".join(header)] + [",".join(r) for r in rows]) + "\n").encode("utf-8")
    (tmp / "w.csv").write_bytes(mutate_bytes(data, rng) if rng.random() < 0.2 else data)
    return ["simulate", str(tmp / "w.csv"), "--policy", ["fifo", "tiresias"][rng.integers(2)], "--truth", "model",
            "--nodes", "2", "--out", str(tmp / "out"), "--quiet", "--json"]


def case_allocation(rng, tmp: Path):
    (tmp / "a.yaml").write_bytes(_text(mutate_tree(ALLOCATION, rng, 1 + int(rng.integers(2))), rng))
    return ["evaluate", "small-2node", "--allocation", str(tmp / "a.yaml"), "--json"]


def case_spec(rng, tmp: Path):
    tree = SOLVE_SPEC if rng.random() < 0.5 else SIM_SPEC
    (tmp / "spec.yaml").write_bytes(_text(mutate_tree(tree, rng, 1 + int(rng.integers(2))), rng))
    return ["sweep", str(tmp / "spec.yaml"), "--dry-run", "--out", str(tmp / "t.csv")]


def case_argv(rng, tmp: Path):
    n = 1 + int(rng.integers(7))
    argv = [ARG_TOKENS[i] for i in rng.integers(len(ARG_TOKENS), size=n)]
    argv = [str(tmp / "out") if a == "--out" else a for a in argv]
    if argv[0] in ("sweep", "fit"):  # keep the slow commands to checks
        argv = ["sweep", str(tmp / "missing.yaml"), *argv[1:], "--dry-run"]
    if argv[0] == "simulate":
        argv += ["--dry-run"]
    if argv[0] == "compare":
        argv += ["--methods", "greedy", "--out", str(tmp / "c.csv"), "--quiet"]
    return argv


#: Values an option may take besides :data:`JUNK`: mappings of every shape, nested and flat.
MAPPING_JUNK = [{"a": {"b": 1}}, {"weight": "x"}, {"x": [1, 2]}, {"presolve": [1]}, {1: 2}, {"second_stage": 3},
                {"tolerance": -1}, {"max_lps": 2.5}, {"e": {"weight": 0}}, {"e": 3}, {"e": {"policy": "lifo"}},
                "1e-6", "2e3", 1e-6, 2e3, "1.5e3"]


def _yaml_value(value) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True)
    return text.removesuffix("\n...\n").strip()


def _option_names(rng) -> tuple[str, str, list[str]]:
    """A method, policy or auto-scaler, one of its option names (or a misspelt one) and its other names."""
    from goodopt.solvers.api import METHOD_OPTIONS

    from goodopt.sim.autoscale import AUTOSCALERS
    from goodopt.sim.policies import POLICIES

    kind = ["method", "policy", "autoscaler"][rng.integers(3)]
    if kind == "method":
        name = sorted(METHOD_OPTIONS)[rng.integers(len(METHOD_OPTIONS))]
        names = list(METHOD_OPTIONS[name])
    elif kind == "policy":
        import inspect

        name = sorted(POLICIES)[rng.integers(len(POLICIES))]
        names = [p for k in POLICIES[name].__mro__ if "__init__" in vars(k)
                 for p in inspect.signature(k.__init__).parameters if p not in ("self", "kw", "args", "kwargs")]
    else:
        name = sorted(AUTOSCALERS)[rng.integers(len(AUTOSCALERS))]
        names = list(AUTOSCALERS[name].Options.names())
    return kind, name, names + ["nosuch"]


def case_options(rng, tmp: Path):
    """One option of a method, policy or auto-scaler set to a drawn value (mappings included)."""
    kind, name, names = _option_names(rng)
    key = names[rng.integers(len(names))]
    pool = JUNK + MAPPING_JUNK
    value = _yaml_value(pool[rng.integers(len(pool))])
    if kind == "method":
        return ["solve", "sia-default" if name == "gavel" else "small-2node", "--method", name, "--option",
                f"{key}={value}", "--time-limit", "5", "--json"]
    if kind == "policy":
        return ["simulate", "generated:0.1:0:0.3", "--policy", name, "--option", f"{name}.{key}={value}",
                "--nodes", "2", "--truth", "model", "--dry-run", "--out", str(tmp / "out")]
    return ["simulate", "generated:0.1:0:0.3", "--policy", "greedy", "--autoscale", name, "--autoscale-option",
            f"{key}={value}", "--nodes", "2", "--truth", "model", "--dry-run", "--out", str(tmp / "out")]


#: Sweep names a user might write, paths and odd text among them.
NAMES = ["../../escaped", "/tmp/goodopt-fuzz-absolute", "", " ", ".hidden", "a/b", "a\\b", "ok-name", "x" * 300,
         "a\x00b", "\u00e9t\u00e9", "..", "-", "name with spaces", "tab\tname"]


def case_spec_name(rng, tmp: Path):
    """A runnable sweep whose ``name`` is drawn; it must write beside the spec or be refused."""
    pool = NAMES + JUNK
    (tmp / "deep").mkdir()
    spec = tmp / "deep" / "spec.yaml"
    spec.write_bytes(_dump({"name": pool[rng.integers(len(pool))], "kind": "solve", "scenarios": ["small-2node"],
                            "methods": ["greedy"]}))
    return ["sweep", str(spec), "--no-cache", "--workers", "1", "--quiet"]


PUBLISHED = ("pollux/published-results.csv", "sia/published-results.csv")


def case_published(rng, tmp: Path):
    """``reproduce`` on a traces folder whose published files are damaged (and whose workloads are absent)."""
    from goodopt.traces import traces_dir

    try:
        source = traces_dir()
    except Exception:  # noqa: BLE001 -- no traces here: a folder of made-up files
        source = None
    for rel in PUBLISHED:
        data = (source / rel).read_bytes() if source is not None and (source / rel).is_file() else b"a,b\n1,2\n"
        (tmp / "traces" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "traces" / rel).write_bytes(mutate_bytes(data, rng) if rng.random() < 0.8 else data)
    which = ["pollux-fig8", "sia-table3"][rng.integers(2)]
    return ["reproduce", which, "--quick", "--traces", str(tmp / "traces"), "--out", str(tmp / "out"), "--quiet"]


# ------------------------------------------------------------------ plug-ins that misbehave
#: What a fuzzed plug-in method hands back: allocations of every kind (whole, fractional, negative, over a
#: node's capacity, of the wrong shape, not numbers), any status, any bound; or it raises, or returns no outcome.
PLUGIN_ALLOCS = ["whole", "half", "negative", "over", "wide", "flat", "none", "text", "nan", "ragged"]
PLUGIN_STATUSES = ["optimal", "gap_limit", "completed", "time_limit", "infeasible", "unbounded", "numerical",
                   "error", "splendid", None, 3]
PLUGIN_BOUNDS = [float("nan"), float("inf"), -float("inf"), -1.0, 0.0, 1e-9, 0.5, 0.754, 1.0, 1e9, "x", None]
_PLUGIN: dict = {}


def _plugin_alloc(pr, kind):
    x = np.zeros((pr.n_jobs, pr.n_nodes), np.int64)
    x[np.arange(min(4, pr.n_jobs)), 0] = 1
    return {"whole": x, "half": x * 0.5, "negative": -x, "over": x * 20, "wide": np.zeros((pr.n_jobs, 7)),
            "flat": x.ravel(), "none": None, "text": "all", "nan": x * np.nan, "ragged": [[1], [1, 2]]}[kind]


def _plugin_run(pr, ev, opts, t0):
    from goodopt.solvers.result import MethodOutcome, Termination

    b = _PLUGIN
    if b["raises"]:
        raise b["raises"]("the plug-in's bug")
    if b["no_outcome"]:
        return {"alloc": None}
    status = Termination(b["status"]) if b["status"] in {t.value for t in Termination} else b["status"]
    return MethodOutcome(alloc=_plugin_alloc(pr, b["alloc"]), status=status, bound=b["bound"])


def _plugin_policy_allocate(self, state):
    b = _PLUGIN
    if b["raises"]:
        raise b["raises"]("the plug-in's bug")
    x = np.zeros((state.n_jobs, state.cluster.n_nodes), np.int64)
    return {"whole": x, "half": x + 0.5, "negative": x - 1, "over": x + 99, "wide": np.zeros((state.n_jobs, 99)),
            "flat": x.ravel(), "none": None, "text": "all", "nan": x * np.nan, "ragged": [[1], [1, 2]]}[b["alloc"]]


def _register_plugins() -> None:
    from dataclasses import dataclass
    from typing import ClassVar

    from goodopt.solvers.api import REGISTRY, Method, register_method
    from goodopt.solvers.options import MethodOptions

    from goodopt.sim.policies import Policy
    from goodopt.sim.policies.registry import POLICIES, register_policy

    if "fz-plugin" in REGISTRY:
        return

    @dataclass(frozen=True, kw_only=True)
    class FuzzOptions(MethodOptions):
        method: ClassVar[str] = "fz-plugin"

    register_method("fz-plugin", Method(FuzzOptions, _plugin_run))
    if "fz-policy" not in POLICIES:
        register_policy("fz-policy", type("FuzzPolicy", (Policy,), {"name": "fz-policy",
                                                                   "allocate": _plugin_policy_allocate}))


def case_plugin(rng, tmp: Path):
    """A plug-in method or policy that returns a drawn answer or raises; the answer goodopt shows must be
    judged (see :func:`check_plugin_answer`)."""
    _register_plugins()
    raises = [None, None, None, ZeroDivisionError, KeyError, MemoryError, RuntimeError][rng.integers(7)]
    _PLUGIN.update(raises=raises, no_outcome=rng.random() < 0.1,
                   alloc=PLUGIN_ALLOCS[rng.integers(len(PLUGIN_ALLOCS))],
                   status=PLUGIN_STATUSES[rng.integers(len(PLUGIN_STATUSES))],
                   bound=PLUGIN_BOUNDS[rng.integers(len(PLUGIN_BOUNDS))])
    which = rng.integers(3)
    if which == 0:
        return ["solve", "small-2node", "--method", "fz-plugin", "--json"], check_plugin_answer
    if which == 1:
        return ["compare", "small-2node", "--methods", "fz-plugin,greedy", "--out", str(tmp / "c.csv"), "--quiet"]
    return ["simulate", "generated:0.1:0:0.3", "--policy", "fz-policy", "--truth", "model", "--nodes", "2",
            "--out", str(tmp / "sim"), "--quiet"]


def check_plugin_answer(stdout: str) -> str:
    """What is wrong with a solve's JSON answer ("" when nothing): an unjudged status or bound."""
    if not stdout.strip():
        return ""
    out = json.loads(stdout)
    status, fit, bound, gap = out["status"], out["fitness"], out["bound"], out["gap"]
    if status in ("optimal", "gap_limit") and (bound is None or gap is None or gap > 1e-6 or not out["feasible"]):
        return f"{status} with bound {bound}, gap {gap}, feasible {out['feasible']}"
    if bound is not None and fit is not None and fit > bound * (1 + 1e-6) + 1e-9:
        return f"bound {bound} below the fitness {fit}"
    if out["has_solution"] and not out["feasible"] and status != "infeasible":
        return f"an infeasible allocation reported as {status}"
    return ""


# ------------------------------------------------------------------ journals planted in an output folder
def case_journal(rng, tmp: Path):
    """A sweep writing into a folder holding a planted, damaged or foreign commit journal; no file outside the
    folder may change (see the returned check)."""
    from goodopt.outputs import HOST

    home, out = tmp / "home", tmp / "results"
    home.mkdir(), out.mkdir()
    (home / "thesis.tex").write_text("mine")
    (home / "junk.txt").write_text("junk")
    dead = 2 ** 22 + int(rng.integers(1000))  # above any pid this machine hands out by default
    tmp_name = f".out.csv.goodopt-tmp-{HOST}-{dead}-0123abcd"
    (out / tmp_name).write_text("planted")
    pools = [[[str(home / "junk.txt"), str(home / "thesis.tex")]], [["a"]], {"a": 1}, "[[", "", [[1, 2]],
             [[str(out / tmp_name), str(out / "out.csv")]], [[str(out / tmp_name), str(home / "thesis.tex")]],
             [[str(out / tmp_name), str(out / ".." / "home" / "thesis.tex")]], [[tmp_name, "out.csv"]]]
    pairs = pools[rng.integers(len(pools))]
    text = pairs if isinstance(pairs, str) else json.dumps(pairs)
    (out / f".outputs.goodopt-commit-{HOST}-{dead}-0123abcd").write_text(text)
    spec = tmp / "s.yaml"
    spec.write_bytes(_dump({"name": "fz", "kind": "solve", "scenarios": ["small-2node"], "methods": ["greedy"]}))

    def untouched(_stdout: str) -> str:
        now = {p.name: p.read_text() for p in home.iterdir()}
        return "" if now == {"thesis.tex": "mine", "junk.txt": "junk"} else f"a file outside changed: {now}"

    return ["sweep", str(spec), "--out", str(out / "out.csv"), "--no-cache", "--quiet"], untouched


# ------------------------------------------------------------------ method options in a spec
SPEC_OPTIONS = [("solver", "asl:/bin/true"), ("solver", "cbc "), ("solver", "gurobi"), ("solver", 7),
                ("write_model", "../m.mps"), ("write_model", "/tmp/goodopt-fuzz.mps"), ("write_model", "x.txt"),
                ("highs_options", {"presolve": "sometimes"}), ("time_limit_s", 1e-9), ("warm_start", "ga"),
                ("mip_rel_gap", 0.5), ("node_limit", 1)]


def case_spec_options(rng, tmp: Path):
    """A sweep spec whose exact method carries a drawn option (the solver, a model file among them)."""
    key, value = SPEC_OPTIONS[rng.integers(len(SPEC_OPTIONS))]
    method = ["milp", "milp-pwl"][rng.integers(2)]
    spec = tmp / "s.yaml"
    spec.write_bytes(_dump({"name": "fz", "kind": "solve", "scenarios": ["small-2node"],
                            "methods": [{"method": method, "options": {key: value}}]}))

    def nothing_written_outside(_stdout: str) -> str:
        stray = [p for p in (tmp.parent / "m.mps", Path("/tmp/goodopt-fuzz.mps")) if p.exists()]
        return f"wrote {stray}" if stray else ""

    return ["sweep", str(spec), "--out", str(tmp / "o.csv"), "--no-cache", "--quiet"], nothing_written_outside


CASES = {"scenario": case_scenario, "profile": case_profile, "workload": case_workload,
         "allocation": case_allocation, "spec": case_spec, "argv": case_argv, "options": case_options,
         "spec_name": case_spec_name, "published": case_published, "plugin": case_plugin,
         "journal": case_journal, "spec_options": case_spec_options}


# ------------------------------------------------------------------ running
def run_case(argv, timeout_s: float, check=None) -> str:
    """The outcome of ``goodopt ARGV``: ``exit N``, ``hang``, ``traceback: TYPE`` or ``finding: WHAT`` (what
    ``check(stdout)`` found wrong with a clean exit's output)."""
    from goodopt.cli import main

    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    stdout = io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
            code = main(argv)
        outcome = f"exit {code}"
    except SystemExit as exc:
        outcome = f"exit {exc.code}"
    except _Timeout:
        return "hang"
    except Exception as exc:  # noqa: BLE001 -- the point: anything escaping is a finding
        return f"traceback: {type(exc).__name__}: {exc}"[:300] + "\n" + traceback.format_exc(limit=-3)[-800:]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    found = check(stdout.getvalue()) if check is not None else ""
    return f"traceback: finding: {found}" if found else outcome


def fuzz(n_cases: int, seed: int, timeout_s: float = 60.0, kinds=None) -> Report:
    """Run ``n_cases`` cases drawn with ``numpy.random.default_rng(seed)``, cycling through the kinds."""
    rng = np.random.default_rng(seed)
    kinds = list(kinds or CASES)
    report = Report()
    logging.disable(logging.CRITICAL)
    try:
        for i in range(n_cases):
            kind = kinds[i % len(kinds)]
            with tempfile.TemporaryDirectory() as tmp:
                drawn = CASES[kind](rng, Path(tmp))
                argv, check = drawn if isinstance(drawn, tuple) else (drawn, None)
                outcome = run_case(argv, timeout_s, check)
            report.cases += 1
            report.kinds[kind] += 1
            head = outcome.split("\n")[0]
            report.outcomes[head if head.startswith("exit") else head.split(":")[0]] += 1
            if outcome == "hang":
                report.hangs.append({"case": i, "kind": kind, "argv": argv})
            elif outcome.startswith("traceback"):
                report.tracebacks.append({"case": i, "kind": kind, "argv": argv, "error": outcome})
    finally:
        logging.disable(logging.NOTSET)
        _unregister_plugins()
    return report


def _unregister_plugins() -> None:
    """The fuzz's own plug-ins leave the registries with the fuzz (a test process goes on with goodopt's own)."""
    from goodopt.solvers.api import REGISTRY

    from goodopt.sim.policies.registry import POLICIES

    REGISTRY.pop("fz-plugin", None)
    POLICIES.pop("fz-policy", None)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per case before it counts as a hang")
    ap.add_argument("--kinds", nargs="*", default=None, choices=list(CASES))
    args = ap.parse_args(argv)
    rep = fuzz(args.cases, args.seed, args.timeout, args.kinds)
    json.dump({"cases": rep.cases, "kinds": dict(rep.kinds), "outcomes": dict(rep.outcomes),
               "tracebacks": rep.tracebacks, "hangs": rep.hangs}, sys.stdout, indent=1, default=str)
    print()
    return 1 if rep.tracebacks or rep.hangs else 0


if __name__ == "__main__":
    sys.exit(main())
