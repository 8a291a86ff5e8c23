"""T10-style partition-plan search for one operator.

An execute plan splits the op's iteration space across the cores (factors that divide the core
count) and, for an operand shared by several cores, either replicates it or rotates it among the
sharers (T10's temporal split: each core holds 1/r of the shared tile and passes pieces around a
ring in r steps, overlapping the shifts with compute). For each candidate the cost model gives
per-core compute time, NoC bytes and time, and the SRAM bytes while executing. A plan's time is
composed explicitly of the compute not hidden behind an exchange, its exchange phases and its
barrier syncs; the last two are the time it holds the NoC port on a bulk-synchronous chip
(`port_ns`, written as the plan's `noc_ns` when the instance is built with `noc_occupancy` =
"bsp"). Only the Pareto front (time vs space) is kept, thinned to `max_exec` plans.

Preload plans hold the op's HBM data spread over all cores with `r` copies of each byte
(r = 1: each core holds 1/cores; larger r: closer to an execute layout that replicates).
A preload plan with r copies is compatible with an execute plan whose HBM operand has R copies
when r divides R; the warm-up then replicates the missing (1 - r/R) share over the NoC. The
preload layout of a chosen pair is tiled to match its execute plan, so no other reshuffle is
needed. Ops without HBM data get one empty preload plan. With "bsp" a preload plan's `noc_ns` is
its NoC distribution time (the cost model's `load_noc_ns`); with "bytes" no plan has `noc_ns`
and docs/spec.md section 5b derives the port work from the bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from math import ceil, isqrt
from typing import Any

from elk_opt.frontend.chips import NocOccupancy
from elk_opt.frontend.cost import CostModel
from elk_opt.frontend.onnx_import import Work
from elk_opt.problem import ExecPlan, PreloadPlan, Warmup

ACC_BYTES = 4  # partial sums of a split reduction dimension are fp32
MIN_CORE_FRACTION = 4  # plans may leave at most 3/4 of the cores idle
OPS_PER_ELEM = {"elementwise": 1.0, "norm": 5.0, "softmax": 5.0, "reduce": 1.0, "gather": 1.0}
# Cross-core reductions of per-row statistics: a norm reduces its sums (of x and x^2: the 8
# bytes per row) together; softmax needs the row maximum before its sum of exponentials.
REDUCTION_ROUNDS = {"softmax": 2}


@dataclass(frozen=True)
class SearchOptions:
    max_exec: int = 8
    max_preload: int = 4
    max_slowdown: float = 8.0  # drop execute plans this many times slower than the fastest


DEFAULT_SEARCH = SearchOptions()


class NoPlanFits(ValueError):
    """Every partition plan of an op exceeds the SRAM of a core."""


@dataclass(frozen=True)
class Candidate:
    """An execute plan with what it is made of (kept for `elk-opt plans` and tests)."""

    time_ns: int
    space_bytes: int
    noc_bytes: int
    exchange_ns: int  # exchange phases (data on the port)
    syncs: int  # barrier syncs
    port_ns: int  # exchange phases and syncs: what holds the port on a BSP chip (<= time_ns)
    compute_ns: int
    hbm_part: int  # per-core bytes of HBM data in the execute layout
    replicas: int  # copies of each HBM byte in the execute layout
    cores_used: int
    split: tuple[int, ...]
    rotate: str | None  # operand rotated among its sharers
    rotation: int
    noc_group: int  # cores a plan's NoC traffic spans

    def describe(self) -> dict[str, Any]:
        return {"split": list(self.split), "rotate": self.rotate, "rotation": self.rotation,
                "compute_ns": self.compute_ns, "exchange_ns": self.exchange_ns,
                "syncs": self.syncs, "port_ns": self.port_ns,
                "replicas": self.replicas, "hbm_part_bytes": self.hbm_part,
                "noc_group": self.noc_group, "cores_used": self.cores_used}


@dataclass(frozen=True)
class OpPlans:
    exec_plans: tuple[ExecPlan, ...]
    preload_plans: tuple[PreloadPlan, ...]
    warmup: tuple[Warmup, ...]
    details: tuple[Candidate, ...]  # one per exec plan, same order
    layouts: tuple[tuple[int, int], ...]  # (cores used, copies of each byte) per preload plan


def footprint(work: Work) -> int:
    """Bytes of every operand and the result, over all cores: what must fit in SRAM at once."""
    b = work.dtype_bytes
    if work.kind == "matmul":
        g, m, k, n = work.dims
        return g * (m * k + k * n + m * n) * b + (work.hbm_bytes if work.hbm == "param" else 0)
    if work.kind == "elementwise":
        elems, acts = work.dims
        return (acts + 1) * elems * b + work.hbm_bytes
    rows, cols = work.dims
    return 2 * rows * cols * b + (work.hbm_bytes if work.hbm == "param" else 0)


def compose(phases: list[tuple[float, float]]) -> tuple[int, int]:
    """(time, port time) of an execute plan from its phases, both rounded up to whole ns.

    Each phase is (duration, the part of it that holds the core's port): on a bulk-synchronous
    chip an exchange and a barrier sync hold the port, compute not hidden behind an exchange
    does not. Summed in one order, port time <= time and both grow with every phase.
    """
    time = port = 0.0
    for duration, held in phases:
        time += duration
        port += held
    return ceil(time), ceil(port)


@cache
def divisors(n: int) -> tuple[int, ...]:
    """Every divisor of n, ascending, in O(sqrt n)."""
    small = [d for d in range(1, isqrt(n) + 1) if n % d == 0]
    return tuple(sorted({*small, *(n // d for d in small)}))


def splits(dims: tuple[int, ...], cores: int) -> list[tuple[int, ...]]:
    """Factor tuples (one per dim, none above its dim) whose product divides `cores`.

    Products below a quarter of the largest reachable one are dropped: they idle cores.
    """
    divs = divisors(cores)
    out: list[tuple[int, ...]] = []

    def rec(i: int, left: int, acc: tuple[int, ...]) -> None:
        if i == len(dims):
            out.append(acc)
            return
        for d in divs:
            if d > left:
                break
            if left % d == 0 and d <= dims[i]:
                rec(i + 1, left // d, (*acc, d))

    rec(0, cores, ())
    best = max(_prod(s) for s in out)
    return [s for s in out if _prod(s) * MIN_CORE_FRACTION >= best]


@cache
def tile_factors(dim: int, limit: int, least: int = 1) -> tuple[int, ...]:
    """From `least` up, the fewest-core factor for each distinct tile ceil(dim / f), f <= limit.

    More cores for the same tile never help, so these are the only factors worth trying.
    """
    out: list[int] = []
    f = max(1, least)
    while f <= min(dim, limit):
        out.append(f)
        tile = -(-dim // f)
        if tile == 1:
            break
        f = -(-dim // (tile - 1))  # the fewest cores giving the next smaller tile
    return tuple(out)


def spread_splits(dims: tuple[int, ...], cores: int, least: int) -> list[tuple[int, ...]]:
    """Factor tuples (none above its dim) using between `least` and `cores` cores, any count.

    Every dim but one takes the fewest-core factor of each of its tile sizes; the remaining
    one, in turn each dim, also takes the fewest cores that reach `least` for a tile.
    """
    out: set[tuple[int, ...]] = set()
    for last in range(len(dims)):
        others = dims[:last] + dims[last + 1:]
        for used, head in _tile_products(others, cores):
            for f in tile_factors(dims[last], cores // used, -(-least // used)):
                out.add((*head[:last], f, *head[last:]))
    return sorted(out)


def _tile_products(dims: tuple[int, ...], cores: int) -> list[tuple[int, tuple[int, ...]]]:
    """(cores used, factors) for every tuple of fewest-core tile factors using <= `cores`."""
    out: list[tuple[int, tuple[int, ...]]] = [(1, ())]
    for dim in dims:
        out = [(used * f, (*head, f)) for used, head in out
               for f in tile_factors(dim, cores // used)]
    return out


def op_splits(dims: tuple[int, ...], cores: int, cost: CostModel) -> list[tuple[int, ...]]:
    """The cost model's core-use rule: its least core count (any count) or, without one, the
    divisor rule of `splits`."""
    least = cost.min_cores(_prod(dims), cores)
    return splits(dims, cores) if least is None else spread_splits(dims, cores, least)


def _prod(values: tuple[int, ...]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


@cache
def _rotations(sharers: int) -> tuple[int, ...]:
    """Rotation factors worth trying for an operand shared by `sharers` cores."""
    if sharers < 4:
        return (1,)
    opts = {1, sharers}
    mid = [d for d in divisors(sharers) if 4 <= d < sharers]
    if mid:
        opts.add(mid[len(mid) // 2])
    return tuple(sorted(opts))


# ---------------------------------------------------------------------------- candidates

def matmul_candidates(work: Work, cores: int, cost: CostModel) -> list[Candidate]:
    g_dim, m_dim, k_dim, n_dim = work.dims
    b = work.dtype_bytes
    out: list[Candidate] = []
    bias = work.hbm_bytes if work.hbm == "param" else 0
    if work.hbm in ("A", "B"):
        side = g_dim * (m_dim * k_dim if work.hbm == "A" else k_dim * n_dim) * b
        bias = max(0, work.hbm_bytes - side)
    for fg, fm, fk, fn in op_splits(work.dims, cores, cost):
        used = fg * fm * fk * fn
        g, m, k, n = ceil(g_dim / fg), ceil(m_dim / fm), ceil(k_dim / fk), ceil(n_dim / fn)
        a_tile, b_tile = g * m * k * b, g * k * n * b
        acc = ACC_BYTES if fk > 1 else b
        o_tile = g * m * n * acc
        bias_part = ceil(bias * (n / n_dim)) if bias else 0
        for ra in _rotations(fn):
            for rb in _rotations(fm):
                if ra > 1 and rb > 1:
                    continue
                out.append(_matmul_plan(work, cost, cores, used, (fg, fm, fk, fn),
                                        (g, m, k, n), a_tile, b_tile, o_tile, bias_part, ra, rb))
    return out


def _matmul_plan(work: Work, cost: CostModel, cores: int, used: int,
                 f: tuple[int, int, int, int], t: tuple[int, int, int, int],
                 a_tile: int, b_tile: int, o_tile: int, bias_part: int,
                 ra: int, rb: int) -> Candidate:
    fg, fm, fk, fn = f
    g, m, k, n = t
    a_space = a_tile if ra == 1 else 2 * ceil(a_tile / ra)
    b_space = b_tile if rb == 1 else 2 * ceil(b_tile / rb)
    space = a_space + b_space + o_tile + bias_part
    # activations arrive from their producers' layouts (the first piece of a rotated one);
    # HBM operands are already in place; rotation then shifts one piece per step. Either the
    # consumer pays for the arrival or, with `producer_shuffles`, the producer pays to
    # shuffle its result out.
    first = (0 if work.hbm == "A" else ceil(a_tile / ra)) + \
        (0 if work.hbm == "B" else ceil(b_tile / rb))
    steps = max(ra, rb)
    shift_piece = ceil(a_tile / ra) if ra > 1 else ceil(b_tile / rb) if rb > 1 else 0
    reduce_bytes = ceil(o_tile * (fk - 1) / fk)
    noc_bytes = first + shift_piece * (steps - 1) + reduce_bytes
    step_ns = cost.matmul_ns(g, m, k, n, work.dtype_bytes, steps)
    compute = step_ns * steps
    if cost.producer_shuffles:
        handoff_ns = cost.noc_ns(g * m * n * work.dtype_bytes, fn)
    else:
        handoff_ns = cost.noc_ns(first, fn)
    shift_ns = cost.noc_ns(shift_piece, fn if ra > 1 else fm)
    reduce_ns = cost.reduce_ns(fk, reduce_bytes) if fk > 1 else 0.0
    add_ns = cost.partial_sum_ns(o_tile / ACC_BYTES) if fk > 1 else 0.0
    # each rotation step shifts the next piece while computing on this one, then syncs
    exchange = handoff_ns + (steps - 1) * shift_ns + reduce_ns
    syncs = (steps - 1) + (2 if fk > 1 else 1)
    time, port = compose([(handoff_ns, handoff_ns), (step_ns, 0.0),
                          ((steps - 1) * max(step_ns, shift_ns), (steps - 1) * shift_ns),
                          (reduce_ns, reduce_ns), (add_ns, 0.0),
                          (syncs * cost.sync_ns, syncs * cost.sync_ns)])
    if work.hbm == "A":
        hbm_part, replicas = (a_tile if ra == 1 else ceil(a_tile / ra)), fn // ra
    elif work.hbm == "B":
        hbm_part, replicas = (b_tile if rb == 1 else ceil(b_tile / rb)), fm // rb
    else:
        hbm_part, replicas = 0, 1
    hbm_part += bias_part
    if work.hbm == "param":
        replicas = max(1, used // fn)
    rotate = "A" if ra > 1 else "B" if rb > 1 else None
    return Candidate(time_ns=time, space_bytes=space, noc_bytes=noc_bytes,
                     exchange_ns=ceil(exchange), syncs=syncs, port_ns=port,
                     compute_ns=ceil(compute), hbm_part=hbm_part,
                     replicas=replicas, cores_used=used, split=f, rotate=rotate,
                     rotation=steps,
                     noc_group=max(fn, fk, fm if rb > 1 else 1))


def rowwise_candidates(work: Work, cores: int, cost: CostModel) -> list[Candidate]:
    """Norms, softmax, reductions and gathers: rows split freely, columns split with a
    cross-core reduction of per-row statistics (none for a gather)."""
    rows, cols = work.dims
    b = work.dtype_bytes
    ops = OPS_PER_ELEM[work.kind]
    out: list[Candidate] = []
    least = cost.min_cores(rows * cols, cores)
    options = ([s for used in divisors(cores) for s in _exact_splits((rows, cols), used)]
               if least is None else spread_splits((rows, cols), cores, least))
    for fr, fc in options:
        used = fr * fc
        r, c = ceil(rows / fr), ceil(cols / fc)
        tile = r * c * b
        if work.kind == "gather":
            space, hbm_part, replicas = 2 * tile, tile, 1
        else:
            param = ceil(work.hbm_bytes * c / cols) if work.hbm else 0
            out_tile = r * b if work.kind == "reduce" else tile
            space, hbm_part, replicas = tile + out_tile + param, param, fr
        reduce_bytes = 0 if fc == 1 or work.kind == "gather" else ceil(8 * r * (fc - 1) / fc)
        compute = cost.vector_ns(r * c, 2 * tile, ops)
        rounds = REDUCTION_ROUNDS.get(work.kind, 1)
        exchange = cost.reduce_ns(fc, reduce_bytes) * rounds if reduce_bytes else 0.0
        syncs = 1 if reduce_bytes == 0 else 1 + rounds
        time, port = compose([(compute, 0.0), (exchange, exchange),
                              (syncs * cost.sync_ns, syncs * cost.sync_ns)])
        out.append(Candidate(time_ns=time, space_bytes=space, noc_bytes=reduce_bytes,
                             exchange_ns=ceil(exchange), syncs=syncs, port_ns=port,
                             compute_ns=ceil(compute), hbm_part=hbm_part,
                             replicas=replicas, cores_used=used, split=(fr, fc), rotate=None,
                             rotation=1,
                             noc_group=fc))
    return out


def _exact_splits(dims: tuple[int, int], used: int) -> list[tuple[int, int]]:
    return [(d, used // d) for d in divisors(used) if d <= dims[0] and used // d <= dims[1]]


def elementwise_candidates(work: Work, cores: int, cost: CostModel) -> list[Candidate]:
    """Elements split evenly; every activation input after the first is re-laid out to match."""
    elems, acts = work.dims
    b = work.dtype_bytes
    out: list[Candidate] = []
    least = cost.min_cores(elems, cores)
    options = ([d for d in divisors(cores)
                if d <= elems and d * MIN_CORE_FRACTION >= min(cores, elems)]
               if least is None else tile_factors(elems, cores, least))
    for used in options:
        e = ceil(elems / used)
        param = min(work.hbm_bytes, e * b) if work.hbm else 0
        space = (acts + 1) * e * b + param
        noc_bytes = max(0, acts - 1) * e * b
        # between two even splits: neighbouring cores; free when the producer shuffles
        exchange = 0.0 if cost.producer_shuffles else cost.noc_ns(noc_bytes, 1)
        operands = max(1, acts + (1 if work.hbm else 0))
        compute = cost.vector_ns(e, (acts + 1) * e * b + param, 1.0, operands)
        time, port = compose([(exchange, exchange), (compute, 0.0),
                              (cost.sync_ns, cost.sync_ns)])
        replicas = max(1, ceil(used * param / work.hbm_bytes)) if param else 1
        out.append(Candidate(time_ns=time, space_bytes=space, noc_bytes=noc_bytes,
                             exchange_ns=ceil(exchange), syncs=1, port_ns=port,
                             compute_ns=ceil(compute), hbm_part=param,
                             replicas=replicas, cores_used=used, split=(used,), rotate=None,
                             rotation=1,
                             noc_group=1))
    return out


def candidates(work: Work, cores: int, cost: CostModel) -> list[Candidate]:
    if work.kind == "matmul":
        return matmul_candidates(work, cores, cost)
    if work.kind == "elementwise":
        return elementwise_candidates(work, cores, cost)
    return rowwise_candidates(work, cores, cost)


# ---------------------------------------------------------------------------- selection

def pareto(cands: list[Candidate]) -> list[Candidate]:
    """Plans no other plan beats on both time and space, fastest first (ties: less NoC)."""
    front: list[Candidate] = []
    for c in sorted(cands, key=lambda c: (c.time_ns, c.space_bytes, c.noc_bytes, c.split)):
        if not front or c.space_bytes < front[-1].space_bytes:
            front.append(c)
    return front


def thin(front: list[Candidate], limit: int, max_slowdown: float) -> list[Candidate]:
    """At most `limit` plans of the front, spread evenly over its space range, both ends kept.

    Plans more than `max_slowdown` times slower than the fastest are dropped first: saving a
    few bytes at many times the run time (a rotation over hundreds of cores) is never useful.
    """
    fastest = front[0].time_ns
    front = [c for c in front if c.time_ns <= max_slowdown * fastest]
    if len(front) <= limit:
        return front
    if limit == 1:
        return [front[0]]
    hi, lo = front[0].space_bytes, front[-1].space_bytes
    picks: set[int] = set()
    for i in range(limit):
        target = hi - (hi - lo) * i / (limit - 1)
        free = [j for j in range(len(front)) if j not in picks]
        picks.add(min(free, key=lambda j: (abs(front[j].space_bytes - target), j)))
    return [front[j] for j in sorted(picks)]


def search(work: Work, cores: int, sram_bytes: int, cost: CostModel,
           options: SearchOptions = DEFAULT_SEARCH,
           noc_occupancy: NocOccupancy = "bytes") -> OpPlans:
    """The op's execute plans, preload plans and compatible pairs (docs/spec.md section 1).

    `noc_occupancy` "bsp" gives every plan its port time as `noc_ns`; "bytes" gives none.
    """
    bsp = noc_occupancy == "bsp"
    cands = [c for c in candidates(work, cores, cost) if c.space_bytes <= sram_bytes]
    if work.hbm_bytes:
        cands = [c for c in cands
                 if ceil(work.hbm_bytes / c.cores_used) <= sram_bytes and c.replicas >= 1]
    if not cands:
        raise NoPlanFits(f"no partition plan fits {sram_bytes:,} B of SRAM per core")
    chosen = thin(pareto(cands), options.max_exec, options.max_slowdown)
    if work.hbm_bytes:
        # every execute plan needs a one-copy preload on its own cores: keep at most
        # `max_preload` distinct core counts, the fastest plan's, then the largest, leaving
        # room for the fastest plan's own layout when it replicates (no warm-up for it)
        own = 1 if chosen[0].replicas > 1 else 0
        rest = sorted({c.cores_used for c in chosen} - {chosen[0].cores_used}, reverse=True)
        counts = [chosen[0].cores_used, *rest][:max(1, options.max_preload - own)]
        chosen = [c for c in chosen if c.cores_used in counts]
    exec_plans = tuple(ExecPlan(id=i, time_ns=c.time_ns, space_bytes=c.space_bytes,
                                noc_bytes=c.noc_bytes, noc_ns=c.port_ns if bsp else None)
                       for i, c in enumerate(chosen))
    if not work.hbm_bytes:
        empty = PreloadPlan(id=0, space_bytes=0, load_ns=0, noc_ns=0 if bsp else None)
        return OpPlans(exec_plans, (empty,),
                       tuple(Warmup(preload=0, exec=p.id, time_ns=0) for p in exec_plans),
                       tuple(chosen), ((cores, 1),))
    layouts = _preload_layouts(chosen, options.max_preload)
    preloads = tuple(PreloadPlan(id=i, space_bytes=ceil(work.hbm_bytes * r / used),
                                 load_ns=ceil(cost.load_ns(work.hbm_bytes, r, used)),
                                 noc_ns=ceil(cost.load_noc_ns(work.hbm_bytes, r, used))
                                 if bsp else None)
                     for i, (used, r) in enumerate(layouts))
    warmup = []
    for q, (used, r) in zip(preloads, layouts, strict=True):
        for p, c in zip(exec_plans, chosen, strict=True):
            if c.cores_used == used and c.replicas % r == 0:
                missing = ceil(c.hbm_part * (1 - r / c.replicas))
                time = cost.noc_ns(missing, c.replicas) + cost.sync_ns if missing else 0
                warmup.append(Warmup(preload=q.id, exec=p.id, time_ns=ceil(time)))
    return OpPlans(exec_plans, preloads, tuple(warmup), tuple(chosen), tuple(layouts))


def _preload_layouts(chosen: list[Candidate], limit: int) -> list[tuple[int, int]]:
    """(cores, copies) of the preload plans: one copy on each execute plan's cores (fits every
    plan on those cores), then the execute plans' own copy counts (no warm-up for them), as
    many as `limit` allows: the fastest plan's (`chosen[0]`) first, then fewest copies first."""
    base = sorted({(c.cores_used, 1) for c in chosen}, key=lambda x: -x[0])
    fastest = (chosen[0].cores_used, chosen[0].replicas)
    room = max(0, limit - len(base))
    head = [fastest] if fastest not in base and room else []
    extra = sorted({(c.cores_used, c.replicas) for c in chosen} - set(base) - {fastest},
                   key=lambda x: (x[1], -x[0]))
    room -= len(head)
    if len(extra) > room:
        picks = sorted({round(i * (len(extra) - 1) / max(1, room - 1)) for i in range(room)})
        extra = [extra[i] for i in picks] if room else []
    return base + head + extra
