"""`elk-opt plans`: one op's plans as text and as a time-versus-space plot."""

from elk_opt.cli import main
from elk_opt.io import load_instance


def test_plans_text_and_plot(tmp_path, capsys):
    inst, png = tmp_path / "i.json", tmp_path / "front.png"
    assert main(["instance", "llama2-13b", "--layers", "1", "-o", str(inst)]) == 0
    assert main(["plans", str(inst), "--op", "layers.0.mlp.up_proj/MatMul",
                 "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "split" in out and "warm-up" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["plans", str(inst), "--op", "layers.0.mlp.up_proj"]) == 2
    err = capsys.readouterr().err
    assert "did you mean layers.0.mlp.up_proj/MatMul" in err
    assert len(err.splitlines()) == 1 and "more)" in err  # the first names and a count


def test_plans_wrong_name_lists_the_names(tmp_path, capsys):
    inst = tmp_path / "s.json"
    assert main(["instance", "synthetic", "--ops", "3", "-o", str(inst)]) == 0
    capsys.readouterr()
    assert main(["plans", str(inst), "--op", "nope"]) == 2
    err = capsys.readouterr().err
    names = load_instance(inst).ops
    assert len(err.splitlines()) == 1 and "0..2" in err
    assert all(op.name in err for op in names) and "more)" not in err


def test_plans_on_synthetic_instance(tmp_path):
    inst, png = tmp_path / "s.json", tmp_path / "s.png"
    assert main(["instance", "synthetic", "--ops", "12", "-o", str(inst)]) == 0
    assert main(["plans", str(inst), "--op", "3", "--plot", str(png)]) == 0
    assert png.exists()
