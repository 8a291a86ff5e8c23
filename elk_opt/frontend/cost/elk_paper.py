"""The `elk-paper` cost preset: the Elk paper's published implementation's cost rules.

The rules are read from the calibration data measured from that implementation
(docs/calibration.md and its one-layer table of Llama2-13B decode); each constant
below says where it comes from. They are applied over this project's own partition search on
any model and chip: figures the rules take from the IPU (cycle counts, the 5.5 GB/s exchange)
are scaled to the chip's own compute, clock and port where the chip differs.

- Matmul, per core, g products [m, k] x [k, n], m and n swapped so that m >= n (README):
  cycles = g (24 ceil(m/6) ceil(k/16) ceil(n/16) + 514 ceil(k/16) ceil(n/16) + 113 ceil(n/16)
  + 173); a single decode row pads n = 1 to 16. Its peak is 128 flop per cycle, so on a chip
  with another `flops_per_cycle` the cycles scale by 128 / flops_per_cycle. A plan rotating an
  operand in r steps computes r tiles of k / r (the table's temporal plans: comp = r x rule).
- Vector ops: each elementary operation on e elements with a operands costs
  (110 + 90 a) + (0.25 + 0.25 a) e cycles (unary 200 + 0.5 e, binary 290 + 0.75 e: a fit to
  every elementwise plan of the table, within 2 cycles); the per-element part scales by
  4 / `vector_elems_per_cycle`.
- Barrier sync: 118 cycles, x1.25 on a device of more than one chip (README). The table
  charges 148 cycles even to a 32-core op: a BSP sync involves every core of the device.
- Operand shifts and output shuffles: 0.56 cycles per 2-byte element (README: about 4.7 GB/s
  per core) -- 0.8205 of the per-core exchange port as the implementation reads it (below).
  Only a matmul's result is shuffled (to the layout of its consumer, 0.56 cycles per output
  element; a fit to the table's matmul plans gives 0.66); elementwise ops, reductions and norms keep
  their layout (their table plans pay one sync, or their gathers, and nothing else), so inputs
  arrive for free: the producer pays.
- A split reduction of p partials (a matmul's split K, a norm's or softmax's split row):
  one barrier sync per partial, in series (README), plus 7.5 syncs of set-up and final gather
  in all, and its fp32 partials shifted once (1.12 cycles per output element). The table's
  `Sum` plans cost exactly (p + 7.5) syncs; a fit to its 17 matmul plans without rotation
  gives 153 p + 1.74 O + 1,091 cycles (O output elements per core) against this rule's
  147.5 p + 1.68 O + 1,106, within 3% on each plan. Adding the partials is part of each gather
  step: the table's matmul compute is the cycle rule alone.
- Core use: a plan must use at least 0.9 P / (P + 2 N) of the N cores, where P is the op's
  iteration-space size (README's 84% for RMSNorm's 32 x 5120; 90% for a large matmul), and
  any core count may be used, not only divisors of N: this is what splits RMSNorm's sum 155
  ways and costs it 17-18 us.
- Loads: HBM time = bytes / HBM rate, NoC distribution time = bytes x copies / (cores x
  per-core port), load = max of the two (threshold 1, no latency: the table's rule). The
  implementation reads "16,000 GB/s" as 16,000 x 2^20 bytes per ms and 5.5 GB/s as
  5.5 x 2^20 bytes per ms, so both rates are the chip's figures x 1.048576.
- NoC occupancy: `bsp` (an execute holds the port for its syncs, shifts and shuffles; a load
  for its distribution), the implementation's contention rule, unless overridden.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import ceil
from typing import Any

from elk_opt.frontend.chips import chip_figure
from elk_opt.problem import Chip

PAPER_FLOPS_PER_CYCLE = 128  # the cycle rule's peak: 2 x 6 x 16 x 16 / 24
PAPER_VECTOR_ELEMS_PER_CYCLE = 4  # the IPU's f16v4 vector unit, behind the per-element fit
SYNC_CYCLES = 118
CROSS_CHIP_SYNC = 1.25
SHIFT_CYCLES_PER_BYTE = 0.56 / 2
PAPER_PORT_BYTES_PER_S = 5.5 * 2**20 * 1000  # the implementation's 5.5 GB/s
PAPER_CLOCK_HZ = 1.325e9
GB_AS_MIB_PER_MS = 2**20 / 1e6  # "GB/s" read as 2^20 bytes per ms
REDUCTION_FIXED_SYNCS = 7.5  # a split reduction's syncs besides one per partial (Sum plans)
PHASE_SYNCS = 2  # of those, what the search already counts: the reduction's and the op's own
CORE_USE = 0.9  # least core use 0.9 P / (P + 2 N)


@dataclass(frozen=True)
class ElkPaperModel:
    chip: Chip

    name = "elk-paper"
    noc_occupancy = "bsp"
    producer_shuffles = True

    @cached_property
    def _ns_per_cycle(self) -> float:
        return 1e9 / self.chip.clock_hz

    def _ns(self, cycles: float) -> float:
        return cycles * self._ns_per_cycle

    @cached_property
    def _matmul_scale(self) -> float:
        """Cycles of the rule's 128-flop core on this chip's core."""
        return PAPER_FLOPS_PER_CYCLE / chip_figure(self.chip, "flops_per_cycle")

    @cached_property
    def _vector_scale(self) -> float:
        return PAPER_VECTOR_ELEMS_PER_CYCLE / chip_figure(self.chip, "vector_elems_per_cycle")

    def metadata(self) -> dict[str, Any]:
        return {"name": self.name, "sync_ns": self.sync_ns,
                "shift_bytes_per_s": self.shift_bytes_per_s,
                "hbm_bytes_per_s": self.hbm_bytes_per_s,
                "port_bytes_per_s": self.port_bytes_per_s,
                "flops_per_cycle": chip_figure(self.chip, "flops_per_cycle"),
                "vector_elems_per_cycle": chip_figure(self.chip, "vector_elems_per_cycle"),
                "chips": int(chip_figure(self.chip, "chips")),
                "min_core_use": "0.9 P / (P + 2 N)"}

    # ------------------------------------------------------------------ rates
    @cached_property
    def hbm_bytes_per_s(self) -> float:
        return self.chip.hbm_bytes_per_s * GB_AS_MIB_PER_MS

    @cached_property
    def port_bytes_per_s(self) -> float:
        return self.chip.noc.link_bytes_per_s * GB_AS_MIB_PER_MS

    @cached_property
    def shift_bytes_per_s(self) -> float:
        """0.56 cycles per 2 bytes on the paper's IPU, scaled by this chip's port."""
        paper = PAPER_CLOCK_HZ / SHIFT_CYCLES_PER_BYTE
        return paper * self.port_bytes_per_s / PAPER_PORT_BYTES_PER_S

    # ------------------------------------------------------------------ compute
    def matmul_ns(self, g: int, m: int, k: int, n: int, dtype_bytes: int, steps: int = 1) -> float:
        """One of `steps` equal steps (along k) of g products [m,k] x [k,n] on one core."""
        if g * m * k * n == 0:
            return 0.0
        k = ceil(k / steps)
        big, small = max(m, n), min(m, n)
        kb, nb = ceil(k / 16), ceil(small / 16)
        cycles = g * (24 * ceil(big / 6) * kb * nb + 514 * kb * nb + 113 * nb + 173)
        return self._ns(cycles * self._matmul_scale)

    def vector_ns(self, elems: float, bytes_touched: float, ops_per_elem: float,
                  operands: int = 1) -> float:
        """`ops_per_elem` elementary vector operations of `operands` operands on `elems`."""
        if elems <= 0:
            return 0.0
        per_op = (110 + 90 * operands) + (0.25 + 0.25 * operands) * elems * self._vector_scale
        return self._ns(ops_per_elem * per_op)

    @cached_property
    def sync_ns(self) -> float:
        chips = int(chip_figure(self.chip, "chips"))
        return self._ns(SYNC_CYCLES * (CROSS_CHIP_SYNC if chips > 1 else 1.0))

    # ------------------------------------------------------------------ data movement
    def noc_ns(self, bytes_per_core: float, group: int) -> float:
        """Shifting or shuffling `bytes_per_core` into each core (any group: the rule has no
        distance term)."""
        return bytes_per_core * 1e9 / self.shift_bytes_per_s if bytes_per_core > 0 else 0.0

    def reduce_ns(self, partials: int, bytes_per_core: float) -> float:
        """A split reduction of `partials` partials: one sync each in series, the fixed syncs
        the search does not count itself, and the partials shifted once."""
        if partials <= 1:
            return 0.0
        serial = partials + REDUCTION_FIXED_SYNCS - PHASE_SYNCS
        return serial * self.sync_ns + self.noc_ns(bytes_per_core, partials)

    def partial_sum_ns(self, elems: float) -> float:
        """Adding partial results: part of each gather step (`reduce_ns`), not extra."""
        return 0.0

    def min_cores(self, points: int, cores: int) -> int:
        """Least cores a plan of an op with `points` iteration points must use."""
        return max(1, ceil(CORE_USE * points / (points + 2 * cores) * cores))

    def load_noc_ns(self, hbm_bytes: float, replicas: int, cores: int) -> float:
        if hbm_bytes <= 0:
            return 0.0
        noc = self.chip.noc
        delivered = hbm_bytes * replicas
        if noc.topology == "mesh":
            return delivered / noc.hbm_ports * 1e9 / self.port_bytes_per_s
        return delivered / min(cores, self.chip.cores) * 1e9 / self.port_bytes_per_s

    def load_ns(self, hbm_bytes: float, replicas: int, cores: int) -> float:
        if hbm_bytes <= 0:
            return 0.0
        hbm = hbm_bytes * 1e9 / self.hbm_bytes_per_s
        return max(hbm, self.load_noc_ns(hbm_bytes, replicas, cores))
