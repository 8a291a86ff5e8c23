import os

import pytest
from hypothesis import HealthCheck, settings

import elk_opt.io
from tests.schemas import DocumentChecker

settings.register_profile(
    "default", deadline=None, max_examples=30,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


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
