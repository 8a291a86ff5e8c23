"""Section 5b in the exact models: port losses of a load and an execute that overlap.

Under 5b an instruction with demand d and units U = d x duration (duration when d = 0) ends
at the first integer time its cumulative work reaches U: between events the shares are
constant integers, and `t + ceil(left / share)` per segment composes to exactly that. Its
work at time t is d x (t - start) minus, for every partner it overlapped, `loss` x (length of
the overlap), where `loss` = d - share when both are active (0 when either demand is 0 or
the two fit the port). So with intervals [s, e] per load and execute and o_ji >= the overlap
of load j with execute i, the models require only
    d_j (e_j - s_j) - sum_i loss_L(d_j, d_i) o_ji >= U_j    (and alike for executes),
with the section-5 start rules, HBM loads apart and executes chained. This is exact:
(a) the true 5b schedule of any plan, with any releases, satisfies it (o = the overlap), so
the model's optimum is no more than the true optimum; (b) the plan decoded from a model
solution and released at the model's starts replays with every start equal and every end
no later (`formulations.replay.replay_shared`), so it is no worse than the model's objective.

Load j, issued before E<slot> (slot >= the restrictions' lowest), can overlap only executes
slot..j-1; a (j, i) is a candidate only if some combination of their pairs' demands loses
port time. Demands enter through one literal per distinct demand value of an op's pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from elk_opt.noc import shares
from formulations.common import Pair
from formulations.deadline import NO_DEADLINE, Deadline


def losses(load_d: int, exec_d: int) -> tuple[int, int]:
    """Port lost per ns by a load and an execute active together, permille (load, execute)."""
    if not load_d or not exec_d:
        return 0, 0
    gl, ge = shares(load_d, exec_d)
    return load_d - gl, exec_d - ge


@dataclass(frozen=True)
class Combo:
    """One (load demand, execute demand) combination that loses port time."""

    load_d: int
    exec_d: int
    load_loss: int
    exec_loss: int


@dataclass(frozen=True)
class Candidate:
    """A load j and an execute i (i < j in the instance's order) that may overlap and lose
    port time."""

    load: int
    exec: int
    combos: tuple[Combo, ...]

    @property
    def load_loses(self) -> bool:
        return any(c.load_loss for c in self.combos)

    @property
    def exec_loses(self) -> bool:
        return any(c.exec_loss for c in self.combos)


def candidates(pairs: Sequence[Sequence[Pair]], lowest_slot: Callable[[int], int],
               deadline: Deadline = NO_DEADLINE,
               execs: Callable[[int], Iterable[int]] | None = None) -> list[Candidate]:
    """Every (load j, execute i) with lowest_slot(j) <= i < j (or i in `execs(j)`, the
    executes load j can overlap in a free execution order) whose demands can contend
    (quadratic in ops: `deadline` is checked once per load)."""
    out = []
    for j, ps in enumerate(pairs):
        deadline.check()
        load_ds = sorted({a.load_d for a in ps if a.load_ns and a.load_d})
        if not load_ds:
            continue
        for i in range(lowest_slot(j), j) if execs is None else execs(j):
            exec_ds = sorted({a.run_d for a in pairs[i] if a.run_ns and a.run_d})
            combos = tuple(Combo(dl, de, *losses(dl, de)) for dl in load_ds for de in exec_ds
                           if sum(losses(dl, de)))
            if combos:
                out.append(Candidate(j, i, combos))
    return out


def stretch_limit(duration_ns: int, demand: int) -> int:
    """The longest an instruction can take under 5b: its share never drops below
    min(d, 500) (`elk_opt.noc.shares`), so it does its units within 2 x duration."""
    return 2 * duration_ns if demand else duration_ns
