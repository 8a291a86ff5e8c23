"""Hypothesis strategies for generated instances, shared by every test module."""

from __future__ import annotations

from hypothesis import strategies as st

from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.problem import Chip, ExecPlan, Instance, Noc, Op, PreloadPlan, Warmup
from tests.tiny import port_instance


@st.composite
def synthetic_instances(draw, max_ops: int = 40, max_plans: int = 5) -> Instance:
    """The synthetic generator's decoder-like instances."""
    return synthetic_instance(
        ops=draw(st.integers(1, max_ops)), plans=draw(st.integers(1, max_plans)),
        seed=draw(st.integers(0, 10_000)), tightness=draw(st.sampled_from([0.0, 0.3, 0.6, 1.0])))


@st.composite
def random_instances(draw, max_ops: int = 6, max_plans: int = 3, noc: bool = False,
                     max_ns: int = 100) -> Instance:
    """Small unstructured instances: random DAG, random plans, random compatibility.

    SRAM always fits every op alone (some pair, both layouts), so every instance is feasible.
    With `noc`, plans use the NoC port (section 5b): some through `noc_ns`, some through bytes
    at a port of 1e9 B/s (1 byte = 1 ns of port time). Durations are at most `max_ns` (port
    times 1.2x that, warm-ups a fifth).
    """
    port = max_ns * 6 // 5
    n = draw(st.integers(1, max_ops))
    ops = []
    for i in range(n):
        inputs = sorted(draw(st.sets(st.integers(0, i - 1), max_size=2))) if i else []
        n_exec = draw(st.integers(1, max_plans))
        n_pre = draw(st.integers(1, max_plans))
        execs = [ExecPlan(id=k, time_ns=draw(st.integers(1, max_ns)),
                          space_bytes=draw(st.integers(1, 60)),
                          noc_bytes=draw(st.integers(0, port)) if noc else 0,
                          noc_ns=draw(st.none() | st.integers(0, port)) if noc else None)
                 for k in range(n_exec)]
        zero_load = draw(st.booleans())
        preloads = [PreloadPlan(id=k, space_bytes=0 if zero_load else draw(st.integers(0, 60)),
                                load_ns=0 if zero_load else draw(st.integers(0, max_ns)),
                                noc_ns=draw(st.none() | st.integers(0, port)) if noc else None)
                    for k in range(n_pre)]
        pairs = draw(st.sets(st.tuples(st.integers(0, n_pre - 1), st.integers(0, n_exec - 1)),
                             min_size=1, max_size=n_pre * n_exec))
        warmup = [Warmup(preload=q, exec=p, time_ns=draw(st.integers(0, max_ns // 5)))
                  for q, p in sorted(pairs)]
        ops.append(Op(name=f"op{i}", kind="random", layer=None, inputs=tuple(inputs),
                      hbm_bytes=0, flops=0, exec_plans=tuple(execs),
                      preload_plans=tuple(preloads), warmup=tuple(warmup)))
    need = max(min(max(op.exec_by_id[w.exec].space_bytes, op.preload_by_id[w.preload].space_bytes)
                   for w in op.warmup) for op in ops)  # R5: op i holds its larger layout
    sram = need + draw(st.integers(0, 120))
    link = 1_000_000_000 if noc else 1
    chip = Chip(name="random", cores=1, sram_bytes=sram, hbm_bytes_per_s=1, clock_hz=1,
                noc=Noc(topology="all_to_all", link_bytes_per_s=link))
    return Instance(name="random", chip=chip, ops=tuple(ops))


@st.composite
def random_plans(draw, instance: Instance) -> tuple[list, list]:
    """A random pair choice and a random sound program (any preload order, any issue points).

    Returns (choice, program); memory (R5) may or may not hold.
    """
    from elk_opt.problem import Choice

    choice = []
    for op in instance.ops:
        w = draw(st.sampled_from(op.warmup))
        choice.append(Choice(exec=w.exec, preload=w.preload))
    program: list = []
    waiting = list(range(len(instance.ops)))
    issued: set[int] = set()
    for i in range(len(instance.ops)):
        for _ in range(draw(st.integers(0, 3))):
            ahead = [j for j in waiting if j >= i]
            if not ahead:
                break
            j = draw(st.sampled_from(ahead))
            waiting.remove(j)
            issued.add(j)
            program.append(("P", j))
        if i not in issued:
            waiting.remove(i)
            issued.add(i)
            program.append(("P", i))
        program.append(("E", i))
    return choice, program


@st.composite
def port_chains(draw):
    """Four ops in a chain, each (load ns, load port ns, execute ns, execute port ns): the
    shape of tests/test_bounds.py's examples of loads run whole, where those rows bind about
    once in three hundred draws."""
    specs = []
    for _ in range(4):
        load = draw(st.sampled_from([0, 2, 4, 6, 8, 10]))
        run = draw(st.sampled_from([1, 2, 4, 6, 8, 10]))
        specs.append((load, draw(st.sampled_from([0, load // 2, load])), run,
                      draw(st.sampled_from([0, run // 2, run]))))
    return port_instance(specs)
