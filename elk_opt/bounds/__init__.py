"""Lower bounds on the optimum makespan, one module per family.

`ideal` (the paper's roofline), `cuts` (work that must precede an execute), `cheap` (the best
linear-time bound, which every method claims), `fluid` (an LP of how load, execute and port
work can overlap), `fluid_sram` (that LP with rule R5, plain and rounded), `fluid_milp`
(that LP as a MIP, pairs and pending loads whole), `contiguous` (rows for that MIP: one
load running at each execute start), `periodic` (those LPs with repeated
layers summed into one block, so they stay small on whole models), `window` (CP-SAT on
windows of consecutive ops), `layers` (CP-SAT on decoder layers under either timing), and
`run_all`, which runs them for `elk-opt bound`. Each module's docstring says for which
timings and execution orders its bound holds. Solvers load only in the modules that need them.
"""
