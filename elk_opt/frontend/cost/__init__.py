"""Cost models: what one core's compute, the NoC, HBM loads and chip links cost.

`get_cost_model(spec, chip)`: "analytic" (the default, calibrated from the chip's published
figures), "elk-paper" (the cost rules of the Elk paper's published implementation, read from
its calibration data; `elk_opt/frontend/cost/elk_paper.py`) or "table:PATH" (measured GEMM and
collective tables, XLA latency-hiding-scheduler style, falling back to the analytic model for
what the table lacks). All offer the same methods, used by the partition search, and
metadata() recorded in the instance. How a plan's port use is reported (`bytes` or `bsp`,
chips.resolve_noc_occupancy) is the partition search's business: every cost model gives what
both readings need; a preset may name its own reading (`noc_occupancy`, None: the chip's).
"""

from __future__ import annotations

from typing import Any, Protocol

from elk_opt.errors import UsageError
from elk_opt.problem import Chip

DEFAULT_COST_MODEL = "analytic"


class CostModel(Protocol):
    name: str
    noc_occupancy: str | None  # the preset's own NoC occupancy reading; None: the chip's
    # Who pays for moving an activation between layouts: True, the producer (a matmul
    # shuffles its result; inputs arrive free); False, the consumer (re-lays out its inputs).
    producer_shuffles: bool

    def metadata(self) -> dict[str, Any]: ...
    def matmul_ns(self, g: int, m: int, k: int, n: int, dtype_bytes: int,
                  steps: int = 1) -> float: ...
    def vector_ns(self, elems: float, bytes_touched: float, ops_per_elem: float,
                  operands: int = 1) -> float: ...
    def partial_sum_ns(self, elems: float) -> float: ...
    def noc_ns(self, bytes_per_core: float, group: int) -> float: ...
    def reduce_ns(self, partials: int, bytes_per_core: float) -> float: ...
    def min_cores(self, points: int, cores: int) -> int | None: ...
    def load_ns(self, hbm_bytes: float, replicas: int, cores: int) -> float: ...
    def load_noc_ns(self, hbm_bytes: float, replicas: int, cores: int) -> float: ...
    @property
    def sync_ns(self) -> float: ...


def get_cost_model(spec: str, chip: Chip) -> CostModel:
    from elk_opt.frontend.cost.analytic import AnalyticModel

    if spec == "analytic":
        return AnalyticModel(chip)
    if spec == "elk-paper":
        from elk_opt.frontend.cost.elk_paper import ElkPaperModel

        return ElkPaperModel(chip)
    if spec.startswith("table:") and len(spec) > len("table:"):
        from elk_opt.frontend.cost.table import TableModel, load_table

        return TableModel(AnalyticModel(chip), load_table(spec[len("table:"):]))
    raise UsageError(f"unknown cost model {spec!r}; choose analytic, elk-paper or table:PATH "
                     "(a table written by `elk-opt collect`)")
