"""Every object a response carries is declared: a walk over the OpenAPI schema fails on an
object with no properties whose values are not typed either (a free-form object), except the
few listed below, which are free-form by nature."""

from alignment.engine.agreement import RubricAgreement
from alignment.engine.bootstrap import Estimate
from alignment.engine.judges import JudgeAgreement, JudgeAlone, JudgePair
from api.main import api
from api.schemas_studies import (
    FigureOut,
    JudgeAgreementOut,
    JudgeAloneOut,
    JudgePairOut,
    RubricAgreementOut,
)

# (schema, property) -> why its keys are the producer's to choose.
FREE_FORM = {
    ("TraceCaseOut", "seed"): "a distribution file names its own seed columns",
    ("TraceCaseOut", "profile"): "the enrichment prompt (a data file) shapes the profile",
    ("TraceEventOut", "arguments"): "each of the sandbox's tools takes its own arguments",
    ("ConversationTraceOut", "write_actions"): "each writing tool records its own fields",
    ("ConversationTraceOut", "sandbox_initial"): "the sandbox's own document (its version's)",
    ("ConversationTraceOut", "sandbox_final"): "the sandbox's own document (its version's)",
}


def _schema() -> dict:
    return api.get_openapi_schema(path_prefix="/api/v1/")


def _free_form(node) -> bool:
    """An object that says nothing of its keys' values."""
    if not isinstance(node, dict) or node.get("type") != "object" or node.get("properties"):
        return False
    extra = node.get("additionalProperties", True)
    return extra is True or extra == {}


def _walk(node, where: str, found: list[str]) -> None:
    if _free_form(node):
        found.append(where)
    if isinstance(node, dict):
        for key, child in node.items():
            _walk(child, f"{where}.{key}", found)
    elif isinstance(node, list):
        for index, child in enumerate(node):
            _walk(child, f"{where}[{index}]", found)


def _response_schemas(schema: dict) -> dict:
    """Every response body of every route, and every component they may refer to."""
    bodies = {}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status, answer in operation.get("responses", {}).items():
                for media, content in answer.get("content", {}).items():
                    bodies[f"{method} {path} {status} {media}"] = content.get("schema", {})
    for name, component in schema["components"]["schemas"].items():
        for prop, value in component.get("properties", {}).items():
            if (name, prop) not in FREE_FORM:
                bodies[f"{name}.{prop}"] = value
    return bodies


def test_no_response_carries_an_undeclared_object():
    found: list[str] = []
    for where, body in _response_schemas(_schema()).items():
        _walk(body, where, found)
    assert not found, f"free-form objects: {found}"


def test_the_walk_finds_a_free_form_object():
    found: list[str] = []
    _walk({"properties": {"loose": {"type": "object"}}}, "x", found)
    _walk({"type": "object", "additionalProperties": {"type": "integer"}}, "typed", found)
    assert found == ["x.properties.loose"]


def test_the_allow_list_names_fields_that_exist():
    components = _schema()["components"]["schemas"]
    for name, prop in FREE_FORM:
        assert prop in components[name]["properties"], (name, prop)


def test_intervals_are_objects_and_numbers_are_numbers():
    components = _schema()["components"]["schemas"]
    interval = components["FigureOut"]["properties"]
    assert {"estimate", "low", "high"} <= set(interval)
    assert {"type": "number"} in interval["estimate"]["anyOf"]
    assert components["IntervalOut"]["properties"]["estimate"]["type"] == "number"


def test_the_agreement_schemas_carry_every_field_of_the_report():
    """A figure added to the statistics must be declared here too (or it is silently dropped)."""
    pairs = [(RubricAgreement, RubricAgreementOut), (JudgeAgreement, JudgeAgreementOut),
             (JudgeAlone, JudgeAloneOut), (JudgePair, JudgePairOut)]  # fmt: skip
    for report, declared in pairs:
        assert set(report.__dataclass_fields__) == set(declared.model_fields), report
    assert set(Estimate.__dataclass_fields__) - {"value"} | {"estimate"} == set(
        FigureOut.model_fields
    )
