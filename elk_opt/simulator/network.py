"""The chip's shared resources and dimension-order routing of the two traffic patterns.

Every core runs every op (SPMD), each core moving the same number of bytes, so the traffic of
an activity is a *pattern* scaled by bytes per core. Two patterns exist:

- `hbm`: data read from HBM and delivered to the cores, `1/hbm_ports` of every core's bytes
  from each HBM port (address interleaving);
- `ring`: core-to-core traffic of T10-style rotating tiles: tile k sends to tile k+1 (the last
  to the first) in the tile order of the mapping.

Resources (capacities in bytes/s), with their use per byte per core of each pattern:

- `hbm`: the HBM bandwidth (`chip.hbm_bytes_per_s`); the `hbm` pattern uses `cores` bytes.
- `core_in` / `core_out`: one core's NoC ingress and egress link (`noc.link_bytes_per_s`); all
  cores carry the same load, so one resource stands for all of them.
- `noc`: the aggregate NoC capacity, `chip.extra["noc_aggregate_bytes_per_s"]` when given,
  otherwise `cores * link_bytes_per_s`.
- `sram`: one core's SRAM port, `chip.extra["sram_port_bytes_per_s"]` when given, otherwise
  16 bytes per clock cycle (one 128-bit access per cycle, IPU-class tiles); local computation,
  incoming preload writes and remote reads all go through it.
- mesh only: every directed link between neighbouring routers (`link_bytes_per_s`), loaded by
  dimension-order routes: XY (along the row first, then along the column) between cores. The
  `hbm_ports` HBM ports sit on edge routers, spread evenly around the mesh perimeter (clockwise
  from the top left corner); a port's routes first go into the mesh, away from its edge (YX
  from the top and bottom edges, XY from the left and right ones), then turn once. (Plain XY
  from a top-edge port would send every port's traffic along the edge row first.)

A mesh chip therefore has every resource of the all-to-all chip with the same numbers, plus its
links; `all_to_all_twin` builds that all-to-all chip ("the same aggregate bandwidth").

The tile-to-core mapping comes from the lowered program (`elk_opt.lower.tile_to_core`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from elk_opt.lower import check_mesh, tile_to_core
from elk_opt.problem import Chip, Noc

SRAM_PORT_BYTES_PER_CYCLE = 16
BASE_RESOURCES = ("hbm", "core_in", "core_out", "noc", "sram")
HBM, CORE_IN, CORE_OUT, NOC, SRAM = range(len(BASE_RESOURCES))


def sram_port_bytes_per_s(chip: Chip) -> int:
    value = chip.extra.get("sram_port_bytes_per_s")
    return int(value) if value else SRAM_PORT_BYTES_PER_CYCLE * chip.clock_hz


def noc_aggregate_bytes_per_s(chip: Chip) -> int:
    value = chip.extra.get("noc_aggregate_bytes_per_s")
    return int(value) if value else chip.cores * chip.noc.link_bytes_per_s


def all_to_all_twin(chip: Chip) -> Chip:
    """The all-to-all chip with the same cores, SRAM, HBM and per-core NoC bandwidth."""
    noc = Noc(topology="all_to_all", link_bytes_per_s=chip.noc.link_bytes_per_s)
    return dataclasses.replace(chip, name=f"{chip.name}-all-to-all", noc=noc)


def hbm_port_routers(rows: int, cols: int, ports: int) -> list[tuple[int, bool]]:
    """Each HBM port's edge router (row-major core id), evenly spaced around the perimeter,
    and whether it sits on the top or bottom edge (its routes then go along the column first)."""
    ring = [((0, c), True) for c in range(cols)]
    ring += [((r, cols - 1), False) for r in range(1, rows)]
    ring += [((rows - 1, c), True) for c in range(cols - 2, -1, -1)]
    ring += [((r, 0), False) for r in range(rows - 2, 0, -1)]
    seen: dict[tuple[int, int], bool] = {}
    for rc, vertical in ring:  # a single row or column visits routers twice
        seen.setdefault(rc, vertical)
    routers = list(seen.items())
    picks = [routers[(2 * k + 1) * len(routers) // (2 * ports)] for k in range(ports)]
    return [(r * cols + c, vertical) for (r, c), vertical in picks]


def link_name(rows: int, cols: int, k: int) -> str:
    """Name of directed mesh link k in `dor_link_loads` order, e.g. `(3,4)->(3,5)`."""
    horizontal = rows * (cols - 1)
    vertical = (rows - 1) * cols
    if k < 2 * horizontal:
        r, c = divmod(k % horizontal, cols - 1)
        ends = ((r, c), (r, c + 1))
        return "{}->{}".format(*(ends if k < horizontal else ends[::-1])).replace(" ", "")
    k -= 2 * horizontal
    c, r = divmod(k % vertical, rows - 1)
    ends = ((r, c), (r + 1, c))
    return "{}->{}".format(*(ends if k < vertical else ends[::-1])).replace(" ", "")


def dor_link_loads(rows: int, cols: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray,
                   column_first: np.ndarray | None = None) -> np.ndarray:
    """Bytes on every directed mesh link when `weight[k]` bytes go from core src[k] to dst[k].

    Links are ordered east (rows x cols-1), west, south (rows-1 x cols), north. Routes are
    dimension-ordered: XY (along the source's row, then along the destination's column), or YX
    where `column_first` is set.
    """
    sr, sc = np.divmod(src, cols)
    dr, dc = np.divmod(dst, cols)
    yx = np.zeros(len(src), dtype=bool) if column_first is None else column_first
    row = np.where(yx, dr, sr)  # the row of the horizontal segment
    col = np.where(yx, sc, dc)  # the column of the vertical segment
    east = np.zeros((rows, cols + 1))
    west = np.zeros((rows, cols + 1))
    south = np.zeros((cols, rows + 1))
    north = np.zeros((cols, rows + 1))
    # a hop between columns c and c+1 (rows r and r+1) is link c (r): difference arrays, cumsum
    go = dc > sc
    np.add.at(east, (row[go], sc[go]), weight[go])
    np.add.at(east, (row[go], dc[go]), -weight[go])
    go = dc < sc
    np.add.at(west, (row[go], dc[go]), weight[go])
    np.add.at(west, (row[go], sc[go]), -weight[go])
    go = dr > sr
    np.add.at(south, (col[go], sr[go]), weight[go])
    np.add.at(south, (col[go], dr[go]), -weight[go])
    go = dr < sr
    np.add.at(north, (col[go], dr[go]), weight[go])
    np.add.at(north, (col[go], sr[go]), -weight[go])
    parts = [np.cumsum(a, axis=1)[:, :-2].ravel() for a in (east, west, south, north)]
    return np.concatenate(parts)


@dataclass(frozen=True, eq=False)
class Network:
    """Resource capacities and the per-byte-per-core use of each traffic pattern."""

    chip: Chip
    links: np.ndarray  # mesh link ids (`dor_link_loads` order) of the resources after the base
    capacity: np.ndarray  # bytes/s per resource
    hbm_pattern: np.ndarray  # resource bytes per byte per core read from HBM
    ring_pattern: np.ndarray  # resource bytes per byte per core shifted between tiles
    sram_unit: np.ndarray  # resource bytes per byte per core through the SRAM port

    @property
    def topology(self) -> str:
        return self.chip.noc.topology

    def name(self, k: int) -> str:
        if k < len(BASE_RESOURCES):
            return BASE_RESOURCES[k]
        noc = self.chip.noc
        return link_name(noc.mesh_rows, noc.mesh_cols, int(self.links[k - len(BASE_RESOURCES)]))


def build_network(chip: Chip, mapping: tuple[int, ...] | None = None) -> Network:
    """The resources of `chip`; `mapping` (tile -> core) defaults to `tile_to_core(chip)`."""
    n = chip.cores
    if mapping is None:
        mapping = tile_to_core(chip)[1]
    used = np.zeros(0, dtype=int)
    capacity = [chip.hbm_bytes_per_s, chip.noc.link_bytes_per_s, chip.noc.link_bytes_per_s,
                noc_aggregate_bytes_per_s(chip), sram_port_bytes_per_s(chip)]
    hbm = [n, 1, 0, n, 0]
    ring = [0, 1, 1, n, 0] if n > 1 else [0, 0, 0, 0, 0]
    sram = [0, 0, 0, 0, 1]
    if chip.noc.topology == "mesh":
        check_mesh(chip)
        rows, cols, ports = chip.noc.mesh_rows, chip.noc.mesh_cols, chip.noc.hbm_ports
        cores = np.arange(n)
        tiles = np.asarray(mapping)
        ring_links = dor_link_loads(rows, cols, tiles, np.roll(tiles, -1), np.ones(n))
        routers, vertical = zip(*hbm_port_routers(rows, cols, ports), strict=True)
        hbm_links = dor_link_loads(rows, cols, np.repeat(routers, n), np.tile(cores, ports),
                                   np.full(n * ports, 1.0 / ports), np.repeat(vertical, n))
        used = np.flatnonzero((ring_links > 0) | (hbm_links > 0))
        capacity += [chip.noc.link_bytes_per_s] * len(used)
        hbm += list(hbm_links[used])
        ring += list(ring_links[used])
        sram += [0] * len(used)
    return Network(chip=chip, links=used, capacity=np.asarray(capacity, dtype=float),
                   hbm_pattern=np.asarray(hbm, dtype=float),
                   ring_pattern=np.asarray(ring, dtype=float),
                   sram_unit=np.asarray(sram, dtype=float))
