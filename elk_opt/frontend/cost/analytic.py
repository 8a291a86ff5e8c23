"""The analytic cost model of one core, its NoC share, HBM loads and inter-chip links.

Calibrated from the chip file's published figures (chip_data/*.toml): matmul flop per cycle,
SRAM port bytes per second, exchange (NoC) bytes per second per core or per mesh link, BSP sync
cost, HBM bandwidth and latency, and the S-curve of chip-to-chip links. Every function is
monotone in the bytes and work it is given, so a plan that moves more data never costs less.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil, sqrt
from typing import Any

from elk_opt.frontend.chips import chip_figure
from elk_opt.frontend.cost.links import SCurveLink
from elk_opt.problem import Chip

MATMUL_K_ALIGN = 16  # AMP units consume k in blocks of 16 (IPU: 16 fp16 per pass)
MATMUL_N_ALIGN = 4  # and produce 4 output columns per pass
LAUNCH_CYCLES = 100  # codelet (vertex) launch per compute phase


@dataclass(frozen=True)
class AnalyticModel:
    chip: Chip

    name = "analytic"
    noc_occupancy = None  # the chip's reading
    producer_shuffles = False  # a consumer pays for re-laying out its inputs

    @property
    def clock(self) -> float:
        return float(self.chip.clock_hz)

    def metadata(self) -> dict[str, Any]:
        keys = ("flops_per_cycle", "vector_elems_per_cycle", "sram_port_bytes_per_s",
                "sync_ns", "hbm_latency_ns", "hop_ns", "inter_chip_bytes_per_s",
                "inter_chip_launch_ns", "inter_chip_rtt_ns", "chips")
        return {"name": self.name, **{k: chip_figure(self.chip, k) for k in keys}}

    # ------------------------------------------------------------------ compute
    def matmul_ns(self, g: int, m: int, k: int, n: int, dtype_bytes: int, steps: int = 1) -> float:
        """One of `steps` equal steps of one core computing g products [m,k] x [k,n]."""
        if g * m * k * n == 0:
            return 0.0
        kp = ceil(k / MATMUL_K_ALIGN) * MATMUL_K_ALIGN
        np_ = ceil(n / MATMUL_N_ALIGN) * MATMUL_N_ALIGN
        flops = 2 * g * m * kp * np_
        compute = flops / chip_figure(self.chip, "flops_per_cycle")
        touched = g * (m * k + k * n) * dtype_bytes + g * m * n * 4
        port = touched * self.clock / chip_figure(self.chip, "sram_port_bytes_per_s")
        return (max(compute, port) + LAUNCH_CYCLES) * 1e9 / self.clock / steps

    def vector_ns(self, elems: float, bytes_touched: float, ops_per_elem: float,
                  operands: int = 1) -> float:
        """One core applying `ops_per_elem` vector operations to `elems` elements (the bytes
        touched already say how many operands there are)."""
        if elems <= 0:
            return 0.0
        compute = elems * ops_per_elem / chip_figure(self.chip, "vector_elems_per_cycle")
        port = bytes_touched * self.clock / chip_figure(self.chip, "sram_port_bytes_per_s")
        return (max(compute, port) + LAUNCH_CYCLES) * 1e9 / self.clock

    @property
    def sync_ns(self) -> float:
        return chip_figure(self.chip, "sync_ns")

    def partial_sum_ns(self, elems: float) -> float:
        """Adding two fp32 partial results per element."""
        return self.vector_ns(elems, 2 * elems * 4, 1.0)

    def min_cores(self, points: int, cores: int) -> None:
        """No fixed least: the search's divisor rule (within 4x of the widest split) holds."""
        return None

    # ------------------------------------------------------------------ data movement
    @property
    def cores_per_chip(self) -> int:
        return self.chip.cores // int(chip_figure(self.chip, "chips"))

    def inter_chip(self) -> SCurveLink:
        return SCurveLink(chip_figure(self.chip, "inter_chip_bytes_per_s"),
                          chip_figure(self.chip, "inter_chip_launch_ns"),
                          chip_figure(self.chip, "inter_chip_rtt_ns"))

    def noc_ns(self, bytes_per_core: float, group: int) -> float:
        """Every core receives `bytes_per_core` from the other cores of its group of `group`.

        On-chip: the core's exchange port (all-to-all) or its mesh link, plus the hops across
        the group on a mesh. Groups wider than one chip send the off-chip share of their
        traffic over the chip-to-chip links (S-curve), all of a chip's cores at once.
        """
        if bytes_per_core <= 0:
            return 0.0
        noc = self.chip.noc
        on_chip = bytes_per_core * 1e9 / noc.link_bytes_per_s
        if noc.topology == "mesh":
            on_chip += 2 * sqrt(min(group, self.chip.cores)) * chip_figure(self.chip, "hop_ns")
        per_chip = self.cores_per_chip
        if group <= per_chip:
            return on_chip
        off_fraction = 1.0 - per_chip / group
        off_chip = self.inter_chip().time_ns(off_fraction * bytes_per_core * per_chip)
        return max(on_chip, off_chip)

    def reduce_ns(self, partials: int, bytes_per_core: float) -> float:
        """Reduce-scatter of `bytes_per_core` of partials across a group of `partials` cores."""
        return self.noc_ns(bytes_per_core, partials)

    def load_noc_ns(self, hbm_bytes: float, replicas: int, cores: int) -> float:
        """NoC distribution time of a preload: what it holds the port for (section 5b, `bsp`).

        All-to-all: each of the `cores` cores receives its share, replicas included, through
        its exchange port; on a mesh the HBM ports at the edge inject through their links.
        """
        if hbm_bytes <= 0:
            return 0.0
        noc = self.chip.noc
        delivered = hbm_bytes * replicas
        if noc.topology == "mesh":
            return delivered / noc.hbm_ports * 1e9 / noc.link_bytes_per_s
        return delivered / min(cores, self.chip.cores) * 1e9 / noc.link_bytes_per_s

    def load_ns(self, hbm_bytes: float, replicas: int, cores: int) -> float:
        """Preload `hbm_bytes` from HBM into the SRAM of `cores` cores, each byte on `replicas`.

        Load time is the longer of the HBM time and the NoC distribution time, plus the HBM
        latency. Replicas are copied on chip, never re-read from HBM.
        """
        if hbm_bytes <= 0:
            return 0.0
        hbm = hbm_bytes * 1e9 / self.chip.hbm_bytes_per_s
        return max(hbm, self.load_noc_ns(hbm_bytes, replicas, cores)) + \
            chip_figure(self.chip, "hbm_latency_ns")
