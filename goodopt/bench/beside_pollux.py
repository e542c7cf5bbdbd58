"""goodopt's simulator beside the Pollux artifact's, on the same workload, in the same run.

``make bench BENCH_ARGS="--only beside-pollux --pollux-artifact DIR --pollux-python PY"``: the Pollux policy on
one of the published workloads (default: load 1.0, workload 3), simulated

* by goodopt, as ``goodopt simulate WORKLOAD --policy pollux --seed 1`` runs it (Pollux's 16 x 4 T4, the
  trace ground truth of the traces folder, Pollux's simulator settings), in this process;
* by the Pollux artifact's own simulator (``simulator.py --policy pollux WORKLOAD`` in ``DIR``, the
  ``simulator/`` folder of the OSDI'21 artifact), as a child process of the interpreter ``PY``.

The artifact is not part of goodopt and nothing of it is copied here: the user brings a checkout and a Python
with its requirements (it asks for pymoo 0.4, which goodopt's environment does not hold). Its CPU seconds are
the child's (user + system, :func:`resource.getrusage`), goodopt's this process's; both include reading the
traces and starting up. Per simulator the table gives CPU seconds, simulated hours (to the last job's end),
their ratio, the average JCT each printed, and the artifact's CPU over goodopt's (above 1: goodopt is faster).
"""

from __future__ import annotations

import logging
import re
import resource
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import SimulationError, ValidationError
from ..records import Record
from ..traces import traces_dir

log = logging.getLogger(__name__)

#: The workload of the table, under the traces folder: the reference simulation the docs time (the Pollux policy
#: on load 1.0, workload 3).
WORKLOAD = Path("pollux") / "workloads" / "load-1.0" / "workload-3.csv"
#: Seconds the artifact's run may take (its README: up to 30 minutes for one workload on a slow CPU).
ARTIFACT_TIME_LIMIT_S = 4 * 3600.0
#: What the artifact prints after every round: the simulated time, then the average JCT of the jobs done so far.
_TIME = re.compile(r"SIMULATOR TIME: (\d+(?:\.\d*)?)")
_JCT = re.compile(r"Average JCT: (\S+)")


@dataclass(frozen=True)
class ArtifactRun:
    """What the artifact's simulator printed last, and what its run cost."""

    cpu_s: float
    wall_s: float
    simulated_s: float
    avg_jct_s: float
    n_rounds: int


def check_artifact(artifact: str | Path, python: str | Path | None) -> tuple[Path, Path]:
    """The artifact's folder (holding ``simulator.py``) and its interpreter, checked; errors name the option."""
    folder = Path(artifact).expanduser()
    if not (folder / "simulator.py").is_file():
        raise ValidationError("--pollux-artifact", f"{str(folder)!r} holds no simulator.py",
                              "point it at the simulator/ folder of the Pollux OSDI'21 artifact "
                              "(petuum/adaptdl, branch osdi21-artifact)")
    if python is None:
        raise ValidationError("--pollux-python", "no interpreter given for the artifact",
                              "give a Python that has the artifact's simulator/requirements.txt installed")
    exe = Path(python).expanduser()
    if not exe.is_file():
        raise ValidationError("--pollux-python", f"{str(exe)!r} is not a file",
                              "give the path of a Python interpreter, e.g. /path/to/venv/bin/python")
    return folder.resolve(), exe


def read_artifact_output(text: str) -> tuple[float, float, int]:
    """``(simulated seconds, average JCT, rounds)`` from the artifact's printed log: the last round's."""
    times, jcts = _TIME.findall(text), _JCT.findall(text)
    if not times or not jcts:
        raise SimulationError("the artifact's simulator printed no 'SIMULATOR TIME' or 'Average JCT' line: "
                              f"its output ends with {text[-300:]!r}")
    return float(times[-1]), float(jcts[-1]), len(times)


def run_artifact(artifact: Path, python: Path, workload: Path, *,
                 time_limit_s: float = ARTIFACT_TIME_LIMIT_S) -> ArtifactRun:
    """Run the artifact's Pollux policy on ``workload`` (a child process); its CPU from the child's usage."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        done = subprocess.run([str(python), "simulator.py", "--policy", "pollux", str(workload)], cwd=artifact,
                              capture_output=True, text=True, timeout=time_limit_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise SimulationError(f"the artifact's simulator did not finish within {time_limit_s:g} s") from exc
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SimulationError(f"the artifact's simulator exited with status {done.returncode}: "
                              f"{done.stderr.strip()[-500:]}")
    simulated, jct, rounds = read_artifact_output(done.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return ArtifactRun(cpu_s=cpu, wall_s=wall, simulated_s=simulated, avg_jct_s=jct, n_rounds=rounds)


def run_goodopt(workload: Path, traces: Path, seed: int = 1) -> Record:
    """goodopt's simulation of ``workload`` as ``goodopt simulate WORKLOAD --policy pollux --seed SEED`` runs it
    with the traces' ground truth: CPU and wall seconds of this process, simulated seconds, average JCT."""
    from ..runs.tasks import run_simulation, sim_task

    task = sim_task(str(workload), "pollux", "pollux-testbed", truth=str(traces), seed=seed)
    cpu, t0 = time.process_time(), time.perf_counter()
    res, _, _ = run_simulation(task)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - t0
    # the end of the last round, as the artifact's clock reads after its last step
    end = float(res.rounds["time_s"].max()) + float(task.config["interval_s"])
    return {"cpu_s": cpu, "wall_s": wall, "simulated_s": end,
            "avg_jct_s": float(res.summary["avg_jct"]), "n_rounds": int(res.summary["n_rounds"])}


def beside_table(artifact: str | Path, python: str | Path | None, *, traces: str | Path | None = None,
                 workload: str | Path | None = None, seed: int = 1) -> list[Record]:
    """Two rows, goodopt's and the artifact's, on the same workload; ``ratio_to_goodopt`` is each row's CPU
    per simulated hour over goodopt's."""
    folder, exe = check_artifact(artifact, python)
    root = traces_dir(traces)
    path = Path(workload) if workload is not None else root / WORKLOAD
    if not path.is_file():
        raise ValidationError("workload", f"{str(path)!r} is not a file", "give a workload CSV of the traces folder")
    log.info("goodopt's simulation of %s", path)
    ours = run_goodopt(path, root, seed)
    log.info("the artifact's simulation of %s (minutes)", path)
    art = run_artifact(folder, exe, path)
    rows = [{"simulator": "goodopt", **ours},
            {"simulator": "pollux artifact", "cpu_s": art.cpu_s, "wall_s": art.wall_s,
             "simulated_s": art.simulated_s, "avg_jct_s": art.avg_jct_s, "n_rounds": art.n_rounds}]
    for row in rows:
        row["workload"] = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        row["simulated_h"] = row["simulated_s"] / 3600.0
        row["cpu_s_per_sim_h"] = row["cpu_s"] / row["simulated_h"]
    for row in rows:
        row["ratio_to_goodopt"] = row["cpu_s_per_sim_h"] / rows[0]["cpu_s_per_sim_h"]
    return rows
