"""Design-space sweeps: chip variation, timings, and a Dask cluster that reproduces local
results."""

import csv
from dataclasses import replace

import pytest

from elk_opt.cli import main
from elk_opt.errors import UsageError
from elk_opt.frontend.chips import load_chip
from elk_opt.io import load_plan
from elk_opt.studies.executors import run_all
from elk_opt.studies.sweep import Figure, run_sweep_cell, sweep_cells, vary


def test_vary_scales_one_parameter():
    chip = load_chip("ipu-pod4-hbm3e")
    assert vary(chip, "hbm", 2).hbm_bytes_per_s == 2 * chip.hbm_bytes_per_s
    assert vary(chip, "noc", 0.5).noc.link_bytes_per_s == chip.noc.link_bytes_per_s // 2
    assert vary(chip, "cores", 0.5).cores == chip.cores // 2
    assert vary(chip, "compute", 2).extra["flops_per_cycle"] == 2 * chip.extra["flops_per_cycle"]
    assert vary(chip, "hbm", 1).sram_bytes == chip.sram_bytes
    with pytest.raises(UsageError, match="mesh"):
        vary(load_chip("ipu-pod4-mesh"), "cores", 2)
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(UsageError, match="positive and finite"):
            vary(chip, "hbm", bad)


def small_cells(timing="shared-noc"):
    figure = Figure("test", "hbm", (0.5, 1.0, 2.0))
    return sweep_cells("llama2-7b", figure, ["basic"], batch=8, kv_len=256, layers=1,
                       timing=timing)


def points(cells):
    with run_all(run_sweep_cell, cells, "serial") as results:
        return sorted((o.cell for _c, o in results), key=lambda p: p.cell.value)


@pytest.mark.parametrize("timing", ["shared-noc", "separate-noc"])
def test_more_hbm_bandwidth_never_slows_the_plan(timing):
    swept = points(small_cells(timing))
    assert {p.cell.timing for p in swept} == {timing}
    analytic = [p.makespan_ns for p in swept]
    assert analytic == sorted(analytic, reverse=True)
    assert all(p.verified for p in swept)


def test_contention_only_slows_a_plan_against_section_5():
    # docs/spec.md section 6: the simulator with contention is never faster than section 5's timing
    assert all(p.simulated_ns >= p.makespan_ns for p in points(small_cells("separate-noc")))


def test_sweep_on_a_dask_cluster_equals_the_local_run():
    cells = small_cells()
    with run_all(run_sweep_cell, cells, "local", 2) as results:
        local = {c: replace(o.cell, solve_s=0) for c, o in results}
    with run_all(run_sweep_cell, cells, "dask", 2) as results:
        on_dask = {c: replace(o.cell, solve_s=0) for c, o in results}
    assert on_dask == local


def test_sweep_command_writes_csv_and_plot(tmp_path, capsys):
    assert main(["sweep", "--axis", "noc", "--values", "0.5,1", "--model", "llama2-7b",
                 "--layers", "1", "--batch", "4", "--kv-len", "128", "--methods", "basic",
                 "--timing", "separate-noc", "--executor", "serial", "-o", str(tmp_path)]) == 0
    rows = (tmp_path / "sweep.csv").read_text().splitlines()
    assert len(rows) == 3 and rows[0].startswith("model,mode")
    header = rows[0].split(",")
    assert all(r.split(",")[header.index("timing")] == "separate-noc" for r in rows[1:])
    assert (tmp_path / "sweep.png").stat().st_size > 0
    for row in csv.DictReader((tmp_path / "sweep.csv").open()):  # every plan kept, as scored
        assert row["plan"].startswith("plans/sweep/") and row["plan"].endswith(".plan.json.gz")
        assert load_plan(tmp_path / row["plan"]).claims.makespan_ns == int(row["makespan_ns"])
    capsys.readouterr()
    assert main(["verify", str(tmp_path)]) == 0
    assert "2 plans: 2 valid" in capsys.readouterr().out
    assert main(["sweep", "--figure", "99", "-o", str(tmp_path)]) == 2
    assert "no preset" in capsys.readouterr().err
