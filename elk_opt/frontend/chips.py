"""Chip presets (`frontend/chip_data/*.toml`, each citing its published figures) and user chips.

A chip file holds the `elk-instance/1` chip fields (name, cores, sram_bytes, hbm_bytes_per_s,
clock_hz, [noc]) plus an `[extra]` table of per-core figures the cost models and the simulator
need; they land in `Chip.extra` (and in the instance's chip object as extra keys). Missing
extras take the IPU Mk2 values in `EXTRA_DEFAULTS`. `noc_occupancy` (a word, not a figure)
says how the cost models report a plan's NoC port use by default (docs/models.md).
"""

from __future__ import annotations

import math
import os
import tomllib
from pathlib import Path
from typing import Any, Literal, cast

from elk_opt.errors import InputError, UsageError
from elk_opt.files import read_bytes
from elk_opt.io import chip_from_dict
from elk_opt.json_input import Reader
from elk_opt.problem import Chip

DEFAULT_CHIP = "ipu-pod4-hbm3e"
DATA_DIR = Path(__file__).with_name("chip_data")
MAX_TOML_BYTES = 2**24  # a chip file is a few hundred bytes; /dev/zero stops here

# Per-core figures of one IPU Mk2 tile (see chip_data/ipu-mk2.toml for the sources).
EXTRA_DEFAULTS: dict[str, float] = {
    "chips": 1,                          # physical chips the cores span
    "flops_per_cycle": 128,              # matmul flop per cycle per core
    "vector_elems_per_cycle": 4,         # elementwise results per cycle per core
    "sram_port_bytes_per_s": 32e9,       # per core SRAM port bandwidth
    "sync_ns": 150,                      # one barrier across all cores
    "hbm_latency_ns": 500,               # fixed cost of one preload
    "hop_ns": 2,                         # mesh router traversal
    "inter_chip_bytes_per_s": 320e9,     # chip-to-chip bandwidth per chip
    "inter_chip_launch_ns": 1000,        # S-curve link model: launch overhead
    "inter_chip_rtt_ns": 2000,           # S-curve link model: round-trip time
}
INTEGER_EXTRAS = {"chips"}

NocOccupancy = Literal["bytes", "bsp"]
NOC_OCCUPANCIES: tuple[str, ...] = ("bytes", "bsp")
# The IPU Mk2 is bulk-synchronous: its exchange phases and barrier syncs hold the port.
DEFAULT_NOC_OCCUPANCY: NocOccupancy = "bsp"


def chip_names() -> list[str]:
    return sorted(p.stem for p in DATA_DIR.glob("*.toml"))


def load_chip(name_or_path: str) -> Chip:
    """A preset by name, or a user chip TOML file by path."""
    if name_or_path in chip_names():
        return _load_toml(DATA_DIR / f"{name_or_path}.toml")
    path = Path(name_or_path)
    if path.suffix == ".toml" or os.path.exists(path):  # never raises, unlike Path's
        return _load_toml(path)
    raise UsageError(f"unknown chip {name_or_path!r}; presets: {', '.join(chip_names())} "
                     "(or give a .toml file)")


def _load_toml(path: Path) -> Chip:
    try:
        raw = tomllib.loads(read_bytes(path, MAX_TOML_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: invalid TOML: {e}") from None
    return chip_from_toml(raw, str(path))


def chip_from_toml(raw: dict[str, Any], source: str) -> Chip:
    """Validate a parsed chip file; errors name the file, the field and the value."""
    extra = raw.get("extra", {})
    if not isinstance(extra, dict):
        raise InputError(f"{source}: extra: must be a table, got {extra!r}")
    flat = {k: v for k, v in raw.items() if k != "extra"}
    for key in flat:
        if key not in {"name", "cores", "sram_bytes", "hbm_bytes_per_s", "clock_hz", "noc"}:
            raise InputError(f"{source}: {key}: unknown field (per-core figures go in [extra])")
    values: dict[str, Any] = {**EXTRA_DEFAULTS, "noc_occupancy": DEFAULT_NOC_OCCUPANCY}
    for key, value in extra.items():
        if key == "noc_occupancy":
            if value not in NOC_OCCUPANCIES:
                raise InputError(f"{source}: extra.noc_occupancy: must be one of "
                                 f"{', '.join(NOC_OCCUPANCIES)}, got {value!r}")
            values[key] = value
            continue
        if key not in EXTRA_DEFAULTS:
            raise InputError(f"{source}: extra.{key}: unknown field; known: "
                             f"{', '.join([*EXTRA_DEFAULTS, 'noc_occupancy'])}")
        ok = (isinstance(value, int | float) and not isinstance(value, bool) and value > 0
              and math.isfinite(value))
        if key in INTEGER_EXTRAS:
            ok = ok and isinstance(value, int)
        if not ok:
            kind = "a positive integer" if key in INTEGER_EXTRAS else "a finite positive number"
            raise InputError(f"{source}: extra.{key}: must be {kind}, got {value!r}")
        values[key] = value
    chip = chip_from_dict({**flat, **values}, Reader(source), "")
    if chip.cores % int(values["chips"]):
        raise InputError(f"{source}: extra.chips: {values['chips']} does not divide "
                         f"cores {chip.cores}")
    noc = chip.noc
    if noc.topology == "mesh" and noc.mesh_rows * noc.mesh_cols != chip.cores:
        raise InputError(f"{source}: noc.mesh_rows: {noc.mesh_rows} x mesh_cols "
                         f"{noc.mesh_cols} must equal cores {chip.cores}")
    return chip


def chip_figure(chip: Chip, key: str) -> float:
    """A per-core figure from `chip.extra`, defaulting to the IPU Mk2 value."""
    return float(chip.extra.get(key, EXTRA_DEFAULTS[key]))


def resolve_noc_occupancy(chip: Chip, requested: str | None = None) -> NocOccupancy:
    """The occupancy reading to build with: `requested`, else the chip's own, else the default.

    A chip read from an instance file may carry any `noc_occupancy` value; only the two known
    readings are accepted, so a typo never silently falls back.
    """
    value = requested if requested is not None else chip.extra.get("noc_occupancy",
                                                                    DEFAULT_NOC_OCCUPANCY)
    if value not in NOC_OCCUPANCIES:
        raise UsageError(f"unknown NoC occupancy {value!r}; choose one of "
                         f"{', '.join(NOC_OCCUPANCIES)}")
    return cast(NocOccupancy, value)
