"""Table-driven cost model in the style of XLA's latency-hiding-scheduler cost model.

A table (`elk-cost-table/1`, written by `elk-opt collect`) holds measured performance:
GEMM throughput (flop/s) keyed by dtype over (batch, m, n, k), and collective throughput
(bytes/s) keyed by (kind, scheme) over transfer size and device count. Throughput, not latency,
is stored, so one number describes a point at any size.

Lookups: a measured point returns its own value. Between points, GEMM throughput is the
inverse-distance weighted average of the nearest measured points in log(batch, m, n, k);
collective throughput is the inverse-distance weighted average, in log size, of the two
measured sizes around the query (for each of the two nearest device counts, then weighted
across device counts in log devices), averaged in log throughput so that time stays monotone
in size. Past the largest measured size the throughput saturates: time = size / throughput of
the largest measured size. Below the smallest, time is that of the smallest (latency floor).
Measured times that shrink with size (noise) are raised to a running maximum when loaded.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from elk_opt.errors import InputError
from elk_opt.frontend.cost.analytic import AnalyticModel
from elk_opt.json_input import read_json

TABLE_FORMAT = "elk-cost-table/1"
NEAREST = 4  # GEMM points averaged
NOC_KIND = "exchange"  # collective kind the NoC transfers of the partition search look up
DTYPE_NAMES = {1: ("fp8",), 2: ("bf16", "fp16", "f16"), 4: ("fp32", "f32"), 8: ("fp64", "f64")}


@dataclass(frozen=True)
class GemmTable:
    """Measured GEMM throughput of one dtype."""

    points: np.ndarray  # shape (n, 4): batch, m, n, k
    flops_per_s: np.ndarray

    def throughput(self, batch: int, m: int, n: int, k: int) -> float:
        q = np.array([batch, m, n, k], dtype=float)
        exact = np.all(self.points == q, axis=1)
        if exact.any():
            return float(self.flops_per_s[exact][0])
        flops = 2.0 * self.points.prod(axis=1)
        if 2.0 * q.prod() > flops.max():
            largest = flops == flops.max()
            return float(self.flops_per_s[largest].max())
        dist = np.linalg.norm(np.log(self.points) - np.log(q), axis=1)
        near = np.argsort(dist, kind="stable")[:NEAREST]
        weights = 1.0 / dist[near] ** 2
        return float((weights * self.flops_per_s[near]).sum() / weights.sum())

    def time_ns(self, batch: int, m: int, n: int, k: int) -> float:
        return 2.0 * batch * m * n * k / self.throughput(batch, m, n, k) * 1e9


@dataclass(frozen=True)
class CurveTable:
    """Measured throughput of one (kind, scheme) collective at one device count."""

    sizes: tuple[float, ...]
    bytes_per_s: tuple[float, ...]

    @staticmethod
    def monotone(sizes: list[float], rates: list[float]) -> CurveTable:
        """Sorted by size, each time raised to at least the previous one."""
        pairs = sorted(zip(sizes, rates, strict=True))
        out_s, out_r, longest = [], [], 0.0
        for s, r in pairs:
            t = max(s / r, longest)
            longest = t
            out_s.append(s)
            out_r.append(s / t)
        return CurveTable(tuple(out_s), tuple(out_r))

    def log_throughput(self, size: float) -> float:
        s, r = self.sizes, self.bytes_per_s
        if size <= s[0]:  # latency floor: the smallest measured time
            return math.log(size * r[0] / s[0])
        if size >= s[-1]:  # saturation: the largest measured throughput
            return math.log(r[-1])
        i = bisect.bisect_left(s, size)
        if s[i] == size:
            return math.log(r[i])
        lo, hi = math.log(s[i - 1]), math.log(s[i])
        x = math.log(size)
        w_lo, w_hi = 1.0 / (x - lo), 1.0 / (hi - x)  # inverse distance in log size
        return (w_lo * math.log(r[i - 1]) + w_hi * math.log(r[i])) / (w_lo + w_hi)


@dataclass(frozen=True)
class CollectiveTable:
    """Throughput curves of one (kind, scheme), one per measured device count."""

    curves: Mapping[int, CurveTable]

    def throughput(self, size: float, devices: int) -> float:
        counts = sorted(self.curves)
        if devices in self.curves:
            return math.exp(self.curves[devices].log_throughput(size))
        i = bisect.bisect_left(counts, devices)
        near = [c for c in (counts[i - 1] if i > 0 else None,
                            counts[i] if i < len(counts) else None) if c is not None]
        if len(near) == 1:
            return math.exp(self.curves[near[0]].log_throughput(size))
        weights = [1.0 / abs(math.log(devices) - math.log(c)) for c in near]
        log_rate = sum(w * self.curves[c].log_throughput(size)
                       for w, c in zip(weights, near, strict=True)) / sum(weights)
        return math.exp(log_rate)

    def time_ns(self, size: float, devices: int) -> float:
        return size / self.throughput(size, devices) * 1e9 if size > 0 else 0.0


@dataclass(frozen=True)
class CostTable:
    source: str
    gemm: Mapping[str, GemmTable]
    collectives: Mapping[tuple[str, str], CollectiveTable]
    machine: Mapping[str, Any]

    def gemm_for(self, dtype_bytes: int) -> tuple[str, GemmTable] | None:
        """The GEMM table of this element size, else the nearest measured element size."""
        for name in DTYPE_NAMES.get(dtype_bytes, ()):
            if name in self.gemm:
                return name, self.gemm[name]
        if not self.gemm:
            return None
        name = min(self.gemm, key=lambda d: abs(_size_of(d) - dtype_bytes))
        return name, self.gemm[name]


def _size_of(dtype: str) -> int:
    return next((b for b, names in DTYPE_NAMES.items() if dtype in names), 4)


def load_table(path: str) -> CostTable:
    return table_from_dict(read_json(path), path)


def table_from_dict(raw: Any, source: str) -> CostTable:
    def fail(where: str, msg: str) -> InputError:
        return InputError(f"{source}: {where}: {msg}")

    if not isinstance(raw, dict) or raw.get("format") != TABLE_FORMAT:
        raise fail("format", f"must be {TABLE_FORMAT!r}")

    def positive(row: dict, key: str, where: str) -> float:
        value = row.get(key)
        if (not isinstance(value, int | float) or isinstance(value, bool) or value <= 0
                or not math.isfinite(value)):
            raise fail(f"{where}.{key}", f"must be a finite positive number, got {value!r}")
        return float(value)

    def rows(key: str) -> list:
        found = raw.get(key, [])
        if not isinstance(found, list):
            raise fail(key, f"must be a list, got {found!r}")
        return found

    gemm_rows: dict[str, list[tuple[list[float], float]]] = {}
    for i, row in enumerate(rows("gemm")):
        where = f"gemm[{i}]"
        if not isinstance(row, dict) or not isinstance(row.get("dtype"), str):
            raise fail(f"{where}.dtype", "must be a string")
        point = [positive(row, key, where) for key in ("batch", "m", "n", "k")]
        gemm_rows.setdefault(row["dtype"], []).append((point,
                                                      positive(row, "flops_per_s", where)))
    coll_rows: dict[tuple[str, str], dict[int, list[tuple[float, float]]]] = {}
    for i, row in enumerate(rows("collectives")):
        where = f"collectives[{i}]"
        if not isinstance(row, dict):
            raise fail(where, "must be an object")
        for key in ("kind", "scheme"):
            if not isinstance(row.get(key), str):
                raise fail(f"{where}.{key}", f"must be a string, got {row.get(key)!r}")
        devices = row.get("devices")
        if not isinstance(devices, int) or isinstance(devices, bool) or devices < 1:
            raise fail(f"{where}.devices", f"must be a positive integer, got {devices!r}")
        coll_rows.setdefault((row["kind"], row["scheme"]), {}).setdefault(devices, []).append(
            (positive(row, "bytes", where), positive(row, "bytes_per_s", where)))
    gemm = {d: GemmTable(np.array([p for p, _ in rows]), np.array([r for _, r in rows]))
            for d, rows in gemm_rows.items()}
    coll = {key: CollectiveTable({dev: CurveTable.monotone([s for s, _ in pts],
                                                           [r for _, r in pts])
                                  for dev, pts in by_dev.items()})
            for key, by_dev in coll_rows.items()}
    machine = raw.get("machine", {})
    return CostTable(source, gemm, coll, machine if isinstance(machine, dict) else {})


@dataclass(frozen=True)
class TableModel:
    """GEMM and NoC costs from a measured table; everything else from the analytic model."""

    base: AnalyticModel
    table: CostTable

    name = "table"
    noc_occupancy = None  # the chip's reading
    producer_shuffles = False

    def metadata(self) -> dict[str, Any]:
        noc = self._noc_table()
        return {**self.base.metadata(), "name": self.name, "table": self.table.source,
                "machine": dict(self.table.machine),
                "gemm_dtypes": sorted(self.table.gemm),
                "noc_from_table": noc is not None,
                "collectives": sorted(f"{k}/{s}" for k, s in self.table.collectives)}

    def matmul_ns(self, g: int, m: int, k: int, n: int, dtype_bytes: int, steps: int = 1) -> float:
        found = self.table.gemm_for(dtype_bytes)
        if found is None or g * m * k * n == 0:
            return self.base.matmul_ns(g, m, k, n, dtype_bytes, steps)
        return found[1].time_ns(g, m, n, k) / steps

    def vector_ns(self, elems: float, bytes_touched: float, ops_per_elem: float,
                  operands: int = 1) -> float:
        return self.base.vector_ns(elems, bytes_touched, ops_per_elem, operands)

    def partial_sum_ns(self, elems: float) -> float:
        return self.base.partial_sum_ns(elems)

    def min_cores(self, points: int, cores: int) -> None:
        return self.base.min_cores(points, cores)

    def reduce_ns(self, partials: int, bytes_per_core: float) -> float:
        return self.noc_ns(bytes_per_core, partials)

    @property
    def sync_ns(self) -> float:
        return self.base.sync_ns

    def _noc_table(self) -> CollectiveTable | None:
        schemes = {s: t for (k, s), t in self.table.collectives.items() if k == NOC_KIND}
        if not schemes:
            return None
        topology = self.base.chip.noc.topology
        return schemes.get(topology) or schemes[sorted(schemes)[0]]

    def noc_ns(self, bytes_per_core: float, group: int) -> float:
        table = self._noc_table()
        if table is None:
            return self.base.noc_ns(bytes_per_core, group)
        return table.time_ns(bytes_per_core, group)

    def load_noc_ns(self, hbm_bytes: float, replicas: int, cores: int) -> float:
        return self.base.load_noc_ns(hbm_bytes, replicas, cores)

    def load_ns(self, hbm_bytes: float, replicas: int, cores: int) -> float:
        return self.base.load_ns(hbm_bytes, replicas, cores)
