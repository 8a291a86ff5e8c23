"""`elk-opt profile plan.json`: where a plan's makespan goes (elk_opt.attribution).

Per layer (or per op): the executes at their fastest pairs, what the chosen pairs add, what
the shared port stretches, what the executes wait for (their loads, their releases), and the
HBM's idle time. Twin layers in a row with the same numbers print as one line. Given a
certificate, its lower bound is set beside the plan's parts: what every plan must spend above
the fastest executes, against what this one spends.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from itertools import groupby

from elk_opt.attribution import TimeShare, attribute
from elk_opt.certification.certificate import read_plan_or_certificate
from elk_opt.errors import InputError
from elk_opt.problem import TIMINGS

COLUMNS = (("span", "span_ns"), ("fastest", "fastest_ns"), ("pair choice", "pair_choice_ns"),
           ("stretch", "stretch_ns"), ("load wait", "load_wait_ns"),
           ("release wait", "release_wait_ns"), ("HBM idle", "hbm_idle_ns"))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="where a plan's makespan goes, layer by layer",
                       description="Split a plan's makespan, layer by layer (or op by op), "
                                   "into the executes at their fastest pairs (summed over "
                                   "the model: a bound no plan obeying R5 beats), what the "
                                   "chosen pairs add, what the shared NoC port stretches "
                                   "(section 5b), and what the executes wait for: their "
                                   "loads or their releases. Also the HBM's idle time. The "
                                   "parts add up to the makespan exactly. Given a "
                                   "certificate, its lower bound is set beside them.")
    p.add_argument("plan", metavar="plan.json",
                   help="a plan, or a certificate (its plan, and its lower bound beside)")
    p.add_argument("--by", choices=("layer", "op"), default="layer",
                   help="one row per run of a layer's executes (default) or per op")
    p.add_argument("--timing", choices=TIMINGS, default=None,
                   help="time the plan under this semantics (default: the plan's own)")
    p.add_argument("--json", action="store_true",
                   help="print the totals and every row (twins not merged) as one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    plan, certificate = read_plan_or_certificate(args.plan)
    result = attribute(plan, args.timing, args.by)
    bound = _bound(certificate, result.timing, args.plan)
    if args.json:
        doc = result.summary()
        if bound is not None:
            doc["lower_bound_ns"], doc["best_bound"] = bound
        print(json.dumps(doc))
        return 0
    print(f"{plan.instance.name} ({len(plan.instance.ops)} ops, {result.timing}): makespan "
          f"{result.makespan_ns:,} ns =")
    total = result.total()
    for label, key in COLUMNS[1:-1]:
        value = getattr(total, key)
        note = "  (no plan obeying R5 is shorter)" if key == "fastest_ns" else ""
        print(f"  {label:<13} {value:>14,} ns {_share(value, total.span_ns):>7}{note}")
    print(f"HBM busy {total.hbm_busy_ns:,} ns ({_share(total.hbm_busy_ns, total.span_ns)}), "
          f"idle {total.hbm_idle_ns:,} ns ({_share(total.hbm_idle_ns, total.span_ns)})")
    if bound is not None:
        lower, name = bound
        gap = total.span_ns - lower
        print(f"lower bound {lower:,} ns ({name}) = fastest {lower - total.fastest_ns:+,} ns; "
              f"this plan: fastest {total.span_ns - total.fastest_ns:+,} ns")
        if gap > 0:
            print(f"gap {gap:,} ns ({gap / lower if lower else 0:.2%} of the bound): on the "
                  f"plan's side or the bound's, not yet known")
        else:
            print("gap 0 ns: no plan in the orders the bound covers is faster")
    print()
    rows = [(group.name, group) for group in result.groups] if args.by == "op" \
        else list(_merged(result.groups))
    width = max([len("group")] + [len(name) for name, _ in rows])
    print(f"{'group':<{width}} {'ops':>5} " + " ".join(f"{h:>12}" for h, _ in COLUMNS))
    for name, group in rows:
        print(f"{name:<{width}} {group.ops:>5} "
              + " ".join(f"{getattr(group, key):>12,}" for _, key in COLUMNS))
    return 0


def _bound(certificate: dict | None, timing: str, path: str) -> tuple[int, str] | None:
    """A certificate's lower bound and its name, when it holds for the timing profiled."""
    if certificate is None:
        return None
    if certificate.get("timing") != timing:
        print(f"{path}: the certificate's bound holds under {certificate.get('timing')}, "
              f"not {timing}: left out", file=sys.stderr)
        return None
    lower, name = certificate.get("lower_bound_ns"), certificate.get("best_bound")
    if not isinstance(lower, int) or isinstance(lower, bool) or lower < 0:
        raise InputError(f"{path}: lower_bound_ns: must be a whole number of ns >= 0, "
                         f"got {lower!r}")
    return lower, str(name)


def _share(value: int, span: int) -> str:
    return f"{value / span:.1%}" if span else "-"


def _merged(groups: tuple[TimeShare, ...]) -> Iterator[tuple[str, TimeShare]]:
    """Runs of consecutive groups with equal numbers, as one row each (numbers per group)."""
    for _numbers, members in groupby(groups, key=TimeShare.costs):
        run = list(members)
        first, last = run[0], run[-1]
        yield (first.name if len(run) == 1
               else f"{first.name} .. {last.name} (x{len(run)}, each)"), first
