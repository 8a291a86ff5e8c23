"""Section 5b (shared NoC port) against hand-timed programs and a per-nanosecond replay."""

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.evaluate import evaluate
from elk_opt.noc import demand, shares, work_ns
from tests.strategies import random_instances, random_plans
from tests.tiny import only_choice, parse, port_instance

# (load ns, load port ns, exec ns, exec port ns)
CONTENDED = port_instance([(10, 0, 20, 16), (10, 6, 5, 0)])


def shared(instance, program: str, release=None):
    return evaluate(instance, only_choice(instance), parse(program), release,
                    timing="shared-noc")


def separate(instance, program: str, release=None):
    return evaluate(instance, only_choice(instance), parse(program), release,
                    timing="separate-noc")


def test_demands_and_shares():
    assert work_ns(11, 2_000_000_000) == 6  # ceil(5.5)
    assert demand(20, 16) == 800 and demand(3, 1) == 334 and demand(5, 9) == 1000
    assert demand(0, 5) == 0 and demand(5, 0) == 0
    assert shares(400, 600) == (400, 600)  # fits: each gets its demand
    assert shares(600, 800) == (500, 500)  # the smaller is capped at half
    assert shares(300, 900) == (300, 700) and shares(900, 300) == (700, 300)
    assert shares(700, 700) == (500, 500)


def test_a_load_and_an_execute_split_the_port():
    s = shared(CONTENDED, "P0 P1 E0 E1")
    # P0 0-10 uses no port. From 10, P1 (600 permille, 6,000 units) and E0 (800 permille,
    # 16,000 units) split the port 500/500: P1 ends at 10 + 12 = 22 with E0 at 10,000 units
    # left; alone, E0 runs at 800 and ends at 22 + ceil(12.5) = 35. E1 35-40.
    assert s.load_start == (0, 10) and s.load_end == (10, 22)
    assert s.exec_start == (10, 35) and s.exec_end == (35, 40)
    assert s.makespan_ns == 40
    assert separate(CONTENDED, "P0 P1 E0 E1").makespan_ns == 35


def test_without_overlap_or_within_the_port_it_is_section_5():
    assert shared(CONTENDED, "P0 E0 P1 E1").makespan_ns == 45 == separate(
        CONTENDED, "P0 E0 P1 E1").makespan_ns
    light = port_instance([(10, 0, 20, 10), (10, 4, 5, 0)])  # 500 + 400 <= 1000
    assert shared(light, "P0 P1 E0 E1") == separate(light, "P0 P1 E0 E1")


def test_delaying_a_load_can_shorten_the_makespan():
    # op0: no load, execute 20 ns at 1000 permille. op1, op2: load 10 ns at 1000 permille;
    # op1 executes 40 ns and op2 10 ns without the port.
    inst = port_instance([(0, 0, 20, 20), (10, 10, 40, 0), (10, 10, 10, 0)])
    eager = shared(inst, "P0 P1 P2 E0 E1 E2")
    # From 0, P1 and E0 split the port 500/500: P1 ends at 20 with E0 half done; P2 then
    # splits it with E0 again and both end at 40. E1 40-80, E2 80-90.
    assert eager.load_end == (0, 20, 40) and eager.exec_end == (40, 80, 90)
    assert separate(inst, "P0 P1 P2 E0 E1 E2").makespan_ns == 70
    # Released at 20, P1 waits for E0: E0 0-20, P1 20-30, P2 30-40, E1 30-70, E2 70-80.
    late = shared(inst, "P0 P1 P2 E0 E1 E2", {("P", 1): 20})
    assert late.load_end == (0, 30, 40) and late.exec_end == (20, 70, 80)


def test_zero_load_and_zero_length_execute():
    inst = port_instance([(0, 0, 0, 0), (0, 0, 7, 7), (5, 5, 3, 0)])
    s = shared(inst, "P0 P1 P2 E0 E1 E2", {("P", 1): 4})
    # E0 takes no time at 0; P1 reserves at its release 4; E1 4-11 at 1000 permille shares
    # with P2 (1000 permille, 0-5 alone until 4, then 500 each): P2 has 1,000 units left at 4
    # and ends at 6; E1 has 7,000 - 1,000 = 6,000 left at 6 and ends at 12. E2 12-15.
    assert s.exec_start == (0, 4, 12) and s.exec_end == (0, 12, 15)
    assert s.load_end == (0, 4, 6)


def tick_replay(instance, choice, program, release):
    """Section 5b replayed one nanosecond at a time, written from docs/spec.md alone.

    Each ns, every active instruction does its share of work; it ends at the first integer
    time its work reaches its units (duration x demand, or duration when the demand is 0).
    """
    chip = instance.chip
    link = chip.noc.link_bytes_per_s
    n = len(instance.ops)

    def dem(dur, work):
        return 0 if dur == 0 or work == 0 else min(1000, -(-1000 * work // dur))

    dl, de, dur_l, dur_e = [], [], [], []
    for op, c in zip(instance.ops, choice, strict=True):
        q, p = op.preload_by_id[c.preload], op.exec_by_id[c.exec]
        warm = op.warmup_ns[(c.preload, c.exec)]
        lw = q.noc_ns if q.noc_ns is not None else -(-q.space_bytes * 10**9 // link)
        ew = (p.noc_ns if p.noc_ns is not None else -(-p.noc_bytes * 10**9 // link)) + warm
        dur_l.append(q.load_ns)
        dur_e.append(p.time_ns + warm)
        dl.append(dem(q.load_ns, lw))
        de.append(dem(p.time_ns + warm, ew))
    gate, last = {}, None
    data_loads, execs = [], []
    for kind, j in program:
        if kind == "P":
            gate[j] = last
            if dur_l[j]:
                data_loads.append(j)
        else:
            execs.append(j)
            last = j
    rel = {(k, j): v for (k, j), v in (release or {}).items()}
    load_end, exec_end = {}, {}
    active_l = active_e = None
    done_l = done_e = 0
    li = ei = 0
    t = 0
    while ei < n or active_e is not None:
        moved = True
        while moved:
            moved = False
            if active_l is None and li < len(data_loads):
                j = data_loads[li]
                ok = (gate[j] is None or gate[j] in exec_end) and t >= rel.get(("P", j), 0)
                if ok and (li == 0 or data_loads[li - 1] in load_end):
                    active_l, done_l, li, moved = j, 0, li + 1, True
            if active_e is None and ei < n:
                i = execs[ei]
                if dur_l[i] == 0 and i not in load_end and (
                        gate[i] is None or gate[i] in exec_end) and t >= rel.get(("P", i), 0):
                    load_end[i] = t
                if i in load_end and t >= rel.get(("E", i), 0):
                    ei, moved = ei + 1, True
                    if dur_e[i] == 0:
                        exec_end[i] = t
                    else:
                        active_e, done_e = i, 0
        gl = ge = 1
        if active_l is not None:
            gl = dl[active_l] or 1
        if active_e is not None:
            ge = de[active_e] or 1
            if active_l is not None and dl[active_l] and de[active_e] and \
                    dl[active_l] + de[active_e] > 1000:
                small = min(dl[active_l], de[active_e], 500)
                if dl[active_l] <= de[active_e]:
                    gl, ge = small, 1000 - small
                else:
                    gl, ge = 1000 - small, small
        t += 1
        if active_l is not None:
            done_l += gl
            if done_l >= dur_l[active_l] * (dl[active_l] or 1):
                load_end[active_l], active_l = t, None
        if active_e is not None:
            done_e += ge
            if done_e >= dur_e[active_e] * (de[active_e] or 1):
                exec_end[active_e], active_e = t, None
    return [exec_end[i] for i in range(n)]


@settings(max_examples=300)
@given(st.data(), random_instances(max_ops=5, noc=True))
def test_event_walk_matches_a_per_nanosecond_replay(data, instance):
    choice, program = data.draw(random_plans(instance))
    release = {}
    for kind, j in program:
        if data.draw(st.integers(0, 3)) == 0:
            release[(kind, j)] = data.draw(st.integers(0, 150))
    s = evaluate(instance, choice, program, release, timing="shared-noc")
    assert list(s.exec_end) == tick_replay(instance, choice, program, release)


@given(st.data(), random_instances(max_ops=6, noc=True))
def test_sharing_only_slows(data, instance):
    choice, program = data.draw(random_plans(instance))
    a = evaluate(instance, choice, program, timing="separate-noc")
    b = evaluate(instance, choice, program, timing="shared-noc")
    assert all(x <= y for x, y in zip(a.exec_end, b.exec_end, strict=True))
    assert all(x <= y for x, y in zip(a.load_end, b.load_end, strict=True))
    assert a.sram_bytes == b.sram_bytes and a.preload_count == b.preload_count


def without_port_use(instance):
    def op(o):
        return replace(o, exec_plans=tuple(replace(p, noc_ns=0) for p in o.exec_plans),
                       preload_plans=tuple(replace(q, noc_ns=0) for q in o.preload_plans),
                       warmup=tuple(replace(w, time_ns=0) for w in o.warmup))
    return replace(instance, ops=tuple(op(o) for o in instance.ops))


@given(st.data(), random_instances(max_ops=6, noc=True))
def test_no_port_use_means_section_5(data, instance):
    instance = without_port_use(instance)
    choice, program = data.draw(random_plans(instance))
    assert evaluate(instance, choice, program, timing="separate-noc") == evaluate(
        instance, choice, program, timing="shared-noc")
