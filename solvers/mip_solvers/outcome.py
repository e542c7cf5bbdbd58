"""How one MILP or LP solve ended, whichever solver ran it (:class:`MilpOutcome`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..result import Termination


@dataclass(frozen=True, kw_only=True)
class MilpOutcome:
    """How one MILP solve ended (objective in the model's own sense and units); built by keyword."""

    termination: Termination
    has_solution: bool
    objective: float
    bound: float
    mip_gap: float
    nodes: int | None
    solve_s: float
    compile_s: float
    raw_status: str
    solver: str
    solver_version: str
    n_variables: int
    n_constraints: int
    #: Simplex, interior-point and crossover iterations of the run as the solver counts them (for HiGHS, the
    #: LPs of a MIP's search too): a measure of its work that the machine's load does not move (the same
    #: solver on the same model counts the same); None when the solver gives none.
    lp_iterations: int | None = None

    @classmethod
    def without_solve(cls, termination: Termination, raw_status: str, *, solver: str = "none", solver_version: str = "",
                      compile_s: float = 0.0, n_variables: int = 0, n_constraints: int = 0) -> MilpOutcome:
        """An outcome where no model was solved (refused, skipped, or settled without a solver)."""
        nan = float("nan")
        return cls(termination=termination, has_solution=False, objective=nan, bound=nan, mip_gap=float("inf"),
                   nodes=None, solve_s=0.0, compile_s=compile_s, raw_status=raw_status, solver=solver,
                   solver_version=solver_version, n_variables=n_variables, n_constraints=n_constraints)
