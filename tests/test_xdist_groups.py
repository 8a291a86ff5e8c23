"""tests/conftest.py puts the tests that share an expensive fixture into one xdist group, so
that one test process builds it once; other tests stay free to go to any process."""

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SUITE = """
import pytest

@pytest.fixture(scope="module")
def study():
    return 1

@pytest.fixture(scope="module")
def other():
    return 2

@pytest.fixture
def cheap():
    return 3

def test_a(study): pass
def test_b(study, other): pass
def test_c(other): pass
@pytest.mark.xdist_group("mine")
def test_d(other): pass
def test_e(cheap, tmp_path_factory): pass
@pytest.mark.xdist_group("alone")
def test_f(): pass
"""


def _groups(pytester: pytest.Pytester) -> dict[str, set[str]]:
    pytester.makepyfile(test_shared=SUITE)
    items = pytester.inline_genitems("-p", "tests.conftest", "-p", "xdist")[0]
    return {item.name: {m.args[0] for m in item.iter_markers("xdist_group")} for item in items}


def test_tests_sharing_a_wide_fixture_share_one_group(pytester):
    groups = _groups(pytester)
    # a and c share no fixture, but b links study to other, and d names a group of its own:
    # a to d carry the same marks, so xdist gives them one work unit
    linked = [groups[t] for t in ("test_a", "test_b", "test_c", "test_d")]
    assert all(g == linked[0] for g in linked)
    assert "mine" in linked[0] and len(linked[0]) == 2
    assert groups["test_e"] == set()  # function-scoped and pytest's own fixtures: no group
    assert groups["test_f"] == {"alone"}  # an explicit group on its own is left alone


ONCE = """
import os
import pytest

@pytest.fixture(scope="module")
def study():
    with open("built.txt", "a") as f:
        f.write(f"{os.getpid()}\\n")
    return 1

def test_a(study): pass
def test_b(study): pass
def test_c(study): pass
def test_d(study): pass
def test_e(): pass
def test_f(): pass
"""


def test_two_test_processes_build_a_shared_fixture_once(pytester, monkeypatch):
    """The groups reach xdist's scheduler: one process runs every test of a group (pytest 9.2
    broke the way xdist marks them; tests/conftest.py repairs it)."""
    root = Path(__file__).resolve().parents[1]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]))
    pytester.makepyfile(test_once=ONCE)
    result = pytester.runpytest_subprocess("-p", "tests.conftest", "-n", "2", "--dist",
                                           "loadgroup", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)
    assert len((pytester.path / "built.txt").read_text().splitlines()) == 1
