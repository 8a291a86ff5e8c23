"""Hand-built instances for tests whose expected numbers are computed by hand."""

from __future__ import annotations

from elk_opt.problem import Chip, Choice, ExecPlan, Instance, Noc, Op, PreloadPlan, Warmup


def tiny_instance(specs: list[tuple[int, int, int, int, int]], sram: int = 100,
                  inputs: list[tuple[int, ...]] | None = None) -> Instance:
    """One plan pair per op: specs are (load_ns, preload space, exec ns, exec space, warm-up)."""
    ops = []
    for i, (load, load_space, run, run_space, warm) in enumerate(specs):
        deps = inputs[i] if inputs else ((i - 1,) if i else ())
        ops.append(Op(name=f"op{i}", kind="test", layer=None, inputs=deps,
                      hbm_bytes=load_space, flops=0,
                      exec_plans=(ExecPlan(id=0, time_ns=run, space_bytes=run_space,
                                           noc_bytes=0),),
                      preload_plans=(PreloadPlan(id=0, space_bytes=load_space, load_ns=load),),
                      warmup=(Warmup(preload=0, exec=0, time_ns=warm),)))
    chip = Chip(name="tiny", cores=1, sram_bytes=sram, hbm_bytes_per_s=1, clock_hz=1,
                noc=Noc(topology="all_to_all", link_bytes_per_s=1))
    return Instance(name="tiny", chip=chip, ops=tuple(ops))


def branching() -> Instance:
    """Two chains that join: running the second chain's first op early hides its load, so a
    free execution order gains over the instance's."""
    return tiny_instance([(10, 40, 5, 10, 0), (10, 40, 5, 10, 0), (50, 10, 5, 10, 0),
                          (5, 10, 30, 10, 0), (5, 10, 5, 10, 0)], sram=100,
                         inputs=[(), (0,), (), (2,), (1, 3)])


def only_choice(instance: Instance) -> list[Choice]:
    return [Choice(exec=0, preload=0) for _ in instance.ops]


def parse(text: str) -> list[tuple[str, int]]:
    """"P0 P1 E0" -> [("P", 0), ("P", 1), ("E", 0)]."""
    return [(t[0], int(t[1:])) for t in text.split()]


def port_instance(specs: list[tuple[int, int, int, int]]) -> Instance:
    """One pair per op with NoC port times: specs are (load ns, load noc ns, exec ns, exec noc ns).

    Spaces are 0 and warm-ups 0, so only the timing differs between sections 5 and 5b.
    """
    ops = []
    for i, (load, load_noc, run, run_noc) in enumerate(specs):
        ops.append(Op(name=f"op{i}", kind="test", layer=None, inputs=(i - 1,) if i else (),
                      hbm_bytes=0, flops=0,
                      exec_plans=(ExecPlan(id=0, time_ns=run, space_bytes=0, noc_bytes=0,
                                           noc_ns=run_noc),),
                      preload_plans=(PreloadPlan(id=0, space_bytes=0, load_ns=load,
                                                 noc_ns=load_noc),),
                      warmup=(Warmup(preload=0, exec=0, time_ns=0),)))
    chip = Chip(name="port", cores=1, sram_bytes=1, hbm_bytes_per_s=1, clock_hz=1,
                noc=Noc(topology="all_to_all", link_bytes_per_s=1_000_000_000))
    return Instance(name="port", chip=chip, ops=tuple(ops))
