"""`elk-opt certify`: one checkable statement of how far a plan is from the optimum.

`search` spends one wall-clock budget on the best plan (the heuristics, then CP-SAT and the
LNS from the best so far) and the best lower bound (every bound `elk_opt.bounds.run_all`
offers), holding what it has so far in a `found.Found`, with the phases for whole models in
`slices`; `certificate` turns what it found into an `elk-certificate/1` document (docs/spec.md
section 3b); `check` re-checks one without trusting the tool that wrote it. `worker` runs the
search's solver phases in a process of their own, so that a deadline or a signal ends them at
once.
"""
