"""The section-5 evaluator against programs timed by hand (section 5b: test_shared_noc.py)."""

import pytest

from elk_opt.evaluate import ProgramError, evaluate
from tests.tiny import only_choice, parse, tiny_instance

# (load ns, preload space, exec ns, exec space, warm-up ns)
THREE = tiny_instance([(10, 30, 5, 40, 1), (20, 50, 8, 40, 0), (0, 0, 4, 10, 0)])


def run(program: str, release=None):
    return evaluate(THREE, only_choice(THREE), parse(program), release, timing="separate-noc")


def test_loads_overlap_earlier_executes():
    s = run("P0 P1 E0 P2 E1 E2")
    # P0 0-10; P1 queues on the HBM 10-30; E0 10-16 (5 + 1 warm-up) overlaps P1;
    # P2 moves no data: 16-16; E1 stalls on its load until 30, runs to 38; E2 38-42.
    assert s.load_start == (0, 10, 16) and s.load_end == (10, 30, 16)
    assert s.exec_start == (10, 30, 38) and s.exec_end == (16, 38, 42)
    assert s.makespan_ns == 42


def test_preload_after_execute_waits_for_it():
    s = run("P0 E0 P1 E1 P2 E2")
    # P1 is listed after E0, so it starts when E0 ends (16), not when the HBM frees (10).
    assert s.load_start[1] == 16 and s.load_end[1] == 36
    assert s.exec_start[1] == 36 and s.makespan_ns == 48


def test_stall_on_load_when_hbm_is_busy():
    s = run("P0 P1 P2 E0 E1 E2")
    assert s.exec_start == (10, 30, 38) and s.makespan_ns == 42


def test_zero_load_preload_ignores_the_hbm():
    s = run("P0 P1 P2 E0 E1 E2")
    assert s.load_start[2] == s.load_end[2] == 0  # no wait behind P1 on the HBM


def test_release_times_delay_instructions():
    s = run("P0 P1 E0 P2 E1 E2", {("P", 1): 15, ("E", 2): 50})
    assert s.load_start[1] == 15 and s.load_end[1] == 35
    assert s.exec_start[1] == 35 and s.exec_start[2] == 50 and s.makespan_ns == 54


def test_zero_load_preload_honours_release():
    s = run("P0 P1 E0 P2 E1 E2", {("P", 2): 40})
    assert s.load_start[2] == 40 and s.exec_start[2] == 40


def test_preload_counts_and_static_sram():
    s = run("P0 P1 P2 E0 E1 E2")
    assert s.preload_count == (2, 1, 0)
    # at E0: exec 40 + pending P1 50 + P2 0; at E1: max(exec 40, own preload 50) + P2 0;
    # at E2: exec 10
    assert s.sram_bytes == (90, 50, 10) and s.peak_sram_bytes == 90


@pytest.mark.parametrize("program, message", [
    ("P0 E0 P1 E1 P2", "missing E2"),
    ("E0 P0 P1 E1 P2 E2", "E0 comes before P0"),
    ("P0 P0 E0 P1 E1 P2 E2", "P0 appears twice"),
    ("P0 E0 E0 P1 E1 P2 E2", "E0 appears twice"),
    ("P0 E0 P1 E1 P2 E2 P7", "P7 names no op"),
])
def test_unsound_programs_are_refused(program, message):
    with pytest.raises(ProgramError, match=message):
        run(program)
