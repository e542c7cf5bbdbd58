r"""Exact goodput allocation as a mixed-integer linear program (pyomo).

Data: jobs ``j``, nodes ``n`` with GPU type ``g(n)`` and capacity ``cap_n``,
the configurations ``c ∈ C_j`` of :mod:`goodopt.formulations.configs` (type
``g_c``, GPU count ``k_c``, multi-node flag ``m_c``, keep flag, speedup
``S_c``), weights ``w_j``, ``eps``, fairness exponent ``p``. ``C_j^multi`` are
the multi-node configurations, ``N_j`` the nodes of the types in ``C_j``,
``cur`` the current allocation and ``keep_j`` the keep configuration.

Variables::

    z_c  ∈ {0, 1}            configuration c is chosen
    x_jn ∈ {0, ..., cap_n}   GPUs of job j on node n ∈ N_j        (placement level)
    u_jn ∈ {0, 1}            job j uses node n                    (placement level)
    v_jn ∈ {0, 1}            job j is multi-node and uses node n  (placement level,
                                                                   interference avoidance)

Objective (linear in z)::

    p finite: maximise  Σ_c a_c z_c + Σ_j a_j^0 u_j
              with  u_j = 1 - Σ_{c ∈ C_j} z_c,  0 <= u_j <= 1          ∀ j   (0c)
                    z_c = 0   for c pruned by the incumbent              (0d)
                    u_j = 0   for j whose idle term is pruned            (0e)
    p = -inf: maximise  t   with  t <= eps + Σ_{c ∈ C_j} S_c z_c            ∀ j   (0a)
    p = +inf: maximise  t   with  t <= eps + Σ_{c ∈ C_j} S_c z_c
                                        + S_max (1 - y_j)                ∀ j   (0b)
                                  Σ_j y_j = 1,  y_j ∈ {0, 1}

``a_c = w_j bc_p((S_c + eps) / r)`` and ``a_j^0 = w_j bc_p(e0 / r)`` are the
Box-Cox terms of :mod:`goodopt.formulations.scaled_objective` for a reference
fitness ``r`` (``bc_p(x) = (x^p - 1) / p``, ``log x`` at p = 0): they order
allocations exactly as ``Σ_j w_j (S_j + eps)^p`` does (in its sense) but stay
in floating-point range at any p, and (0d)/(0e) drop options whose single
term is worse than a known allocation's whole objective. ``e0`` is the idle
value: ``eps``, or ``h^{-1}(λ)`` with Sia's idle penalty ``λ``
(:attr:`goodopt.scenario.Objective.idle_penalty`). A job with no
configuration chosen holds no GPUs and contributes ``a_j^0`` (p finite) or
``eps`` to the minimum (p = -inf) — exactly the evaluator's ``(0 + eps)^p``.
The fitness of a model value ``V`` is ``F = r (1 + p V / W)^(1/p)``
(``r exp(V / W)`` at p = 0; :meth:`ScaledObjective.fitness`).

Constraints, placement level::

    (1)  Σ_{c ∈ C_j} z_c <= 1                                   ∀ j
    (2)  Σ_{n ∈ N_j, g(n) = g} x_jn = Σ_{c ∈ C_j, g_c = g} k_c z_c  ∀ j, g
    (3)  x_jn <= cap_n u_jn                                      ∀ j, n ∈ N_j
    (4)  u_jn <= x_jn                                            ∀ j, n ∈ N_j
    (5)  Σ_n u_jn <= 1 + (|N_j| - 1) Σ_{c ∈ C_j^multi} z_c       ∀ j
    (6)  Σ_n u_jn >= 2 Σ_{c ∈ C_j^multi} z_c                     ∀ j
    (7)  Σ_j x_jn <= cap_n                                       ∀ n
    (8)  x_jn >= cur_jn z_{keep_j}                               ∀ j with a keep config, n
    (9)  v_jn >= u_jn + Σ_{c ∈ C_j^multi} z_c - 1,  Σ_j v_jn <= 1   ∀ n  (interference avoidance)
    (10) Σ_j x_jn >= Σ_j x_jn'   for consecutive interchangeable nodes n, n'
         (same type, capacity and current column; symmetry breaking, optional)

(2) with (1) makes a job's GPUs sum to its configuration's count on that type
and nothing elsewhere; (3)-(6) make the node count match single/multi; (8)
with (2) pins a kept job to its current row exactly. Within the GPU limits
and batch validity encoded in ``C_j`` these are exactly the evaluator's
feasibility rules.

Constraints, configuration level (the relaxation; no x, u, v)::

    (1)  as above
    (R2) Σ_{c: g_c = g} k_c z_c <= Σ_{n: g(n) = g} cap_n         ∀ g
    (R3) Σ_{c multi, g_c = g} ν_c z_c <= |{n: g(n) = g}|  ∀ g
         (only with interference avoidance: each node hosts at most one multi-node job;
         ν_c = max(2, ceil(k_c / cap_g^max)) for a move, the nodes of the current row for a keep)
    (R4) Σ_{c single-node, g_c = g} f(k_c) z_c <= |{n: g(n) = g}|   ∀ g with one node size C,
         ∀ dual-feasible f with f(C) = 1 (:func:`dual_feasible_functions`)

(R4) are bin-packing cuts: the single-node jobs of one node sum to at most C
GPUs, so their f-values sum to at most 1 (dropping multi-node parts keeps the
inequality valid, f >= 0). E.g. on 4-GPU nodes ``f(3) = 1, f(2) = 1/2``
forbids two 3-GPU and nine 2-GPU jobs on six nodes, which R2 allows.

Every placement-level solution maps to a configuration-level one with the same
objective, so the configuration level's optimum (and bound) bounds the
placement level's from the right side.

Placement cuts (configuration level, added lazily)::

    (C1) Σ_{c ∈ S_g} z_c <= |S_g| - 1    for a set S_g of configurations of GPU type g
                                         that the placement level proved unplaceable together

Jobs on different GPU types share no node, so placeability is decided per
type; a cut removes only choices that contain an unplaceable set, hence no
placeable solution. The first configuration optimum that places is therefore
the placement level's optimum.

Two routes, one reference. This pyomo model is the reference: every row the
solvers use is written above. The default route passes the configuration
level to HiGHS as arrays instead (:mod:`goodopt.formulations.config_matrix`,
the same rows constraint for constraint) and may add, per GPU type, the exact
node-pattern rows of :mod:`goodopt.formulations.pattern_block` (written out in
that module's docstring), which replace lazy (C1) cuts by a placement model of
the whole type; they exist on the arrays route only. ``model_route: pyomo``
solves this model instead. Both routes are checked against brute force over
the whole range of p (``tests/test_fullrange.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from goodopt.arrays import Array, ArrayIn
from goodopt.errors import ValidationError
from goodopt.lazy_import import LazyModule
from goodopt.problem import AllocationProblem

from .config_matrix import dual_feasible_functions, multi_node_need
from .configs import ConfigSet, choice_from_values, match_configs, rounded_from_values, type_layout
from .scaled_objective import ScaledObjective, reference_fitness, scaled_objective

if TYPE_CHECKING:
    import pyomo.environ as pyo
    from pyomo.common.collections import ComponentMap
else:  # imported at the first model built (goodopt.lazy_import): the array route never needs it
    pyo = LazyModule("pyomo.environ")

LEVELS = ("placement", "config")
SYMMETRY = ("order", "none")


def constraint(relation: Any) -> Any:  # Any: a pyomo relation (pyomo ships no type stubs)
    """``relation`` or ``Constraint.Skip`` when it holds no variables (e.g. an empty sum)."""
    return pyo.Constraint.Skip if isinstance(relation, bool) else relation


def build_model(problem: AllocationProblem, configs: ConfigSet, *, level: str = "placement", symmetry: str = "order",
                fixed_choice: ArrayIn | None = None, objective: ScaledObjective | None = None) -> pyo.ConcreteModel:
    """The MILP of the module docstring as a pyomo model (a pure function).

    ``fixed_choice`` (J,) of config indices (-1 = none) fixes z, turning the
    placement level into a feasibility check of that choice. ``objective``
    gives the finite-p coefficients (:mod:`goodopt.formulations.scaled_objective`);
    by default they are scaled to :func:`reference_fitness` without pruning.

    The model carries ``_goodopt`` metadata: its level and sizes.
    """
    if level not in LEVELS:
        raise ValidationError("level", f"must be one of {LEVELS}, got {level!r}")
    if symmetry not in SYMMETRY:
        raise ValidationError("symmetry", f"must be one of {SYMMETRY}, got {symmetry!r}")
    pr, cs = problem, configs
    J, C = pr.n_jobs, cs.n_configs
    m = pyo.ConcreteModel(name=f"goodput-{level}")
    m.z = pyo.Var(range(C), domain=pyo.Binary)
    z = m.z
    by_job = [range(int(cs.job_start[j]), int(cs.job_start[j + 1])) for j in range(J)]
    m.one_config = pyo.Constraint(
        [j for j in range(J) if len(by_job[j]) > 1],
        rule=lambda m, j: sum(z[c] for c in by_job[j]) <= 1)  # (1)

    if np.isfinite(pr.p) and objective is None:
        objective = scaled_objective(pr, cs, reference_fitness(pr, cs))
    _objective(m, pr, cs, by_job, objective)

    if fixed_choice is not None:
        fixed_choice = np.asarray(fixed_choice)
        for c in range(C):
            z[c].fix(1 if fixed_choice[cs.job[c]] == c else 0)

    if level == "config":
        _config_constraints(m, pr, cs)
    else:
        _placement_constraints(m, pr, cs, by_job, symmetry)
    m._goodopt = {"level": level, "n_jobs": J, "n_configs": C}
    return m


def _objective(m: pyo.ConcreteModel, pr: AllocationProblem, cs: ConfigSet, by_job: Sequence[Sequence[int]],
               objective: ScaledObjective | None) -> None:
    z = m.z
    p = pr.p
    if np.isfinite(p):
        if objective is None:
            raise ValidationError("objective", "a finite p needs the scaled objective", "pass objective=...")
        coef, idle = objective.coef.tolist(), objective.idle.tolist()
        m.idle_u = pyo.Var(range(pr.n_jobs), bounds=(0, 1))  # u_j: idle (integral through z)
        m.idle_job = pyo.Constraint(range(pr.n_jobs),
                                    rule=lambda m, j: m.idle_u[j] + sum(z[c] for c in by_job[j]) == 1)  # (0c)
        for c in np.flatnonzero(objective.forbidden).tolist():  # (0d)
            z[c].fix(0)
        for j in np.flatnonzero(objective.must_run).tolist():  # (0e)
            m.idle_u[j].setub(0)
        expr = (sum(coef[c] * z[c] for c in range(cs.n_configs) if coef[c] != 0)
                + sum(idle[j] * m.idle_u[j] for j in range(pr.n_jobs) if idle[j] != 0))
        m.obj = pyo.Objective(expr=expr, sense=pyo.maximize)
        m._goodopt_objective = objective
        return
    s = cs.speedup.tolist()
    m.t = pyo.Var(domain=pyo.Reals, bounds=(pr.eps, pr.eps + max(s, default=0.0)))
    if p < 0:  # (0a)
        m.epigraph = pyo.Constraint(range(pr.n_jobs), rule=lambda m, j: m.t <= pr.eps + sum(s[c] * z[c] for c in by_job[j]))
    else:  # (0b)
        big = max(s, default=0.0)
        m.y = pyo.Var(range(pr.n_jobs), domain=pyo.Binary)
        m.pick_one = pyo.Constraint(expr=sum(m.y[j] for j in range(pr.n_jobs)) == 1)
        m.epigraph = pyo.Constraint(
            range(pr.n_jobs),
            rule=lambda m, j: m.t <= pr.eps + sum(s[c] * z[c] for c in by_job[j]) + big * (1 - m.y[j]))
    m.obj = pyo.Objective(expr=m.t, sense=pyo.maximize)


def _config_constraints(m: pyo.ConcreteModel, pr: AllocationProblem, cs: ConfigSet) -> None:
    total, n_nodes, largest = type_layout(pr)
    z = m.z
    G = pr.n_gpu_types
    k = cs.n_gpus.tolist()
    of_type = [np.flatnonzero(cs.gpu_type == g).tolist() for g in range(G)]
    m.type_capacity = pyo.Constraint(
        [g for g in range(G) if of_type[g]],
        rule=lambda m, g: sum(k[c] * z[c] for c in of_type[g]) <= int(total[g]))  # (R2)
    if pr.interference_avoidance:
        need_arr = np.zeros(cs.n_configs, np.int64)
        need_arr[cs.multi] = multi_node_need(pr, cs, np.flatnonzero(cs.multi), largest)
        need = need_arr.tolist()
        multi = [[c for c in of_type[g] if cs.multi[c]] for g in range(G)]
        m.multi_nodes = pyo.Constraint(
            [g for g in range(G) if multi[g]],
            rule=lambda m, g: sum(need[c] * z[c] for c in multi[g]) <= int(n_nodes[g]))  # (R3)
    rows = []
    for g in range(G):
        caps = np.unique(pr.node_capacity[pr.node_type == g])
        single = [c for c in of_type[g] if not cs.multi[c]]
        if len(caps) != 1 or not single:
            continue
        for f in dual_feasible_functions(int(caps[0])):
            coef = f[np.asarray(k)[single]]
            if np.any(coef > 0):
                rows.append((g, tuple(single), tuple(coef.tolist())))
    if rows:
        m.packing = pyo.Constraint(range(len(rows)), rule=lambda m, r: sum(
            a * z[c] for c, a in zip(rows[r][1], rows[r][2]) if a > 0) <= int(n_nodes[rows[r][0]]))  # (R4)


def _placement_constraints(m: pyo.ConcreteModel, pr: AllocationProblem, cs: ConfigSet, by_job: Sequence[Sequence[int]],
                           symmetry: str) -> None:
    z = m.z
    J = pr.n_jobs
    cap = pr.node_capacity.tolist()
    k = cs.n_gpus.tolist()
    # nodes a job may use: those of the types of its configurations
    job_types = [sorted({int(cs.gpu_type[c]) for c in by_job[j]}) for j in range(J)]
    nodes_of_type = [np.flatnonzero(pr.node_type == g).tolist() for g in range(pr.n_gpu_types)]
    pairs = [(j, n) for j in range(J) for g in job_types[j] for n in nodes_of_type[g]]
    nodes_of_job = [[n for g in job_types[j] for n in nodes_of_type[g]] for j in range(J)]
    jobs_on_node: list[list[int]] = [[] for _ in range(pr.n_nodes)]
    for j, n in pairs:
        jobs_on_node[n].append(j)
    m.x = pyo.Var(pairs, domain=pyo.NonNegativeIntegers, bounds=lambda m, j, n: (0, cap[n]))
    m.u = pyo.Var(pairs, domain=pyo.Binary)
    x, u = m.x, m.u
    multi_of = [[c for c in by_job[j] if cs.multi[c]] for j in range(J)]

    def multi_sum(j: int) -> Any:  # Any: a pyomo expression (pyomo ships no type stubs)
        return sum(z[c] for c in multi_of[j])

    jg = [(j, g) for j in range(J) for g in job_types[j]]
    m.link = pyo.Constraint(jg, rule=lambda m, j, g: sum(x[j, n] for n in nodes_of_type[g])
                            == sum(k[c] * z[c] for c in by_job[j] if cs.gpu_type[c] == g))  # (2)
    m.use_upper = pyo.Constraint(pairs, rule=lambda m, j, n: x[j, n] <= cap[n] * u[j, n])  # (3)
    m.use_lower = pyo.Constraint(pairs, rule=lambda m, j, n: u[j, n] <= x[j, n])  # (4)
    active = [j for j in range(J) if nodes_of_job[j]]
    m.single_node = pyo.Constraint(
        active, rule=lambda m, j: sum(u[j, n] for n in nodes_of_job[j])
        <= 1 + (len(nodes_of_job[j]) - 1) * multi_sum(j))  # (5)
    with_multi = [j for j in active if multi_of[j]]
    m.multi_node = pyo.Constraint(
        with_multi, rule=lambda m, j: sum(u[j, n] for n in nodes_of_job[j]) >= 2 * multi_sum(j))  # (6)
    m.capacity = pyo.Constraint(
        [n for n in range(pr.n_nodes) if jobs_on_node[n]],
        rule=lambda m, n: sum(x[j, n] for j in jobs_on_node[n]) <= cap[n])  # (7)
    keep_pairs = [(j, n) for j in range(J) if cs.keep_of_job[j] >= 0
                  for n in np.flatnonzero(pr.current[j]).tolist()]
    m.keep = pyo.Constraint(keep_pairs, rule=lambda m, j, n: x[j, n]
                            >= int(pr.current[j, n]) * z[int(cs.keep_of_job[j])])  # (8)
    if pr.interference_avoidance and with_multi:
        vpairs = [(j, n) for j in with_multi for n in nodes_of_job[j]]
        m.v = pyo.Var(vpairs, domain=pyo.Binary)  # whole: (9) holds at v = max(0, u + z - 1) as well
        m.multi_use = pyo.Constraint(vpairs, rule=lambda m, j, n: m.v[j, n] >= u[j, n] + multi_sum(j) - 1)  # (9)
        multi_on_node: list[list[int]] = [[] for _ in range(pr.n_nodes)]
        for j, n in vpairs:
            multi_on_node[n].append(j)
        m.one_multi = pyo.Constraint(
            [n for n in range(pr.n_nodes) if len(multi_on_node[n]) > 1],
            rule=lambda m, n: sum(m.v[j, n] for j in multi_on_node[n]) <= 1)  # (9)
    if symmetry == "order":
        chains = interchangeable_nodes(pr)
        ordered = [(a, b) for chain in chains for a, b in zip(chain[:-1], chain[1:])
                   if jobs_on_node[a] and jobs_on_node[a] == jobs_on_node[b]]
        m.symmetry = pyo.Constraint(
            ordered, rule=lambda m, a, b: sum(x[j, a] for j in jobs_on_node[a])
            >= sum(x[j, b] for j in jobs_on_node[b]))  # (10)


def interchangeable_nodes(problem: AllocationProblem) -> list[list[int]]:
    """Classes (size >= 2) of nodes with equal type, capacity and current column."""
    pr = problem
    key = np.concatenate([pr.node_type[None, :], pr.node_capacity[None, :], pr.current], axis=0).T
    _, inverse = np.unique(key, axis=0, return_inverse=True)
    classes = [np.flatnonzero(inverse == i).tolist() for i in range(inverse.max() + 1)] if len(key) else []
    return [c for c in classes if len(c) > 1]


# ------------------------------------------------------------------ decoding
def chosen_configs(model: pyo.ConcreteModel, configs: ConfigSet, n_jobs: int) -> Array:
    """Config index chosen per job (-1 = none) from solved z. Shapes: -> (J,)."""
    return choice_from_values(configs, n_jobs, np.array([model.z[c].value or 0.0 for c in range(configs.n_configs)]))


def rounded_choice(model: pyo.ConcreteModel, configs: ConfigSet, n_jobs: int) -> Array:
    """Per job the configuration with the largest LP value (-1 if all are ~0). Shapes: -> (J,)."""
    return rounded_from_values(configs, n_jobs, np.array([model.z[c].value or 0.0 for c in range(configs.n_configs)]))


def placement_allocation(model: pyo.ConcreteModel, problem: AllocationProblem) -> Array:
    """The (J, N) allocation of a solved placement-level model."""
    alloc = np.zeros((problem.n_jobs, problem.n_nodes), dtype=np.int64)
    for (j, n), var in model.x.items():
        if var.value is not None:
            alloc[j, n] = int(round(var.value))
    return alloc


def warm_start_values(model: pyo.ConcreteModel, problem: AllocationProblem, configs: ConfigSet, alloc: ArrayIn) -> ComponentMap:
    """Variable values (a pyomo ``ComponentMap`` var -> value) encoding ``alloc`` for a warm start.

    Rows that match no configuration (e.g. infeasible ones) are left at zero.
    """
    pr, cs = problem, configs
    alloc = np.asarray(alloc)
    chosen = match_configs(pr, cs, alloc)
    from pyomo.common.collections import ComponentMap

    values = ComponentMap((model.z[c], 0) for c in range(cs.n_configs))
    for c in chosen[chosen >= 0]:
        values[model.z[int(c)]] = 1
    placed = chosen >= 0
    if hasattr(model, "t"):  # epigraph variable (p = +-inf): the value the chosen configurations give
        s = pr.eps + np.where(placed, cs.speedup[np.maximum(chosen, 0)], 0.0)
        if hasattr(model, "y"):
            best = int(np.argmax(s))
            for j in range(pr.n_jobs):
                values[model.y[j]] = int(j == best)
            values[model.t] = float(s.max())
        else:
            values[model.t] = float(s.min())
    if hasattr(model, "x"):
        mult: dict[int, int] = {}
        for (j, n), var in model.x.items():
            val = int(alloc[j, n]) if placed[j] else 0
            values[var] = val
            values[model.u[j, n]] = int(val > 0)
            mult[j] = mult.get(j, 0) + int(val > 0)
        if hasattr(model, "v"):
            for (j, n), var in model.v.items():
                values[var] = int(placed[j] and alloc[j, n] > 0 and mult.get(j, 0) > 1)
    return values


def exclude_choice(model: pyo.ConcreteModel, config_indices: ArrayIn) -> None:
    """Add the no-good cut (C1) ``Σ_{c ∈ S} z_c <= |S| - 1``: the configurations ``S`` are not all chosen.

    Used on the configuration level when ``S`` (one GPU type's chosen
    configurations) cannot be placed on that type's nodes.
    """
    idx = [int(c) for c in config_indices]
    if not hasattr(model, "placement_cuts"):
        model.placement_cuts = pyo.ConstraintList()
    model.placement_cuts.add(sum(model.z[c] for c in idx) <= len(idx) - 1)
