"""Loads that run without a break: one load part-done at each execute start, at most.

Rows for the fluid MIP (elk_opt.bounds.fluid_milp, notation of elk_opt.bounds.fluid_sram).
Valid for every plan that executes in the instance's order, under either timing.

In a plan a load, once started, runs to its end, and loads run one at a time on the HBM. So
at each execute start S_b at most one load has started and not finished, and a load that is
part-done at both ends of an interval runs through all of it. The fluid LP and MIP count
load work by demand class and let a class's work move between intervals freely: a load can
stop part-done while another runs beside an execute whose demand suits it better, or while
an execute runs alone, and resume later. On the Elk artifact's calibration layer (48 ops,
`bsp`) that is 249 of the 285 ns between the fluid MIP (193,181 ns) and the optimum CP-SAT
proves (193,466 ns); on a Gemma2-27B b64 KV4096 layer (34 ops) all of the 1.27% between the
fluid MIP and the optimum CP-SAT proves (667,853 ns).

Per op j and execute start S_b where fluid_sram tracks j's load (b < j), with
P[j, b] = sum over j's loading pairs a of F[j, a, b], the fraction of j's load done by S_b:
- two 0/1 columns, started[j, b] >= P[j, b] and finished[j, b] <= P[j, b], both
  non-decreasing in b; open[j, b] = started[j, b] - finished[j, b];
- one load open at each S_b: sum over j of open[j, b] <= 1;
- through[j, b] >= open[j, b - 1] + open[j, b] - 1 (a column >= 0), and in interval b
  (from S_{b-1} to S_b, E<b-1> its execute) the execute's time alone, y, is at most
  (longest run of op b - 1) x (1 - sum over j of through[j, b]);
- nothing else loads in an interval some load runs through: for every load j' tracked in
  interval b, its fraction done in b, P[j', b] - P[j', b - 1], plus the sum over j != j' of
  through[j, b] is at most 1;
- and the execute overlaps no other load there: for every through[j, b] and load class k,
  the overlap columns x[b, k] sum to at most
  X_k (1 - through[j, b] + sum over j's loading pairs a of class k of lambda[j, a]),
  X_k the longest op b - 1's execute can take beside a class-k load (its longest run over
  its slowest speed there), so at most X_k, and 0 when j runs through with another class.
For a plan, started = [P > 0] and finished = [P = 1] satisfy them: a load with 0 < P < 1
at S_b has worked before it and has work left, so it is running at S_b, and only one runs at
a time; one open at S_{b-1} and at S_b runs through interval b, so E<b-1> is never alone
there (y = 0), and otherwise y is at most the run. The load that runs through is the only
one active in the interval, so no other load does work there, and the execute overlaps no
load of another class. Without the last two families the MIP kept the third one's letter
and not its sense: it ran a second load beside the one running through, and let the
execute "overlap" a load of a class that slows nothing while no such load did any work,
which is the execute alone by another name (a Llama2-7B b64 KV2048 slice on the default
chip: 229,377 ns with the first three families, 229,800 with all five, against the optimum
CP-SAT proves, 229,801; the timing rounds each end to a whole ns, which the fluid models do
not see, and can account for that last ns). The fifth family alone gives the same bounds on
the slices measured; the fourth does not change them there but shortens branch and bound
(5.3 s against 6.4 on that slice, 4.4 against 9.7 on Llama2-13B b64 KV2048). Loads shorter than
MIN_LOAD_SHARE of the longest get no started, finished or through columns (fewer rows only
relax): they move little work, and each costs two more integers.

The rows add nothing to the LP relaxation (started = finished = P meets them): the gain is
all branch and bound's, so this is for one-layer slices, not for the LP bounds of whole
models.
"""

from __future__ import annotations

from elk_opt.bounds.fluid import FluidModel, speeds

MIN_LOAD_SHARE = 0.01  # of the longest load: shorter loads get no rows


def add_one_load_running(model: FluidModel) -> None:
    """The rows of the module docstring, over `model.fractions` (a fluid_sram model)."""
    lp = model.lp
    longest = max((c.load for cs in model.costs for c in cs), default=0)
    tracked = {j for j, cs in enumerate(model.costs)
               if max(c.load for c in cs) >= MIN_LOAD_SHARE * longest}
    running: dict[int, dict[int, float]] = {}  # per S_b: started - finished of every load
    last: dict[int, tuple[int, int]] = {}
    spans: dict[int, dict[int, int]] = {}  # per interval b: {load j: through[j, b]}
    for (j, b), fractions in sorted(model.fractions.items()):
        if b >= j or j not in tracked:
            continue
        started, finished = lp.column(anchor=j), lp.column(anchor=j)
        model.integers += [started, finished]
        lp.row({**dict.fromkeys(fractions, 1.0), started: -1.0}, float("-inf"), 0.0)
        lp.row({finished: 1.0, **dict.fromkeys(fractions, -1.0)}, float("-inf"), 0.0)
        if j in last:
            before_started, before_finished = last[j]
            lp.row({before_started: 1.0, started: -1.0}, float("-inf"), 0.0)
            lp.row({before_finished: 1.0, finished: -1.0}, float("-inf"), 0.0)
            through = lp.column(anchor=j)
            lp.row({through: 1.0, before_started: -1.0, before_finished: 1.0, started: -1.0,
                    finished: 1.0}, -1.0, float("inf"))
            spans.setdefault(b, {})[j] = through
        last[j] = (started, finished)
        running.setdefault(b, {}).update({started: 1.0, finished: -1.0})
    for row in running.values():
        lp.row(row, float("-inf"), 1.0)
    for b, throughs in spans.items():
        longest_run = float(max(c.run for c in model.costs[b - 1]))
        lp.row({**dict.fromkeys(model.solo[b], 1.0),
                **dict.fromkeys(throughs.values(), longest_run)},
               float("-inf"), longest_run)
    _alone_in_interval(model, spans)
    _no_other_overlap(model, spans)


def _alone_in_interval(model: FluidModel, spans: dict[int, dict[int, int]]) -> None:
    """The fourth family of rows: no load works in an interval another one runs through."""
    for (j, b), fractions in model.fractions.items():
        if b not in spans:
            continue
        before = model.fractions.get((j, b - 1))
        if b > 0 and before is None:  # (j, b) holds the work before j's band, not one interval
            continue
        row = dict.fromkeys(fractions, 1.0)
        for col in before or ():
            row[col] = row.get(col, 0.0) - 1.0
        row.update({t: 1.0 for other, t in spans[b].items() if other != j})
        model.lp.row(row, float("-inf"), 1.0)


def _no_other_overlap(model: FluidModel, spans: dict[int, dict[int, int]]) -> None:
    """The fifth family: an execute overlaps only the class of the load running through it."""
    for b, throughs in spans.items():
        if b >= len(model.work):
            continue
        overlap = [[col for col in model.work[b][k] if col not in model.alone[b]]
                   for k in range(len(model.reps))]
        # per class, the longest op b - 1's execute can take beside a load of that class
        most = [max(c.run / speeds(rep, c.exec_demand, model.timing)[1]
                    for c in model.costs[b - 1]) for rep in model.reps]
        for j, through in throughs.items():
            loading = [(a, model.load_class(c)) for a, c in enumerate(model.costs[j])
                       if c.load > 0]
            for k in range(len(model.reps)):
                mine = [model.pick[j][a] for a, kind in loading if kind == k]
                if len(mine) == len(loading):  # j's load is of class k whatever its pair
                    continue
                model.lp.row({**dict.fromkeys(overlap[k], 1.0), through: most[k],
                              **dict.fromkeys(mine, -most[k])}, float("-inf"), most[k])
