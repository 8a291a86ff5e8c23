"""How far and how long each solver-backed bound runs unless told otherwise.

One place for the defaults that the Python API (`elk_opt.api.bound`), `elk-opt bound` and
`run_all.lower_bounds` share. It imports nothing, so the API and the command's --help stay
light: the solvers load only when a bound runs.
"""

FLUID_MAX_OPS = 2000  # the fluid LP; repeated layers summed keep it small
FLUID_TIME_S = 120.0  # shared by the fluid LP, with SRAM, and their MIPs
FLUID_SRAM_MAX_OPS = 600  # counted after repeated layers are summed into one block
FLUID_MILP_MAX_OPS = 100  # a layer or two of a decoder: the MIP takes seconds to a minute
FLUID_CONTIGUOUS_MAX_OPS = 50  # a decoder layer: the MIP takes seconds to a minute there
# the fluid MIP split over repeated layers, counted as FLUID_SRAM_MAX_OPS is: the summed LP
# (as the fluid LP with SRAM's), then three blocks' MIPs of a layer or two each
FLUID_SPLIT_MAX_OPS = 600
FLUID_BAND = 24  # execute starts back the fluid LP with SRAM and its MIPs track each load
# load demand classes at most, beyond which demands are rounded down (elk_opt.bounds.fluid).
# The bound rows' LPs keep every class of the Figure 17 grid's models exact (19 at most).
# Elsewhere (the MIPs, `cpsat`'s and `polish`'s floors, the LPs' pair picks) 32 made the MIPs
# 1.8-2.7 times slower on decoder layers and changed `elk-full-lp`'s starts; rows that do not
# record `max_classes` were built with DEFAULT_CLASSES
BOUND_CLASSES = 32
DEFAULT_CLASSES = 16
WINDOW_OPS = 12  # ops per window of the window bound
WINDOW_TIME_S = 2.0  # CP-SAT per window
LAYERS = 1  # decoder layers per layer window
LAYERS_TIME_S = 10.0  # CP-SAT per distinct layer window
# the fluid MIP per distinct layer window CP-SAT did not prove: Gemma2-27B b64's middle
# layers need 11 s (KV2048) and 98 s (KV4096)
LAYERS_MIP_TIME_S = 60.0
LP_MAX_OPS = 400  # the ILP's LP relaxation
LP_TIME_S = 120.0
