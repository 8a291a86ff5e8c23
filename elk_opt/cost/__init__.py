"""Cost models: what one core's compute, the NoC, HBM loads and chip links cost.

`get_cost_model(spec, chip)`: "analytic" (the default, calibrated from the chip's published
figures) or "table:PATH" (measured GEMM and collective tables, XLA latency-hiding-scheduler
style, falling back to the analytic model for what the table lacks). Both offer the same
methods, used by the partition search: matmul_ns, vector_ns, noc_ns (exchange time), load_ns,
load_noc_ns (a preload's NoC distribution time), sync_ns, and metadata() recorded in the
instance. How a plan's port use is reported (`bytes` or `bsp`, chips.noc_occupancy) is the
partition search's business: every cost model gives what both readings need.
"""

from __future__ import annotations

from typing import Any, Protocol

from elk_opt.errors import UsageError
from elk_opt.problem import Chip

DEFAULT_COST_MODEL = "analytic"


class CostModel(Protocol):
    name: str

    def metadata(self) -> dict[str, Any]: ...
    def matmul_ns(self, g: int, m: int, k: int, n: int, dtype_bytes: int) -> float: ...
    def vector_ns(self, elems: float, bytes_touched: float, ops_per_elem: float) -> float: ...
    def noc_ns(self, bytes_per_core: float, group: int) -> float: ...
    def load_ns(self, hbm_bytes: float, replicas: int, cores: int) -> float: ...
    def load_noc_ns(self, hbm_bytes: float, replicas: int, cores: int) -> float: ...
    @property
    def sync_ns(self) -> float: ...


def cost_model_names() -> list[str]:
    return ["analytic", "table:PATH"]


def get_cost_model(spec: str, chip: Chip) -> CostModel:
    from elk_opt.cost.analytic import AnalyticModel

    if spec == "analytic":
        return AnalyticModel(chip)
    if spec.startswith("table:") and len(spec) > len("table:"):
        from elk_opt.cost.table import TableModel, load_table

        return TableModel(AnalyticModel(chip), load_table(spec[len("table:"):]))
    raise UsageError(f"unknown cost model {spec!r}; choose analytic or table:PATH "
                     "(a table written by `elk-opt collect`)")
