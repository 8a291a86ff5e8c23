"""Lower bounds on the optimum makespan, one module per family.

`ideal` (the paper's roofline), `cuts` (work that must precede an execute), `cheap` (the best
linear-time bound, which every method claims), `fluid` (an LP of how load, execute and port
work can overlap), `fluid_sram` (that LP with rule R5, plain and rounded), `fluid_milp` (that
LP as a MIP, pairs and pending loads whole), `contiguous` (rows for that MIP: one load running
at each execute start), `whole_ns` (that MIP with intervals of whole ns), `periodic` (those
LPs with repeated layers summed into one block, so they stay small on whole models), `split`
(the MIP with loads run whole split over those repeats), `window` (CP-SAT on windows of
consecutive ops), `layers` (CP-SAT on decoder layers under either timing), `fluid_layers` (the
fluid LP with the layer windows as rows) and `carry` (the layer windows paying for the loads
they carry across their ends).

`run_all` runs them for `elk-opt bound`, through `rows` (one report row per solver-backed
bound, within the limits of `limits`); `recompute` computes a row again from its params
(`elk-opt certify --check`). Each module's docstring says for which timings and execution
orders its bound holds. Solvers load only in the modules that need them.
"""
