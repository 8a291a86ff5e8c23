"""Every method under a time limit: wall time and peak memory of `elk-opt solve`.

PYTHONPATH=. python benchmarks/bench_limits.py [--limit 5] [--repeats 1]
    [--instances llama2-7b,llama2-70b,chain] [--methods basic,...] [--timings shared-noc,...]
    [--kill-after 300]

Each run is a fresh `elk-opt solve --time-limit LIMIT --threads 1` process: its wall time
includes Python's start-up, imports, reading the instance and writing the plan; peak memory
is the child's maximum resident set size. Two baselines, measured in the same run: a process
that imports every method's modules and loads the instance (what any run costs before
solving), and `solve --method basic` without a limit (what a run costs around a method that
takes no time: reading, the bounds, timing and writing the plan). "over" is a run's wall time
minus the Basic baseline's minus the limit: its overshoot. "method s" is the plan's own
`claims.wall_s`, the method's time inside the process (its warm start excluded).
A run still going after --kill-after seconds is killed (exit -9).

`--solve-only` times just the method call instead (the warm start included), in a fresh
process per run after the instance is loaded: `methods.solve` under --time-limit LIMIT, so
"over" is that time minus the limit, free of start-up, import and loading time, which on a
loaded machine swamp a few seconds of overshoot. Run it against an older checkout by
pointing PYTHONPATH there (the child imports elk_opt from it). Instances: the Llama2-7B and
Llama2-70B decode steps (579 and 1,443 ops) and a 20,000-op ONNX chain (MatMul with a
1024x1024 weight, then Relu, alternating; the weights are external data that is never read).
Exact methods start from no warm start except polish (its default, elk-full); cpsat and ilp
that cannot build a model within the limit exit 2, as documented.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

METHODS = ("basic", "static", "lhs", "elk-dyn", "elk-full", "cpsat", "ilp", "polish")
TIMINGS = ("separate-noc", "shared-noc")
BASELINE = ("import sys; from elk_opt.io import load_instance; import formulations.ilp, "
            "formulations.cpsat, formulations.polish, heuristics.elk_full, heuristics.lhs, "
            "heuristics.static; load_instance(sys.argv[1])")
CHAIN_OPS = 20_000


def run(argv: list[str], kill_after: float) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB, exit code) of one child process, killed after
    `kill_after` seconds."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    killed = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if not killed and time.perf_counter() - started > kill_after:
            proc.kill()
            killed = True
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return time.perf_counter() - started, usage.ru_maxrss / 1024, proc.returncode


def method_s(plan: Path) -> float:
    """The plan's claimed wall_s, read and then removed (NaN when no plan was written)."""
    try:
        seconds = float(json.loads(plan.read_text())["claims"]["wall_s"])
    except (OSError, ValueError, KeyError):
        return math.nan
    plan.unlink()
    return seconds


def chain_onnx(path: Path, ops: int) -> None:
    """An ONNX chain of `ops` ops: MatMul with an external weight, then Relu."""
    from onnx import TensorProto, helper, save

    bf = TensorProto.BFLOAT16
    nodes, weights, prev = [], [], "x0"
    for k in range(ops // 2):
        w = TensorProto(name=f"w{k}", data_type=bf, dims=[1024, 1024])
        w.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "absent.bin"), ("offset", "0"),
                           ("length", str(2 * 1024 * 1024))):
            entry = w.external_data.add()
            entry.key, entry.value = key, value
        weights.append(w)
        nodes.append(helper.make_node("MatMul", [prev, f"w{k}"], [f"m{k}"], name=f"layers.{k}.mm"))
        nodes.append(helper.make_node("Relu", [f"m{k}"], [f"x{k + 1}"], name=f"layers.{k}.relu"))
        prev = f"x{k + 1}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x0", bf, [32, 1024])],
                              [helper.make_tensor_value_info(prev, bf, None)], weights)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


CHILD = """
import sys, time
from elk_opt.io import load_instance
from elk_opt.methods import solve
from elk_opt.solution import SolveOptions
instance = load_instance(sys.argv[1])
started = time.perf_counter()
solve(instance, sys.argv[2], SolveOptions(timing=sys.argv[3], time_limit_s=float(sys.argv[4]),
                                          threads=1))
print(time.perf_counter() - started)
"""


def solve_only(path: Path, method: str, timing: str, limit: float, kill_after: float) -> float:
    """Seconds `methods.solve` took in a fresh process (NaN if it failed or was killed)."""
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, str(path), method, timing,
                               str(limit)], capture_output=True, text=True, timeout=kill_after)
        return float(done.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return math.nan


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=float, default=5.0)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--instances", default="llama2-7b,llama2-70b,chain")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--timings", default=",".join(TIMINGS))
    ap.add_argument("--kill-after", type=float, default=300.0)
    ap.add_argument("--solve-only", action="store_true",
                    help="time only methods.solve, in a fresh process per run")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    cli = [sys.executable, "-m", "elk_opt.cli"]
    print(f"time limit {args.limit:g} s; medians of {args.repeats}; "
          f"load average {os.getloadavg()[0]:.1f} at the start")
    print("| instance | run | timing | wall s | over | method s | peak MiB | exit |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.instances.split(","):
        path = tmp / f"{name}.json"
        source = [name]
        if name == "chain":
            chain_onnx(tmp / "chain.onnx", CHAIN_OPS)
            source = [str(tmp / "chain.onnx")]
        subprocess.run([*cli, "instance", *source, "-q", "-o", str(path)], check=True,
                       capture_output=True)
        if args.solve_only:
            _solve_only_rows(name, path, args)
            continue
        plan = tmp / "p.json"
        base = [run([sys.executable, "-c", BASELINE, str(path)], args.kill_after)
                for _ in range(args.repeats)]
        print(f"| {name} | baseline: import and load | - | "
              f"{statistics.median(r[0] for r in base):.2f} | - | - | "
              f"{statistics.median(r[1] for r in base):,.0f} | {base[0][2]} |", flush=True)
        basic = [*cli, "solve", str(path), "--method", "basic", "-q", "-o", str(plan)]
        base = [(*run(basic, args.kill_after), method_s(plan)) for _ in range(args.repeats)]
        base_wall = statistics.median(r[0] for r in base)
        print(f"| {name} | baseline: basic, no limit | shared-noc | {base_wall:.2f} | - | "
              f"{statistics.median(r[3] for r in base):.2f} | "
              f"{statistics.median(r[1] for r in base):,.0f} | {base[0][2]} |", flush=True)
        for timing in args.timings.split(","):
            for method in args.methods.split(","):
                argv = [*cli, "solve", str(path), "--method", method, "--timing", timing,
                        "--threads", "1", "--time-limit", str(args.limit), "-q",
                        "-o", str(plan)]
                results = [(*run(argv, args.kill_after), method_s(plan))
                           for _ in range(args.repeats)]
                wall = statistics.median(r[0] for r in results)
                mib = statistics.median(r[1] for r in results)
                inside = [r[3] for r in results if r[3] == r[3]]
                shown = f"{statistics.median(inside):.2f}" if inside else "-"
                print(f"| {name} | {method} | {timing} | {wall:.2f} | "
                      f"{wall - base_wall - args.limit:+.2f} | {shown} | {mib:,.0f} | "
                      f"{results[0][2]} |", flush=True)


def _solve_only_rows(name: str, path: Path, args: argparse.Namespace) -> None:
    for timing in args.timings.split(","):
        for method in args.methods.split(","):
            runs = [solve_only(path, method, timing, args.limit, args.kill_after)
                    for _ in range(args.repeats)]
            wall = statistics.median(runs)
            print(f"| {name} | {method} (solve only) | {timing} | {wall:.2f} | "
                  f"{wall - args.limit:+.2f} | - | - | - |", flush=True)


if __name__ == "__main__":
    main()
