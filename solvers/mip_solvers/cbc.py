"""CBC (COIN-OR branch and cut, the program the ``cbcbox`` wheel carries), on the model as an MPS file.

The arrays are written as a minimisation MPS file (HiGHS writes it: the cost negated, columns ``x0..``) in a
private temporary folder, and CBC runs as a program on it, in a session of its own: the MPS file is the very
model an outside check would run. The program ends with goodopt (``PR_SET_PDEATHSIG``, even when goodopt is
killed), and a working folder a killed goodopt left is removed by the next CBC solve. OR-Tools bundles CBC libraries of its own, which clash with any other CBC
library in one process; a program shares nothing.

Parameters: ``-sec``, ``-maxNodes``, ``-ratioGap``, ``-allowableGap`` and ``-increment`` (the absolute gap, at
least 1e-12: CBC otherwise guesses one and prunes within it), ``-primalT`` and ``-integerT`` (the
feasibility tolerance), ``-threads`` (1 unless ``threads`` says more), ``-randomCbcSeed`` 0; a start is read
with ``-mips``; ``native`` adds ``-NAME VALUE`` pairs. Ctrl-C and the watch send CBC SIGINT (it stops and
writes its solution), then end it 1 s later if it has not (its answer is then lost). CBC prints its dual bound to 6 significant digits:
it is loosened by half a unit of the last digit printed. Status (the solution file's first words, ``Result -``
in the log): ``Optimal`` -> optimal; ``Stopped on time`` -> time_limit; ``Stopped on nodes``/``iterations``/
``solutions`` -> iteration_limit (``no integer solution``: no solution); ``Infeasible``/``Integer infeasible``
-> infeasible; ``Unbounded`` -> unbounded; any other end after the watch's stop -> time_limit; anything else
-> error.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from importlib.metadata import version as _dist_version
from pathlib import Path

import numpy as np
from goodopt.formulations.matrix import MatrixModel

from goodopt.arrays import Array

from ..result import Termination
from .base import Clock, Limits, Start, outcome, refused, start_pairs
from .highs_run import new_highs, pass_arrays
from .outcome import MilpOutcome
from .solver_watch import run_watched

log = logging.getLogger(__name__)

NAME = "cbc"
#: Linux's prctl option that sends a child a signal when its parent ends.
PR_SET_PDEATHSIG = 1
#: goodopt's limits (:class:`~.base.Limits`) -> this solver's parameters.
PARAMETERS = {"time_limit_s": "-sec", "node_limit": "-maxNodes", "mip_rel_gap": "-ratioGap",
              "mip_abs_gap": "-allowableGap", "feasibility_tol": "-primalT/-integerT", "threads": "-threads"}
#: Seconds CBC is given to stop after SIGINT before it is killed (its answer is then lost: no solution).
KILL_AFTER_S = 1.0
_STATUS = (("optimal", Termination.OPTIMAL), ("stopped on time", Termination.TIME_LIMIT),
           ("stopped on node", Termination.ITERATION_LIMIT), ("stopped on iteration", Termination.ITERATION_LIMIT),
           ("stopped on solution", Termination.ITERATION_LIMIT), ("integer infeasible", Termination.INFEASIBLE),
           ("infeasible", Termination.INFEASIBLE), ("unbounded", Termination.UNBOUNDED))


def program() -> str:
    import cbcbox

    path = cbcbox.cbc_bin_path
    return str(path() if callable(path) else path)


@functools.lru_cache(maxsize=1)
def version() -> str:
    out = subprocess.run([program(), "-quit"], capture_output=True, text=True, timeout=30, check=False).stdout
    found = re.search(r"CBC (.*?) —", out) or re.search(r"Version:\s*(\S+)", out)
    return f"CBC {found.group(1) if found else '?'} (cbcbox {_dist_version('cbcbox')})"


def write_mps(model: MatrixModel, path: Path) -> None:
    """The model as a minimisation MPS file (cost negated), columns named ``x0..``."""
    h = new_highs()
    A = model.A
    pass_arrays(h, cost=-model.cost, lower=model.lower, upper=model.upper, row_lower=model.row_lower,
                row_upper=model.row_upper, indptr=A.indptr, indices=A.indices, data=A.data,
                integer=model.integer.astype(np.int32), maximise=False)
    for j in range(model.n_columns):
        h.passColName(j, f"x{j}")
    for i in range(model.n_rows):
        h.passRowName(i, f"r{i}")
    h.writeModel(str(path))


def _arguments(limits: Limits, folder: Path, start: bool) -> list[str]:
    # the log stays at level 1, and is read for the bound and nodes (at level 0 this CBC solved only the root LP)
    args = ["-threads", str(limits.n_threads), "-randomCbcSeed", "0", "-log", "1"]
    if limits.time_limit_s is not None:
        args += ["-sec", f"{limits.time_limit_s:.6g}"]
    if limits.node_limit is not None:
        args += ["-maxNodes", str(int(limits.node_limit))]
    if limits.mip_rel_gap is not None:
        args += ["-ratioGap", repr(float(limits.mip_rel_gap))]
    if limits.mip_abs_gap is not None:
        args += ["-allowableGap", repr(float(limits.mip_abs_gap))]
    # CBC looks only for answers better than its incumbent by "increment", which it guesses when not given
    # (cut off 1.1e-6 of a fitness on a p = 0 round, the answer called optimal): the gap asked for, or next to none
    args += ["-increment", repr(increment(limits))]
    if limits.feasibility_tol is not None:
        args += ["-primalT", repr(float(limits.feasibility_tol)), "-integerT", repr(float(limits.feasibility_tol))]
    for key, value in limits.native.items():
        args += [f"-{key}", str(value)]
    if start:
        args += ["-mips", str(folder / "start.txt")]
    return args + ["-solve", "-solu", str(folder / "solution.txt")]


def increment(limits: Limits) -> float:
    """CBC's ``-increment``: the absolute gap asked for, at least 1e-12 (also added to an optimum's bound)."""
    return max(float(limits.mip_abs_gap or 0.0), 1e-12)


def _write_start(path: Path, start: Start, n: int) -> bool:
    pairs = start_pairs(start, n)
    if pairs is None:
        return False
    lines = [f"{j} x{j} {v!r}" for j, v in zip(pairs[0].tolist(), pairs[1].tolist())]
    path.write_text("Feasible - objective value 0\n" + "\n".join(lines) + "\n")
    return True


#: A working folder of this adapter's (``goodopt-cbc-PID-RANDOM``) and the files it may hold.
_FOLDER = re.compile(r"goodopt-cbc-(\d+)-[A-Za-z0-9_]+")
_FILES = {"model.mps", "start.txt", "solution.txt"}


def _remove_debris() -> None:
    """Remove working folders a killed goodopt left in the temporary folder: only folders named as this adapter
    names them, of a process that no longer runs, holding nothing but the files it writes (anything else is
    foreign and stays)."""
    base = Path(tempfile.gettempdir())
    for folder in base.glob("goodopt-cbc-*"):
        found = _FOLDER.fullmatch(folder.name)
        if found is None or folder.is_symlink() or not folder.is_dir() or _running(int(found.group(1))):
            continue
        entries = list(folder.iterdir())
        if all(e.name in _FILES and e.is_file() and not e.is_symlink() for e in entries):
            shutil.rmtree(folder, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _die_with_parent() -> None:
    """In the CBC child, before it runs (Linux): end with SIGKILL when goodopt ends, even by SIGKILL itself, so
    that no CBC program outlives the solve that started it (it runs in a session of its own, which the terminal's
    signals do not reach)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):  # not Linux: the watch and the time limit end it
        pass


def _kill_if_running(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()


def _run(args: list[str], limits: Limits) -> tuple[str, bool]:
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=_die_with_parent)

    def cancel() -> None:
        """SIGINT (CBC stops at its next check and writes its solution); the program is ended after
        :data:`KILL_AFTER_S` if it is still running (CBC checks seldom during its root: 5 s past a 1 s limit)."""
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            threading.Timer(KILL_AFTER_S, _kill_if_running, (proc,)).start()

    out, stopped = run_watched(lambda: proc.communicate()[0], cancel, limits.time_limit_s, solver="CBC")
    if limits.log:
        log.info("CBC:\n%s", out)
    return out, stopped


def solve(model: MatrixModel, limits: Limits, start: Start = None) -> tuple[MilpOutcome, Array | None]:
    clock = Clock()
    _remove_debris()
    with tempfile.TemporaryDirectory(prefix=f"goodopt-cbc-{os.getpid()}-") as tmp:
        folder = Path(tmp)
        write_mps(model, folder / "model.mps")
        has_start = _write_start(folder / "start.txt", start, model.n_columns)
        clock.built()
        try:
            log_text, stopped = _run([program(), str(folder / "model.mps"),
                                      *_arguments(limits, folder, has_start)], limits)
        except OSError as exc:
            return refused(model, NAME, "", f"the CBC program could not run: {exc}"), None
        solution = folder / "solution.txt"
        text = solution.read_text() if solution.exists() else ""
    return _read(model, text, log_text, stopped, clock, limits)


def _read(model: MatrixModel, text: str, log_text: str, stopped: bool, clock: Clock,
          limits: Limits) -> tuple[MilpOutcome, Array | None]:
    head = text.splitlines()[0].lower() if text else ""
    term = next((t for key, t in _STATUS if head.startswith(key)), Termination.ERROR)
    if stopped and term not in (Termination.OPTIMAL, Termination.INFEASIBLE, Termination.UNBOUNDED):
        term = Termination.TIME_LIMIT  # stopped by the watch (SIGINT, or killed: no solution file)
    x = None
    if term not in (Termination.INFEASIBLE, Termination.UNBOUNDED, Termination.ERROR) and "no integer" not in head \
            and text:
        x = np.zeros(model.n_columns)
        for line in text.splitlines()[1:]:
            parts = line.split()
            if len(parts) >= 3 and parts[0].lstrip("*").isdigit():
                x[int(parts[0].lstrip("*"))] = float(parts[2])
        x = np.where(model.integer, np.round(x), x)
    bound = _bound(log_text, term, x, model, limits)
    nodes = re.search(r"Enumerated nodes:\s*(\d+)", log_text)
    return outcome(termination=term, x=x, model=model, bound=bound, nodes=int(nodes.group(1)) if nodes else None,
                   solve_s=clock.solve_s, compile_s=clock.compile_s, raw=text.splitlines()[0] if text else
                   "no solution file", solver=NAME, version=version()), x


def _bound(log_text: str, term: Termination, x: Array | None, model: MatrixModel, limits: Limits) -> float:
    """The dual bound in the model's (maximised) units: when optimal, the optimum plus the gaps CBC was allowed to
    stop at; else CBC's printed lower bound of the minimisation loosened by half a unit of its last printed digit
    (NaN when it printed none)."""
    if term == Termination.OPTIMAL and x is not None:
        obj = float(model.cost @ x)
        return obj + max(limits.mip_abs_gap or 0.0, (limits.mip_rel_gap or 0.0) * abs(obj)) + increment(limits)
    found = re.search(r"Lower bound:\s*(\S+)", log_text)
    if found is None or term == Termination.INFEASIBLE:
        return float("nan")
    try:
        printed = float(found.group(1))
    except ValueError:
        return float("nan")
    digits = found.group(1).lstrip("-").split("e")[0]
    magnitude = abs(printed) if printed else 1.0
    exponent = int(np.floor(np.log10(magnitude)))
    significant = max(len(digits.replace(".", "").lstrip("0")), 1)
    return -printed + 0.5 * 10.0 ** (exponent - significant + 1)
