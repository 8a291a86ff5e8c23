import os

import networkx as nx
import pytest
from hypothesis import HealthCheck, settings

import elk_opt.io
from tests.schemas import DocumentChecker

# The same examples on every run, so a clean clone passes or fails the same way everywhere;
# HYPOTHESIS_EXPLORE=1 draws new ones (for hunting bugs, not for CI).
settings.register_profile(
    "explore", deadline=None, max_examples=30,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("repeatable", parent=settings.get_profile("explore"),
                          derandomize=True)
settings.load_profile("explore" if os.environ.get("HYPOTHESIS_EXPLORE") else "repeatable")


# Every instance and plan document the suite produces is checked against elk_opt/schemas/. The
# writers are replaced here, when pytest loads this file and before any test module imports
# them, because a module binds `from elk_opt.io import plan_to_dict` once, at its own import.

class SchemaViolation(AssertionError):
    """A document elk-opt wrote does not match its JSON Schema."""


SCHEMA_CHECKER = DocumentChecker()
_instance_to_dict = elk_opt.io.instance_to_dict
_plan_to_dict = elk_opt.io.plan_to_dict


def _checked_instance_to_dict(instance):
    document = _instance_to_dict(instance)
    if found := SCHEMA_CHECKER.instance(instance, document):
        raise SchemaViolation(f"{instance.name}: " + "; ".join(found))
    return document


def _checked_plan_to_dict(plan):
    document = _plan_to_dict(plan)  # its instance goes through _checked_instance_to_dict
    if found := SCHEMA_CHECKER.plan(plan.instance, document):
        raise SchemaViolation(f"plan of {plan.instance.name}: " + "; ".join(found))
    return document


elk_opt.io.instance_to_dict = _checked_instance_to_dict
elk_opt.io.plan_to_dict = _checked_plan_to_dict


@pytest.fixture(autouse=True)
def documents_match_schemas():
    """Fail a test that produced a document outside the schemas, even if the code under test
    caught the SchemaViolation the writer raised."""
    before = len(SCHEMA_CHECKER.failures)
    yield
    found = SCHEMA_CHECKER.failures[before:]
    if found:
        pytest.fail("documents outside elk_opt/schemas/:\n  " + "\n  ".join(found[:10]),
                    pytrace=False)


# pytest-xdist (pyproject's addopts: `-n auto --dist loadgroup`) sends each test to whichever
# process is free, and every process builds a module- or session-scoped fixture it needs again.
# Tests that share such a fixture of the suite's own (directly or through another test) are
# therefore one group, run by one process, so an expensive fixture (a study run, a solved
# instance) is built once. Without xdist the marks do nothing.

SHARED_SCOPES = ("module", "package", "session")


def _shared_fixtures(item: pytest.Item) -> list[str]:
    """The fixtures of module scope or wider that `item` uses and the suite defines (not
    pytest's own), as keys naming one instance each: a module-scoped one has one per module."""
    info = getattr(item, "_fixtureinfo", None)  # pytest's own record of the item's fixtures
    if info is None:
        return []
    keys = []
    for name in item.fixturenames:
        defs = info.name2fixturedefs.get(name)
        if not defs:
            continue
        fixture = defs[-1]  # the definition that applies to this item
        if fixture.scope in SHARED_SCOPES and fixture.baseid:  # "": pytest's or a plugin's
            module = getattr(item, "module", None)
            where = module.__name__ if fixture.scope == "module" and module else fixture.baseid
            keys.append(f"{where}::{name}")
    return keys


def _explicit_groups(item: pytest.Item) -> set[str]:
    return {str(m.args[0] if m.args else m.kwargs.get("name", "default"))
            for m in item.iter_markers("xdist_group")}


@pytest.hookimpl(tryfirst=True)  # before xdist turns the marks into its work units
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    links = nx.Graph()
    keys_of = {}
    for item in items:
        keys = _shared_fixtures(item) + [f"group::{g}" for g in sorted(_explicit_groups(item))]
        keys_of[item.nodeid] = keys
        links.add_nodes_from(keys)
        links.add_edges_from(zip(keys, keys[1:], strict=False))
    # xdist names a test's work unit by all its group marks together, so every test of a
    # component carries the same set: the component's least fixture key and every group a
    # test of it names itself.
    names = {}
    for part in nx.connected_components(links):
        fixtures = {key for key in part if not key.startswith("group::")}
        if fixtures:
            named = {key.removeprefix("group::") for key in part - fixtures} | {min(fixtures)}
            names.update(dict.fromkeys(part, named))
    for item in items:
        keys = keys_of[item.nodeid]
        if keys and keys[0] in names:
            for name in sorted(names[keys[0]] - _explicit_groups(item)):
                item.add_marker(pytest.mark.xdist_group(name))


# xdist (3.8) names a grouped test's work unit by appending "@group" to `item._nodeid`; since
# pytest 9.2 the id lives in `item._id`, so that assignment is lost, no test is grouped, and
# each test process built every shared fixture again (the `reproduce --quick` run twice, at
# once). After xdist's hook, a grouped test whose id lacks its group gets it here, as xdist
# means it to; on a pytest where xdist's own assignment works, nothing is left to do.

class _GroupIds:
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        if not config.getoption("loadgroup", False):  # set in xdist's test processes
            return
        for item in items:
            groups = _explicit_groups(item)
            if groups and "@" not in item.nodeid and hasattr(item, "_id"):
                from _pytest.nodeid import NodeId

                item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(sorted(groups))}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_GroupIds(), "elk-opt-xdist-group-ids")
