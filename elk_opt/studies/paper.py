"""The Elk paper's published Figures 17-18 averages and its implementation's measured results.

Data, not code: the figures a reproduction is compared with, each labelled with what it is.
Sources: the paper (MICRO 2025) text on Figures 17-18, and docs/calibration.md (its
public implementation, commit 8c6e814, run on Llama2-13B decode, batch 32, KV 2048).
"""

from __future__ import annotations

from dataclasses import dataclass

# The paper's Figure 17 grid.
MODELS = ("llama2-13b", "gemma2-27b", "opt-30b", "llama2-70b")
BATCHES = (16, 32, 64)
KV_LENS = (2048, 4096)

# The methods of the figures, in the paper's order; "ideal" is its roofline.
PAPER_METHODS = ("basic", "static", "elk-dyn", "elk-full", "ideal")

PAPER_SOURCE = "paper: average over its Figure 17 grid"


@dataclass(frozen=True)
class PaperAverages:
    """The paper's averages over its Figure 17 grid (Figure 18 for utilisations)."""

    elk_full_over_basic: float = 1.87
    elk_full_over_static: float = 1.37
    elk_full_pct_of_ideal: float = 94.84
    hbm_util_pct: tuple[tuple[str, float], ...] = (
        ("basic", 34.7), ("static", 46.42), ("elk-dyn", 51.97), ("elk-full", 62.40),
        ("ideal", 64.38))
    noc_util_pct: tuple[tuple[str, float], ...] = (("elk-full", 89.52),)
    tflops: tuple[tuple[str, float], ...] = (("elk-full", 81.06),)


PAPER = PaperAverages()


@dataclass(frozen=True)
class ArtifactRun:
    """The implementation's own per-method makespans on one configuration, in ns."""

    label: str  # what the numbers are
    model: str
    batch: int
    kv_len: int
    layers: int
    makespan_ns: tuple[tuple[str, int | None], ...]  # per method; None: not reported

    def of(self, method: str) -> int | None:
        return dict(self.makespan_ns).get(method)


ARTIFACT_RUNS = (
    ArtifactRun("artifact: whole model, its timing with contention", "llama2-13b", 32, 2048, 40,
                (("basic", 12_497_800), ("static", 9_209_600), ("elk-dyn", 8_266_500),
                 ("elk-full", 6_720_300), ("ideal", 6_699_300))),
    ArtifactRun("artifact: whole model, its schedules timed without contention", "llama2-13b",
                32, 2048, 40,
                (("basic", 11_688_000), ("static", 8_125_000), ("elk-dyn", 6_700_500),
                 ("elk-full", 6_700_500), ("ideal", None))),
    ArtifactRun("artifact: one layer, its timing with contention", "llama2-13b", 32, 2048, 1,
                (("basic", 310_603), ("static", 228_399), ("elk-dyn", 216_903),
                 ("elk-full", 201_779), ("ideal", 191_402))),
)


def ratio(numerator_ns: int | None, denominator_ns: int | None) -> float | None:
    """A throughput ratio as a makespan ratio (None when either is missing)."""
    if not numerator_ns or not denominator_ns:
        return None
    return numerator_ns / denominator_ns
