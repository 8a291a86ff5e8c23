"""Chip presets and user chip files."""

import pytest

from elk_opt.cli import main
from elk_opt.errors import InputError, UsageError
from elk_opt.frontend.chips import DEFAULT_CHIP, chip_names, load_chip


def test_presets_load_with_published_figures():
    names = chip_names()
    assert DEFAULT_CHIP in names and "ipu-mk2" in names
    pod = load_chip(DEFAULT_CHIP)
    assert (pod.cores, pod.sram_bytes, pod.hbm_bytes_per_s) == (5888, 624 * 1024, 16 * 10**12)
    mk2 = load_chip("ipu-mk2")
    assert (mk2.cores, mk2.clock_hz) == (1472, 1_325_000_000)
    meshes = [load_chip(n) for n in names if load_chip(n).noc.topology == "mesh"]
    assert len(meshes) >= 2
    for chip in meshes:
        assert chip.noc.mesh_rows * chip.noc.mesh_cols == chip.cores and chip.noc.hbm_ports > 0
    for name in names:
        assert load_chip(name).extra["sram_port_bytes_per_s"] > 0


GOOD = """name = "mine"
cores = 64
sram_bytes = 1048576
hbm_bytes_per_s = 1_000_000_000_000
clock_hz = 1_000_000_000
[noc]
topology = "mesh"
link_bytes_per_s = 32_000_000_000
mesh_rows = 8
mesh_cols = 8
hbm_ports = 8
[extra]
flops_per_cycle = 512
"""


def test_user_toml(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(GOOD)
    chip = load_chip(str(path))
    assert chip.name == "mine" and chip.extra["flops_per_cycle"] == 512
    assert chip.extra["sync_ns"] > 0  # defaults fill the rest


@pytest.mark.parametrize("edit, message", [
    (("cores = 64", "cores = -1"), "cores: must be a positive integer, got -1"),
    (("mesh_rows = 8", "mesh_rows = 7"), "mesh_rows: 7 x mesh_cols 8 must equal cores 64"),
    (("flops_per_cycle = 512", "flops_per_cycle = \"fast\""), "extra.flops_per_cycle"),
    (("flops_per_cycle = 512", "warp_drive = 1"), "extra.warp_drive: unknown field"),
    (("flops_per_cycle = 512", "sync_ns = inf"), "extra.sync_ns: must be a finite positive "
                                                 "number, got inf"),
    (("topology = \"mesh\"", "topology = \"ring\""), "noc.topology"),
    (("cores = 64", "cores = "), "invalid TOML"),
])
def test_bad_user_toml_names_file_field_value(tmp_path, edit, message):
    path = tmp_path / "bad.toml"
    path.write_text(GOOD.replace(*edit))
    with pytest.raises(InputError, match="bad.toml") as err:
        load_chip(str(path))
    assert message in str(err.value)


def test_unknown_chip_and_cli_lists(capsys):
    with pytest.raises(UsageError, match="unknown chip"):
        load_chip("no-such-chip")
    assert main(["chips"]) == 0 and main(["models"]) == 0
    out = capsys.readouterr().out
    assert DEFAULT_CHIP in out and "llama2-70b" in out and "dit-xl-2" in out
