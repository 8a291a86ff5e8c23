"""`elk-opt chips`: the chip presets (each file in elk_opt/frontend/chip_data cites its figures)."""

from __future__ import annotations

import argparse

from elk_opt.frontend.chips import (
    DEFAULT_CHIP,
    chip_figure,
    chip_names,
    load_chip,
    resolve_noc_occupancy,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chips", help="list the chip presets", description=__doc__)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    for name in chip_names():
        c = load_chip(name)
        noc = c.noc
        shape = (f"mesh {noc.mesh_rows}x{noc.mesh_cols}, {noc.hbm_ports} HBM ports"
                 if noc.topology == "mesh" else "all-to-all")
        mark = " (default)" if name == DEFAULT_CHIP else ""
        print(f"{name:<20} {c.cores:>5} cores x {c.sram_bytes // 1024} KiB, "
              f"HBM {c.hbm_bytes_per_s / 1e12:g} TB/s, {c.clock_hz / 1e9:g} GHz, {shape}, "
              f"link {noc.link_bytes_per_s / 1e9:g} GB/s, "
              f"{int(chip_figure(c, 'chips'))} chip(s), NoC occupancy "
              f"{resolve_noc_occupancy(c)}{mark}")
    return 0
