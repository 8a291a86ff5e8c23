"""elk-opt: a reference optimizer for preload scheduling on inter-core-connected AI chips.

The Python API (docs/api.md): build or load an instance, solve it, evaluate, verify, simulate,
bound, compare, certify, save. Names load on first use (PEP 562), so `import elk_opt` pulls in
no solver, ONNX, numpy or plotting library:

    import elk_opt
    instance = elk_opt.synthetic_instance(ops=24, seed=1)
    plan = elk_opt.solve(instance, "elk-full")
    elk_opt.verify(plan)["valid"]

The formats, rules and timings are docs/spec.md; the terms, docs/glossary.md.
"""

# ruff: noqa: F401  (the imports under TYPE_CHECKING re-export the API for type checkers)
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it. Everything else in the package is internal.
_API: dict[str, str] = {
    **dict.fromkeys(
        ["model_names", "chip_names", "method_names", "load_instance", "save_instance",
         "load_plan", "save_plan", "load_chip", "build_instance", "synthetic_instance",
         "artifact_instance", "solve", "tile", "export_model", "import_solution",
         "evaluate_plan", "verify", "simulate", "profile", "bound", "compare", "certify",
         "check_certificate", "schema"], "elk_opt.api"),
    **dict.fromkeys(
        ["Instance", "Chip", "Noc", "Op", "ExecPlan", "PreloadPlan", "Warmup", "Plan", "Choice",
         "Claims", "Timing", "TIMINGS", "DEFAULT_TIMING"], "elk_opt.problem"),
    "SolveOptions": "elk_opt.solution",
    "Schedule": "elk_opt.evaluate",
    "ProgramError": "elk_opt.evaluate",
    "SimResult": "elk_opt.simulator",
    "Attribution": "elk_opt.attribution",
    "InputError": "elk_opt.errors",
    "UsageError": "elk_opt.errors",
}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'elk_opt' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})


if TYPE_CHECKING:  # the names above, for type checkers and editors
    from elk_opt.api import (
        artifact_instance,
        bound,
        build_instance,
        certify,
        check_certificate,
        chip_names,
        compare,
        evaluate_plan,
        export_model,
        import_solution,
        load_chip,
        load_instance,
        load_plan,
        method_names,
        model_names,
        profile,
        save_instance,
        save_plan,
        schema,
        simulate,
        solve,
        synthetic_instance,
        tile,
        verify,
    )
    from elk_opt.attribution import Attribution
    from elk_opt.errors import InputError, UsageError
    from elk_opt.evaluate import ProgramError, Schedule
    from elk_opt.problem import (
        DEFAULT_TIMING,
        TIMINGS,
        Chip,
        Choice,
        Claims,
        ExecPlan,
        Instance,
        Noc,
        Op,
        Plan,
        PreloadPlan,
        Timing,
        Warmup,
    )
    from elk_opt.simulator import SimResult
    from elk_opt.solution import SolveOptions
