"""One definition of a readable file, two implementations: `elk_opt.io.load_plan` and `verify`.

Every file in the corpus below has one expected verdict, and both tools must give it:
- "unreadable": verify exits 2 and the loader raises InputError, both naming the field;
- "untimable": the program or the chosen plan ids break R1, R3 or R4. verify reads the file,
  reports the broken rule and exits 1 (R5 and R6 unchecked); the loader, which must hand out
  plans that can be evaluated, raises InputError naming the field (docs/spec.md section 8);
- "readable": the loader returns a plan and verify exits with the given code (0 valid, 1 for
  R2, R5 or R6 broken).
"""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from typing import Any

import pytest

from elk_opt.errors import InputError
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import load_plan, plan_to_dict
from elk_opt.methods import solve
from verify import check
from verify.cli import verify_file

LIMIT = 2**53 - 1
TIME_LIMIT = 2**51


def base_plan() -> dict[str, Any]:
    """A valid shared-noc plan that uses every optional field: noc_ns, release_ns, metadata."""
    raw = plan_to_dict(solve(synthetic_instance(ops=8, plans=2, seed=1), "basic"))
    ops = raw["instance"]["ops"]
    ops[2]["exec_plans"][0]["noc_ns"] = 900
    ops[4]["preload_plans"][0]["noc_ns"] = 0
    raw["release_ns"] = {"P3": 5, "E5": 10}
    raw["timing"] = "shared-noc"
    raw["tool"] = {"name": "test", "nested": [[1, 2], {"a": None}]}
    raw["claims"]["makespan_ns"] = check(raw).makespan_ns
    assert check(raw).valid
    return raw


BASE = base_plan()
Edit = Callable[[dict[str, Any]], Any]


def nest(depth: int) -> Any:
    """Lists `depth` levels deep."""
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def op(k: int) -> Callable[[dict], dict]:
    return lambda r: r["instance"]["ops"][k]


def chip(r: dict) -> dict:
    return r["instance"]["chip"]


def add_to_longest_run(r: dict, target: int) -> None:
    """Make the instance's summed longest load + execute-with-warm-up exactly `target` ns."""
    total = 0
    for o in r["instance"]["ops"]:
        times = {p["id"]: p["time_ns"] for p in o["exec_plans"]}
        total += max(q["load_ns"] for q in o["preload_plans"]) + max(
            times[w["exec"]] + w["time_ns"] for w in o["warmup"])
    o = r["instance"]["ops"][0]
    times = {p["id"]: p["time_ns"] for p in o["exec_plans"]}
    longest = max(o["warmup"], key=lambda w: times[w["exec"]] + w["time_ns"])
    plan = next(p for p in o["exec_plans"] if p["id"] == longest["exec"])
    plan["time_ns"] += target - total


def incompatible_pair(r: dict) -> None:
    o = r["instance"]["ops"][1]
    pairs = {(w["preload"], w["exec"]) for w in o["warmup"]}
    q, p = next((q["id"], p["id"]) for q in o["preload_plans"] for p in o["exec_plans"]
                if (q["id"], p["id"]) not in pairs)
    r["choice"][1] = {"preload": q, "exec": p}


def swap_dependent_executes(r: dict) -> None:
    prog = r["program"]
    prog.remove("P2")
    prog.insert(0, "P2")
    a, b = prog.index("E1"), prog.index("E2")  # op 2 reads op 1
    prog[a], prog[b] = prog[b], prog[a]


# (name, edit of the base plan or a whole text, verdict, field named in both messages, code)
CORPUS: list[tuple[str, Edit | str, str, str, int]] = [
    # the document
    ("not an object", "[1, 2]", "unreadable", "must be", 2),
    ("empty file", "", "unreadable", "invalid JSON", 2),
    ("bad JSON", '{"format": ', "unreadable", "invalid JSON", 2),
    ("NaN literal", json.dumps(BASE).replace('"wall_s": ', '"wall_s": NaN, "w": '),
     "unreadable", "NaN", 2),
    ("Infinity literal", json.dumps(BASE).replace('"flops": ', '"flops": -Infinity, "f": ', 1),
     "unreadable", "Infinity", 2),
    ("nested 50,000 deep", '{"a":' * 50_000 + "1" + "}" * 50_000, "unreadable", "nested", 2),
    ("5,001-digit integer", json.dumps(BASE).replace('"flops": ', '"flops": ' + "7" * 5001
                                                      + ', "f": ', 1),
     "unreadable", "instance.ops[0].flops", 2),
    ("5,001-digit integer in metadata",
     json.dumps(BASE).replace('"tool": ', '"tool": [' + "9" * 5001 + '], "t": '),
     "unreadable", "tool[0]", 2),
    ("missing format", lambda r: r.pop("format"), "unreadable", "format", 2),
    ("wrong format", lambda r: r.update(format="elk-plan/2"), "unreadable", "format", 2),
    ("format not a string", lambda r: r.update(format=1), "unreadable", "format", 2),
    # timing
    ("unknown timing", lambda r: r.update(timing="shared"), "unreadable", "timing", 2),
    ("timing in capitals", lambda r: r.update(timing="SHARED-NOC"), "unreadable", "timing", 2),
    ("null timing", lambda r: r.update(timing=None), "unreadable", "timing", 2),
    ("numeric timing", lambda r: r.update(timing=5), "unreadable", "timing", 2),
    ("list timing", lambda r: r.update(timing=["shared-noc"]), "unreadable", "timing", 2),
    ("absent timing (separate-noc, claim off)", lambda r: r.pop("timing"), "readable", "", 1),
    # instance
    ("missing instance", lambda r: r.pop("instance"), "unreadable", "instance", 2),
    ("instance not an object", lambda r: r.update(instance=[]), "unreadable", "instance", 2),
    ("instance format", lambda r: r["instance"].update(format="elk-instance/0"), "unreadable",
     "instance.format", 2),
    ("instance name 5", lambda r: r["instance"].update(name=5), "unreadable", "instance.name", 2),
    ("instance name missing", lambda r: r["instance"].pop("name"), "unreadable",
     "instance.name", 2),
    ("no ops", lambda r: r["instance"].update(ops=[]), "unreadable", "instance.ops", 2),
    ("ops not a list", lambda r: r["instance"].update(ops={}), "unreadable", "instance.ops", 2),
    ("ops missing", lambda r: r["instance"].pop("ops"), "unreadable", "instance.ops", 2),
    # chip
    ("chip missing", lambda r: r["instance"].pop("chip"), "unreadable", "instance.chip", 2),
    ("chip name 5", lambda r: chip(r).update(name=5), "unreadable", "instance.chip.name", 2),
    ("cores 0", lambda r: chip(r).update(cores=0), "unreadable", "instance.chip.cores", 2),
    ("cores negative", lambda r: chip(r).update(cores=-4), "unreadable", "chip.cores", 2),
    ("cores fractional", lambda r: chip(r).update(cores=1.5), "unreadable", "chip.cores", 2),
    ("cores string", lambda r: chip(r).update(cores="2"), "unreadable", "chip.cores", 2),
    ("cores true", lambda r: chip(r).update(cores=True), "unreadable", "chip.cores", 2),
    ("cores 2**53", lambda r: chip(r).update(cores=2**53), "unreadable", "chip.cores", 2),
    ("sram 0", lambda r: chip(r).update(sram_bytes=0), "unreadable", "chip.sram_bytes", 2),
    ("hbm rate missing", lambda r: chip(r).pop("hbm_bytes_per_s"), "unreadable",
     "chip.hbm_bytes_per_s", 2),
    ("clock 2**70", lambda r: chip(r).update(clock_hz=2**70), "unreadable", "chip.clock_hz", 2),
    ("noc missing", lambda r: chip(r).pop("noc"), "unreadable", "chip.noc", 2),
    ("noc a string", lambda r: chip(r).update(noc="mesh"), "unreadable", "chip.noc", 2),
    ("topology ring", lambda r: chip(r)["noc"].update(topology="ring"), "unreadable",
     "noc.topology", 2),
    ("topology 5", lambda r: chip(r)["noc"].update(topology=5), "unreadable", "noc.topology", 2),
    ("link 0", lambda r: chip(r)["noc"].update(link_bytes_per_s=0), "unreadable",
     "noc.link_bytes_per_s", 2),
    ("mesh with 0 rows", lambda r: chip(r)["noc"].update(topology="mesh", mesh_rows=0,
                                                          mesh_cols=4, hbm_ports=2),
     "unreadable", "noc.mesh_rows", 2),
    ("mesh without columns", lambda r: chip(r)["noc"].update(topology="mesh", mesh_rows=4,
                                                              hbm_ports=2) or
     chip(r)["noc"].pop("mesh_cols"), "unreadable", "noc.mesh_cols", 2),
    ("a sound mesh", lambda r: chip(r)["noc"].update(topology="mesh", mesh_rows=4, mesh_cols=4,
                                                      hbm_ports=2), "readable", "", 0),
    ("negative mesh_rows off a mesh", lambda r: chip(r)["noc"].update(mesh_rows=-1),
     "unreadable", "noc.mesh_rows", 2),
    ("mesh fields absent off a mesh", lambda r: [chip(r)["noc"].pop(k) for k in
                                                 ("mesh_rows", "mesh_cols", "hbm_ports")],
     "readable", "", 0),
    # ops
    ("op not an object", lambda r: r["instance"]["ops"].__setitem__(3, "op"), "unreadable",
     "instance.ops[3]", 2),
    ("op name 5", lambda r: op(2)(r).update(name=5), "unreadable", "ops[2].name", 2),
    ("op kind missing", lambda r: op(2)(r).pop("kind"), "unreadable", "ops[2].kind", 2),
    ("op layer missing", lambda r: op(2)(r).pop("layer"), "unreadable", "ops[2].layer", 2),
    ("op layer string", lambda r: op(2)(r).update(layer="x"), "unreadable", "ops[2].layer", 2),
    ("op layer 2**60", lambda r: op(2)(r).update(layer=2**60), "unreadable", "ops[2].layer", 2),
    ("op layer negative", lambda r: op(2)(r).update(layer=-3), "readable", "", 0),
    ("op layer null", lambda r: op(2)(r).update(layer=None), "readable", "", 0),
    ("inputs a string", lambda r: op(2)(r).update(inputs="1"), "unreadable", "ops[2].inputs", 2),
    ("input negative", lambda r: op(2)(r).update(inputs=[-1]), "unreadable",
     "ops[2].inputs[0]", 2),
    ("input forward", lambda r: op(2)(r).update(inputs=[5]), "unreadable", "ops[2].inputs[0]", 2),
    ("input itself", lambda r: op(2)(r).update(inputs=[2]), "unreadable", "ops[2].inputs[0]", 2),
    ("input 2**60", lambda r: op(2)(r).update(inputs=[2**60]), "unreadable",
     "ops[2].inputs[0]", 2),
    ("hbm_bytes negative", lambda r: op(1)(r).update(hbm_bytes=-1), "unreadable",
     "ops[1].hbm_bytes", 2),
    ("flops 2**53", lambda r: op(1)(r).update(flops=2**53), "unreadable", "ops[1].flops", 2),
    ("flops 2**53 - 1", lambda r: op(1)(r).update(flops=LIMIT), "readable", "", 0),
    # execute plans
    ("no exec plans", lambda r: op(1)(r).update(exec_plans=[]), "unreadable",
     "ops[1].exec_plans", 2),
    ("exec plans missing", lambda r: op(1)(r).pop("exec_plans"), "unreadable",
     "ops[1].exec_plans", 2),
    ("exec plan a number", lambda r: op(1)(r)["exec_plans"].__setitem__(0, 3), "unreadable",
     "ops[1].exec_plans[0]", 2),
    ("exec id duplicate", lambda r: op(1)(r)["exec_plans"][1].update(id=0), "unreadable",
     "ops[1].exec_plans[1].id", 2),
    ("exec time negative", lambda r: op(1)(r)["exec_plans"][0].update(time_ns=-1), "unreadable",
     "ops[1].exec_plans[0].time_ns", 2),
    ("exec time fractional", lambda r: op(1)(r)["exec_plans"][0].update(time_ns=10.5),
     "unreadable", "exec_plans[0].time_ns", 2),
    ("exec time 2**70", lambda r: op(1)(r)["exec_plans"][0].update(time_ns=2**70), "unreadable",
     "exec_plans[0].time_ns", 2),
    ("exec space missing", lambda r: op(1)(r)["exec_plans"][0].pop("space_bytes"), "unreadable",
     "exec_plans[0].space_bytes", 2),
    ("exec noc_bytes missing", lambda r: op(1)(r)["exec_plans"][0].pop("noc_bytes"),
     "unreadable", "exec_plans[0].noc_bytes", 2),
    ("exec noc_ns negative", lambda r: op(2)(r)["exec_plans"][0].update(noc_ns=-1),
     "unreadable", "ops[2].exec_plans[0].noc_ns", 2),
    ("exec noc_ns fractional", lambda r: op(2)(r)["exec_plans"][0].update(noc_ns=2.5),
     "unreadable", "ops[2].exec_plans[0].noc_ns", 2),
    ("exec noc_ns string", lambda r: op(2)(r)["exec_plans"][0].update(noc_ns="900"),
     "unreadable", "ops[2].exec_plans[0].noc_ns", 2),
    ("exec noc_ns null", lambda r: op(2)(r)["exec_plans"][0].update(noc_ns=None), "unreadable",
     "ops[2].exec_plans[0].noc_ns", 2),
    ("exec noc_ns 2**53", lambda r: op(2)(r)["exec_plans"][0].update(noc_ns=2**53),
     "unreadable", "ops[2].exec_plans[0].noc_ns", 2),
    # preload plans
    ("no preload plans", lambda r: op(1)(r).update(preload_plans=[]), "unreadable",
     "ops[1].preload_plans", 2),
    ("preload id duplicate", lambda r: op(1)(r)["preload_plans"][1].update(id=0), "unreadable",
     "ops[1].preload_plans[1].id", 2),
    ("preload id missing", lambda r: op(1)(r)["preload_plans"][1].pop("id"), "unreadable",
     "ops[1].preload_plans[1].id", 2),
    ("load negative", lambda r: op(1)(r)["preload_plans"][0].update(load_ns=-7), "unreadable",
     "preload_plans[0].load_ns", 2),
    ("preload space string", lambda r: op(1)(r)["preload_plans"][0].update(space_bytes="1"),
     "unreadable", "preload_plans[0].space_bytes", 2),
    ("preload noc_ns negative", lambda r: op(4)(r)["preload_plans"][0].update(noc_ns=-1),
     "unreadable", "ops[4].preload_plans[0].noc_ns", 2),
    ("preload noc_ns boolean", lambda r: op(4)(r)["preload_plans"][0].update(noc_ns=False),
     "unreadable", "ops[4].preload_plans[0].noc_ns", 2),
    # warm-up pairs
    ("no warmup", lambda r: op(1)(r).update(warmup=[]), "unreadable", "ops[1].warmup", 2),
    ("warmup not a list", lambda r: op(1)(r).update(warmup={}), "unreadable", "ops[1].warmup", 2),
    ("warmup unknown preload", lambda r: op(1)(r)["warmup"][0].update(preload=9), "unreadable",
     "ops[1].warmup[0].preload", 2),
    ("warmup unknown exec", lambda r: op(1)(r)["warmup"][0].update(exec=9), "unreadable",
     "ops[1].warmup[0].exec", 2),
    ("warmup pair twice", lambda r: op(1)(r)["warmup"].append(dict(op(1)(r)["warmup"][0])),
     "unreadable", "ops[1].warmup[3]", 2),
    ("warmup time negative", lambda r: op(1)(r)["warmup"][0].update(time_ns=-2), "unreadable",
     "ops[1].warmup[0].time_ns", 2),
    ("warmup entry a list", lambda r: op(1)(r)["warmup"].__setitem__(0, [0, 0, 5]),
     "unreadable", "ops[1].warmup[0]", 2),
    # sums that must stay exact in float64
    ("longest run exactly 2**51", lambda r: add_to_longest_run(r, TIME_LIMIT), "readable", "", 0),
    ("longest run above 2**51", lambda r: add_to_longest_run(r, TIME_LIMIT + 1), "unreadable",
     "instance.ops", 2),
    ("space sum above 2**53", lambda r: [o["exec_plans"][0].update(space_bytes=2**52)
                                         for o in r["instance"]["ops"][:3]],
     "unreadable", "instance.ops", 2),
    # choice
    ("choice missing", lambda r: r.pop("choice"), "unreadable", "choice", 2),
    ("choice an object", lambda r: r.update(choice={}), "unreadable", "choice", 2),
    ("choice too short", lambda r: r["choice"].pop(), "unreadable", "choice", 2),
    ("choice entry a number", lambda r: r["choice"].__setitem__(2, 0), "unreadable",
     "choice[2]", 2),
    ("choice exec missing", lambda r: r["choice"][2].pop("exec"), "unreadable",
     "choice[2].exec", 2),
    ("choice exec negative", lambda r: r["choice"][2].update(exec=-1), "unreadable",
     "choice[2].exec", 2),
    ("choice preload string", lambda r: r["choice"][2].update(preload="0"), "unreadable",
     "choice[2].preload", 2),
    ("choice exec 2**53", lambda r: r["choice"][2].update(exec=2**53), "unreadable",
     "choice[2].exec", 2),
    ("choice exec id unknown", lambda r: r["choice"][2].update(exec=99), "untimable R4",
     "choice[2].exec", 1),
    ("choice preload id unknown", lambda r: r["choice"][5].update(preload=42), "untimable R4",
     "choice[5].preload", 1),
    ("choice incompatible pair", incompatible_pair, "untimable R4", "choice[1]", 1),
    # program
    ("program missing", lambda r: r.pop("program"), "unreadable", "program", 2),
    ("program a string", lambda r: r.update(program="P0 E0"), "unreadable", "program", 2),
    ("program entry X1", lambda r: r["program"].append("X1"), "untimable R1", "program[16]", 1),
    # an entry that is not a string is not a program entry at all (issue 20): unreadable
    ("program entry a number", lambda r: r["program"].insert(0, 5), "unreadable", "program[0]",
     2),
    ("program entry null", lambda r: r["program"].insert(0, None), "unreadable", "program[0]",
     2),
    ("program entry a list", lambda r: r["program"].insert(0, ["P0"]), "unreadable",
     "program[0]", 2),
    ("program entry deep", lambda r: r["program"].insert(0, nest(900)), "unreadable",
     "program[0]", 2),
    ("program entry with a newline", lambda r: r["program"].__setitem__(0, r["program"][0] + "\n"),
     "untimable R1", "program[0]", 1),
    ("program op out of range", lambda r: r["program"].append("P8"), "untimable R1",
     "program[16]", 1),
    ("program op with a leading 0", lambda r: r["program"].__setitem__(0, "P00"),
     "untimable R1", "program[0]", 1),
    ("program E twice", lambda r: r["program"].append("E7"), "untimable R1", "program[16]", 1),
    ("program P twice", lambda r: r["program"].insert(3, "P0"), "untimable R1", "program[3]", 1),
    ("program without E3", lambda r: r["program"].remove("E3"), "untimable R1", "program", 1),
    ("program empty", lambda r: r.update(program=[]), "untimable R1", "program", 1),
    ("preload after its execute", lambda r: r["program"].remove("P6") or
     r["program"].insert(r["program"].index("E6") + 1, "P6"), "untimable R3", "program", 1),
    ("executes out of dependency order", swap_dependent_executes, "readable", "", 1),
    # release times
    ("release_ns a list", lambda r: r.update(release_ns=[]), "unreadable", "release_ns", 2),
    ("release_ns null", lambda r: r.update(release_ns=None), "unreadable", "release_ns", 2),
    ("release negative", lambda r: r["release_ns"].update(P3=-1), "unreadable",
     "release_ns.P3", 2),
    ("release fractional", lambda r: r["release_ns"].update(P3=0.5), "unreadable",
     "release_ns.P3", 2),
    ("release above 2**51", lambda r: r["release_ns"].update(P3=TIME_LIMIT + 1), "unreadable",
     "release_ns.P3", 2),
    ("release at 2**51", lambda r: r["release_ns"].update(P3=TIME_LIMIT), "readable", "", 1),
    ("release of no instruction", lambda r: r["release_ns"].update(X=3), "untimable R1",
     "release_ns.X", 1),
    ("release of op out of range", lambda r: r["release_ns"].update(E9=3), "untimable R1",
     "release_ns.E9", 1),
    # claims
    ("claims absent", lambda r: r.pop("claims"), "readable", "", 0),
    ("claims null", lambda r: r.update(claims=None), "unreadable", "claims", 2),
    ("claims a list", lambda r: r.update(claims=[]), "unreadable", "claims", 2),
    ("claims method missing", lambda r: r["claims"].pop("method"), "unreadable",
     "claims.method", 2),
    ("claims method 5", lambda r: r["claims"].update(method=5), "unreadable", "claims.method", 2),
    ("claims status unknown", lambda r: r["claims"].update(status="great"), "unreadable",
     "claims.status", 2),
    ("claims status missing", lambda r: r["claims"].pop("status"), "unreadable",
     "claims.status", 2),
    ("claims makespan missing", lambda r: r["claims"].pop("makespan_ns"), "unreadable",
     "claims.makespan_ns", 2),
    ("claims makespan negative", lambda r: r["claims"].update(makespan_ns=-1), "unreadable",
     "claims.makespan_ns", 2),
    ("claims makespan string", lambda r: r["claims"].update(makespan_ns="1"), "unreadable",
     "claims.makespan_ns", 2),
    ("claims makespan 2**53", lambda r: r["claims"].update(makespan_ns=2**53), "unreadable",
     "claims.makespan_ns", 2),
    ("claims makespan wrong", lambda r: r["claims"].update(makespan_ns=1), "readable", "", 1),
    ("claims bound negative", lambda r: r["claims"].update(lower_bound_ns=-1), "unreadable",
     "claims.lower_bound_ns", 2),
    ("claims bound a string", lambda r: r["claims"].update(lower_bound_ns="x"), "unreadable",
     "claims.lower_bound_ns", 2),
    ("claims bound null", lambda r: r["claims"].update(lower_bound_ns=None), "readable", "", 0),
    ("claims bound above makespan", lambda r: r["claims"].update(lower_bound_ns=10**12),
     "readable", "", 1),
    ("claims unproven optimal", lambda r: r["claims"].update(status="optimal"), "readable", "", 1),
    ("claims wall_s fast", lambda r: r["claims"].update(wall_s="fast"), "unreadable",
     "claims.wall_s", 2),
    ("claims wall_s negative", lambda r: r["claims"].update(wall_s=-0.5), "unreadable",
     "claims.wall_s", 2),
    ("claims wall_s true", lambda r: r["claims"].update(wall_s=True), "unreadable",
     "claims.wall_s", 2),
    ("claims wall_s 1e999", json.dumps(BASE).replace('"wall_s": ', '"wall_s": 1e999, "w": '),
     "unreadable", "claims.wall_s", 2),
    ("claims wall_s 10**400", lambda r: r["claims"].update(wall_s=10**400), "unreadable",
     "claims.wall_s", 2),
    ("claims wall_s null", lambda r: r["claims"].update(wall_s=None), "unreadable",
     "claims.wall_s", 2),
    ("claims wall_s absent", lambda r: r["claims"].pop("wall_s"), "readable", "", 0),
    ("claims params a list", lambda r: r["claims"].update(params=[]), "unreadable",
     "claims.params", 2),
    ("claims params null", lambda r: r["claims"].update(params=None), "unreadable",
     "claims.params", 2),
    ("claims params 65 deep", lambda r: r["claims"].update(params={"x": nest(64)}),
     "unreadable", "claims.params", 2),
    ("claims params 64 deep", lambda r: r["claims"].update(params={"x": nest(63)}), "readable",
     "", 0),
    # metadata: keys the format does not define
    ("metadata 64 deep", lambda r: r.update(tool=nest(64)), "readable", "", 0),
    ("metadata 65 deep", lambda r: r.update(tool=nest(65)), "unreadable", "tool", 2),
    ("metadata 900 deep", lambda r: r.update(tool=nest(900)), "unreadable", "tool", 2),
    ("instance metadata 65 deep", lambda r: r["instance"].update(meta=nest(65)), "unreadable",
     "instance.meta", 2),
    ("chip metadata 65 deep", lambda r: chip(r).update(meta=nest(65)), "unreadable",
     "instance.chip.meta", 2),
    ("noc metadata 65 deep", lambda r: chip(r)["noc"].update(meta=nest(65)), "unreadable",
     "instance.chip.noc.meta", 2),
    ("op metadata 65 deep", lambda r: op(3)(r).update(meta=nest(65)), "unreadable",
     "instance.ops[3].meta", 2),
    ("exec plan metadata 65 deep", lambda r: op(3)(r)["exec_plans"][1].update(meta=nest(65)),
     "unreadable", "instance.ops[3].exec_plans[1].meta", 2),
    ("preload plan metadata 65 deep",
     lambda r: op(3)(r)["preload_plans"][0].update(meta=nest(65)), "unreadable",
     "instance.ops[3].preload_plans[0].meta", 2),
    ("warmup metadata 65 deep", lambda r: op(3)(r)["warmup"][0].update(meta=nest(65)),
     "unreadable", "instance.ops[3].warmup[0].meta", 2),
    ("choice metadata 65 deep", lambda r: r["choice"][3].update(meta=nest(65)), "unreadable",
     "choice[3].meta", 2),
    ("claims metadata 65 deep", lambda r: r["claims"].update(meta=nest(65)), "unreadable",
     "claims.meta", 2),
    ("metadata everywhere, shallow", lambda r: [d.update(note={"k": [1, "x"]}) for d in (
        r, r["instance"], chip(r), chip(r)["noc"], op(3)(r), op(3)(r)["exec_plans"][0],
        op(3)(r)["preload_plans"][0], op(3)(r)["warmup"][0], r["choice"][3], r["claims"])],
     "readable", "", 0),
    ("a deep value where a number belongs", lambda r: op(3)(r).update(flops=nest(900)),
     "unreadable", "ops[3].flops", 2),
]


def corpus_text(edit: Edit | str) -> str:
    if isinstance(edit, str):
        return edit
    raw = copy.deepcopy(BASE)
    edit(raw)
    return json.dumps(raw)


def test_the_corpus_names_are_unique_and_the_base_is_valid():
    assert len({name for name, *_ in CORPUS}) == len(CORPUS)
    assert check(copy.deepcopy(BASE)).valid


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("name, edit, verdict, field, code", CORPUS,
                         ids=[c[0] for c in CORPUS])
def test_loader_and_verify_agree(tmp_path, name, edit, verdict, field, code, gzipped):
    """Also gzipped (as studies keep plans): the same verdict on the text inside."""
    path = tmp_path / ("plan.json.gz" if gzipped else "plan.json")
    text = corpus_text(edit)
    if gzipped:
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text)
    got, report, text = verify_file(str(path))
    assert got == code, text
    try:
        load_plan(path)
        loader_error = None
    except InputError as e:
        loader_error = str(e)
    if verdict == "readable":
        assert loader_error is None
        assert not report["unchecked"]
        return
    assert loader_error is not None
    assert loader_error.startswith(f"{path}: ") and "\n" not in loader_error
    assert field in loader_error
    if verdict == "unreadable":
        assert text.startswith(f"{path}: unreadable: ") and "\n" not in text
        assert field in report["malformed"]
    else:  # "untimable Rk": a rule verify reports, which leaves the program untimed
        rule = verdict.split()[1]
        assert rule in {v["rule"] for v in report["violations"]}
        assert report["unchecked"] == ["R5", "R6"] and report["makespan_ns"] is None
