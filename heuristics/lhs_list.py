"""XLA's latency-hiding list scheduler over the op DAG, for lhs with a free execution order.

The mapping onto our instructions: an execute E<i> is a compute node whose cost is its execute
time plus warm-up; a preload P<i> is an asynchronous copy, its start the P<i> instruction and its
done the implicit wait at the start of E<i> (our programs have no done instruction: a done is
never worth placing earlier than its user, so it is fused with E<i>). E<i> depends on E<j> for
every j in `inputs`.

As XLA's DefaultSchedulerCore, the scheduler works bottom-up, from the ops nothing uses back to
the first: the ready set holds the nodes whose users are all scheduled, and each step takes the
one ReadySetLt ranks first, its rules in XLA's order (those with no counterpart here dropped):
  1. memory pressure, once the live preload bytes pass half the limit: at or over the limit
     the node that frees the most (kDecreaseMemoryOverLimit), then a node whose R5 peak stays
     under the limit (kMemoryPeakOverLimit);
  2. less stall: a copy start whose latency is not yet covered by the compute scheduled below
     it would stall (kLessStall);
  3. copy starts go last, i.e. as early in the program as the rules above let them
     (kStartAtZeroDepth, one of XLA's aggressive policies);
  4. larger async depth first: the longest chain of copy latency above the node (kAsyncDepth);
  5. the node that makes more nodes ready (kCreatesMoreReadyNodes);
  6. the smaller memory increase (kDecreaseMemory);
  7. the later position in the original order (kOriginalOrder: P<i> E<i> for i = 0, 1, ...).
Time runs backward as in XLA: scheduling a node at the current time moves it by the node's cost;
a copy start is ready at the time its done was scheduled plus the copy's latency, the load
time of its plan. As in XLA each copy has a latency of its own: the estimate does not see that
our HBM serves loads one at a time in issue order. (A model of that queue made the scheduler
issue large loads first: 9.6% slower than the instance order at the median of the 64
regression cells, against 1.5% with a latency per copy; BENCHMARKS.md.)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Costs:
    """What the scheduler knows of each op: its plans' estimates and its dependencies."""

    run_ns: tuple[int, ...]  # execute + warm-up
    load_ns: tuple[int, ...]
    own_space: tuple[int, ...]  # R5 at its own execute: max(execute layout, preload layout)
    pre_space: tuple[int, ...]  # its preload layout, held from P<i> to E<i>
    inputs: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Listed:
    exec_order: tuple[int, ...]
    preload_order: tuple[int, ...]
    issued_before: tuple[int, ...]  # per preload, the position in exec_order it precedes
    peak_bytes: int  # R5 left-hand side at its worst execute


def _async_depth(c: Costs) -> list[int]:
    """XLA's async depth: the largest copy latency on any path into the node (inputs point
    backwards, docs/spec.md section 2, so one pass in op order does)."""
    depth = [0] * len(c.run_ns)
    for i, ins in enumerate(c.inputs):
        depth[i] = max([c.load_ns[i], *(depth[j] for j in ins)])
    return depth


def schedule(c: Costs, limit: int) -> Listed:
    """One bottom-up pass under a memory limit (bytes of R5: live preloads plus the execute)."""
    n = len(c.run_ns)
    users: list[set[int]] = [set() for _ in range(n)]
    for i, ins in enumerate(c.inputs):
        for j in ins:
            users[j].add(i)
    left = [len(u) for u in users]  # unscheduled users
    depth = _async_depth(c)
    exec_ready = [i for i in range(n) if left[i] == 0]
    starts: list[int] = []  # ops whose execute is scheduled and whose start is not
    done_at = [0] * n  # bottom-up time of the done (the start of E<i>)
    now = 0
    usage = 0
    peak = 0
    sequence: list[tuple[str, int]] = []

    def key(node: tuple[str, int]) -> tuple:
        kind, i = node
        if kind == "E":
            increase, own, stall = c.pre_space[i], c.own_space[i], 0
            unlocked = 1 + sum(1 for j in set(c.inputs[i]) if left[j] == 1)
        else:
            increase, own, unlocked = -c.pre_space[i], 0, 0
            stall = max(0, done_at[i] + c.load_ns[i] - now)
        pressed = 2 * usage > limit
        over = increase if pressed and usage >= limit else 0
        peak_over = 1 if pressed and usage + own > limit else 0
        return (over, peak_over, stall, kind == "P", -depth[i] if kind == "E" else 0,
                -unlocked, increase if pressed else 0, -(2 * i + (kind == "E")))

    while exec_ready or starts:
        kind, i = min([("E", i) for i in exec_ready] + [("P", j) for j in starts], key=key)
        sequence.append((kind, i))
        if kind == "E":
            exec_ready.remove(i)
            peak = max(peak, usage + c.own_space[i])
            done_at[i] = now + c.run_ns[i]
            now = done_at[i]
            usage += c.pre_space[i]
            starts.append(i)
            for j in set(c.inputs[i]):
                left[j] -= 1
                if left[j] == 0:
                    exec_ready.append(j)
        else:
            starts.remove(i)
            now = max(now, done_at[i] + c.load_ns[i])
            usage -= c.pre_space[i]
    sequence.reverse()
    exec_order = tuple(i for k, i in sequence if k == "E")
    preload_order = tuple(i for k, i in sequence if k == "P")
    issued_before = []
    execs = 0
    for k, _i in sequence:
        if k == "E":
            execs += 1
        else:
            issued_before.append(execs)
    return Listed(exec_order, preload_order, tuple(issued_before), peak)
