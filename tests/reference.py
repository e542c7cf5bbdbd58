"""An independent, slow, scalar reference of the goodput model and fitness.

Written from the model's equations with plain Python floats and ``math``; it
does not call goodopt's model code, so agreement with the vectorised evaluator
checks both.
"""

from __future__ import annotations

import math


def ref_goodput(prof, gpu_type, k, multi, phi, n_candidates=50):
    """Best goodput of ``k`` GPUs (``multi``: more than one node) by scanning candidates."""
    if k == 0:
        return 0.0
    g = prof.gpu_types[gpu_type]
    p = g.params
    m0, mmax = prof.init_batch_size, prof.max_batch_size
    lo = max(m0, k * g.min_local_bsz)
    if lo > mmax + 1e-8:
        return 0.0
    best = 0.0
    for i in range(n_candidates):
        total = math.exp(math.log(lo) + i / (n_candidates - 1) * (math.log(mmax) - math.log(lo)))
        local = total / k
        s = math.ceil(local / g.max_local_bsz - 1e-8) - 1
        if k == 1 and local > m0 + 1e-8:
            s = max(s, 1)
        s = max(s, 0)
        m = math.ceil(local / (s + 1) - 1e-8)
        if not (g.min_local_bsz <= m <= g.max_local_bsz):
            continue
        t_c = p.alpha_c + p.beta_c * m
        if k == 1:
            t_s = 0.0
        elif multi:
            t_s = p.alpha_n + p.beta_n * max(k - 2, 0)
        else:
            t_s = p.alpha_r + p.beta_r * max(k - 2, 0)
        t_step = (t_c ** p.gamma + t_s ** p.gamma) ** (1.0 / p.gamma)
        big_m = k * m * (s + 1)
        x = big_m / (s * t_c + t_step)
        e = (phi + m0) / (phi + big_m)
        best = max(best, x * e)
    return best


def ref_power_mean(values, p, weights):
    wsum = sum(weights)
    if p == -math.inf:
        return min(values)
    if p == math.inf:
        return max(values)
    if p == 0:
        return math.exp(sum(w * math.log(v) for v, w in zip(values, weights)) / wsum)
    return (sum(w * v ** p for v, w in zip(values, weights)) / wsum) ** (1.0 / p)


def ref_power_mean_exact(values, p, weights, digits=800):
    """The weighted power mean in 800-digit decimal arithmetic: exact enough at any p.

    ``(1/p) ln(Σ w exp(p ln v) / W)`` needs about ``-log10(|p|)`` digits to see
    anything at p = 5e-324, hence the precision. ``p = 0``: ``exp(Σ w ln v / W)``.
    """
    from decimal import Decimal, localcontext

    if p == -math.inf:
        return min(values)
    if p == math.inf:
        return max(values)
    with localcontext() as ctx:
        ctx.prec = digits
        ctx.Emax, ctx.Emin = 10 ** 9, -(10 ** 9)
        w = [Decimal(x) for x in weights]
        lnv = [Decimal(x).ln() for x in values]
        wsum = sum(w)
        if p == 0:
            return float((sum(a * b for a, b in zip(w, lnv)) / wsum).exp())
        dp = Decimal(p)
        mean = sum(a * (dp * b).exp() for a, b in zip(w, lnv)) / wsum
        return float((mean.ln() / dp).exp())


def ref_fitness_and_speedups(scenario, problem, alloc):
    """Fitness and speedups of one allocation (J x N nested lists), job by job.

    Uses the problem's base goodput (tested separately) but recomputes every
    speedup from the equations.
    """
    cl = scenario.cluster
    speedups = []
    for j, job in enumerate(scenario.jobs):
        prof = scenario.profiles[job.application]
        row = [int(x) for x in alloc[j]]
        k = sum(row)
        nodes = sum(1 for x in row if x > 0)
        if k == 0:
            s = 0.0
        else:
            per_type = {}
            for n, x in enumerate(row):
                per_type[cl.node_gpu_types[n]] = per_type.get(cl.node_gpu_types[n], 0) + x
            gpu_type = max(cl.gpu_type_names, key=lambda t: (per_type.get(t, 0), -cl.gpu_type_names.index(t)))
            phi = job.phi if job.phi is not None else float(prof.phi_at(job.epoch))
            too_many = k > problem.max_gpus[j] or k > cl.gpus_of_type(gpu_type)
            if gpu_type not in prof.gpu_types or too_many:
                s = 0.0
            else:
                s = ref_goodput(prof, gpu_type, k, nodes > 1, phi,
                                scenario.objective.n_batch_candidates) / problem.base_goodput[j]
        if row != [int(x) for x in problem.current[j]]:
            d = scenario.objective.restart_delays_s.get(job.application, scenario.objective.restart_delay_s)
            t, r = job.age_s, job.n_reallocs
            s *= max(t - r * d, 0.0) / (t + d) if t + d > 0 else 1.0
        speedups.append(s)
    o = scenario.objective
    eps, lam = o.eps, o.idle_penalty
    # an idle job enters the mean as the speedup whose h-value is Sia's penalty (h(t) = t^p, log t at p = 0)
    idle = eps if lam is None else (math.exp(lam) if o.p == 0 else lam ** (1.0 / o.p))
    fit = ref_power_mean([s + eps if s > 0 else idle for s in speedups], o.p, [j.weight for j in scenario.jobs])
    return fit, speedups


def ref_violation(problem, alloc):
    """Feasibility of one allocation, checked constraint by constraint."""
    J, N = len(alloc), len(alloc[0])
    for n in range(N):
        if sum(alloc[j][n] for j in range(J)) > problem.node_capacity[n]:
            return False
    multi_nodes = []
    for j in range(J):
        row = alloc[j]
        if any(x < 0 for x in row):
            return False
        k = sum(row)
        if len({problem.gpu_types[n] for n in range(N) if row[n] > 0}) > 1:
            return False
        if 0 < k < problem.min_gpus[j] or k > problem.max_gpus[j]:
            return False
        used = [n for n in range(N) if row[n] > 0]
        if len(used) > 1:
            multi_nodes.append(set(used))
    if problem.interference_avoidance:
        for a in range(len(multi_nodes)):
            for b in range(a + 1, len(multi_nodes)):
                if multi_nodes[a] & multi_nodes[b]:
                    return False
    return True
