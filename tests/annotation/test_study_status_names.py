"""A study's status is written with StudyStatus wherever a query names it, never as a string:
a renamed or added status is then found by every query that asks for it."""

import ast

from tests.support.import_graph import ROOT
from tests.support.layers import PROJECT_PACKAGES


def literal_study_statuses(source: str) -> list[str]:
    """`line: keyword='value'` for each query that compares a study's status with a string."""
    found = []
    for call in (node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)):
        on_studies = ast.unparse(call.func).startswith("Study.objects.")
        for keyword in call.keywords:
            names_it = keyword.arg is not None and (
                keyword.arg.endswith("study__status") or (on_studies and keyword.arg == "status")
            )
            value = keyword.value
            if names_it and isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.append(f"{call.lineno}: {keyword.arg}={value.value!r}")
    return found


def test_no_query_names_a_study_status_with_a_string():
    wrong = [
        f"{path.relative_to(ROOT)}:{hit}"
        for package in PROJECT_PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
        for hit in literal_study_statuses(path.read_text())
    ]
    assert wrong == []


def test_the_check_sees_both_ways_of_naming_it():
    source = (
        'Study.objects.filter(status="open", deadline__gt=now)\n'
        'Assignment.objects.filter(item__study__status="open")\n'
        "Study.objects.filter(status=StudyStatus.OPEN)\n"
    )
    assert literal_study_statuses(source) == [
        "1: status='open'",
        "2: item__study__status='open'",
    ]
