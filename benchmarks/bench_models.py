"""Speed of building real instances: the full Llama2-70B decode instance (80 layers).

Each run is a fresh Python process (so its peak RSS is the build's own), repeated `--runs`
times; medians are reported. The baseline in the same run is the partition search without the
per-shape cache (every op searched on its own), timed over the same ops.

    python benchmarks/bench_models.py [--model llama2-70b] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time, tempfile, os
t0 = time.perf_counter()
from elk_opt.frontend.zoo import model_graph, model_instance
from elk_opt.io import save_instance
from elk_opt.frontend.build import work_from_dict
from elk_opt.frontend.partition import search
from elk_opt.frontend.cost import get_cost_model
model = sys.argv[1]
t1 = time.perf_counter()
graph = model_graph(model)
t2 = time.perf_counter()
inst = model_instance(model)
t3 = time.perf_counter()
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "i.json")
    save_instance(path, inst)
    size = os.path.getsize(path)
t4 = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
cost = get_cost_model("analytic", inst.chip)
t5 = time.perf_counter()
for op in inst.ops:
    search(work_from_dict(op.extra["work"]), inst.chip.cores, inst.chip.sram_bytes, cost)
t6 = time.perf_counter()
print(json.dumps({"ops": len(inst.ops), "import_s": t1 - t0, "graph_s": t2 - t1,
                  "build_s": t3 - t2, "save_s": t4 - t3, "json_bytes": size, "peak_rss": peak,
                  "uncached_search_s": t6 - t5,
                  "distinct": inst.extra["partition_search"]["distinct_ops"]}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="llama2-70b")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    runs = []
    for k in range(args.runs):
        out = subprocess.run([sys.executable, "-c", CHILD, args.model], check=True,
                             capture_output=True, text=True).stdout
        runs.append(json.loads(out))
        print(f"run {k + 1}: {runs[-1]}", file=sys.stderr)

    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    build = med("build_s")
    print(f"model {args.model}: {runs[0]['ops']} ops, {runs[0]['distinct']} distinct shapes, "
          f"{args.runs} runs (medians)")
    print(f"  graph generation (onnx.helper)  {med('graph_s'):8.2f} s")
    print(f"  instance build (import+search)  {build:8.2f} s   (includes its own graph)")
    print(f"  save JSON                       {med('save_s'):8.2f} s   "
          f"({runs[0]['json_bytes'] / 2**20:.1f} MiB)")
    print(f"  peak RSS of the process         {med('peak_rss') / 2**30:8.3f} GiB")
    print(f"  baseline: search every op       {med('uncached_search_s'):8.2f} s   "
          f"(cached build is {med('uncached_search_s') / build:.1f}x faster)")


if __name__ == "__main__":
    main()
