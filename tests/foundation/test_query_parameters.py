"""Every filter, pager, flag and fragment a page reads from its query string is checked: a bad
value answers 400 on the site's page, naming the parameter, the value and why - never a 500,
never a filter silently dropped. Table-driven over every page that reads its query string;
good values still answer 200."""

from urllib.parse import parse_qsl

import pytest
from django.urls import reverse

from accounts.models import Role
from tests.foundation.access_table import PAGES, access_world

PAGE_BY_NAME = {page.name: page for page in PAGES}
MISSING_UUID = "6b1f7a0e-4c2d-4e8f-9a3b-1c5d7e9f0a2b"

# (page, query, part of the reason)
BAD = [
    ("benchmark:set", "infeasible=x", 'must be one of "True", "False"'),
    ("benchmark:set", "condition=Not a condition", "must be one of"),
    ("benchmark:set", "page=abc", "Enter a whole number."),
    ("benchmark:set", "page=-1", "greater than or equal to 1"),
    ("benchmark:set", "fragment=everything", 'must be one of "progress", "entries"'),
    ("benchmark:set_report", "format=xlsx", 'must be one of "csv"'),
    ("benchmark:distribution_new", "from=abc", "Enter a whole number."),
    ("benchmark:distribution_new", "from=987654", "there is no such distribution."),
    ("benchmark:run", "status=done", '"pending", "queued", "running"'),
    ("benchmark:run", "termination_reason=exploded", "must be one of"),
    ("benchmark:run", "agent=abc", "must be one of"),
    ("benchmark:run", "agent=987654", "must be one of"),
    ("benchmark:run", "page=0", "greater than or equal to 1"),
    ("jury:job", "fragment=all", 'must be one of "progress"'),
    ("jury:report", "pass_rates=maybe", 'must be one of "show", "hide"'),
    ("jury:report", "fragment=all", 'must be one of "models"'),
    ("jury:sensitivity", "measure=height", 'must be one of "aggregate"'),
    ("jury:failures", "rubric=kindness", "must be one of"),
    ("jury:failures", "agent=abc", "must be one of"),
    ("jury:failures", "personality=grumpy", "must be one of"),
    ("alignment:report", "track=surgical", 'must be one of "clinical", "operational"'),
    ("alignment:report", "model=openai/gpt-9", "must be one of"),
    ("alignment:report", "synthetic=yes", 'must be one of "1"'),
    ("alignment:report", "width=0.5", "the planner offers widths 0.05, 0.1, 0.15, 0.2, 0.3."),
    ("alignment:planner", "width=wide", "Enter a number."),
    ("alignment:export", "synthetic=2", 'must be one of "1"'),
    ("alignment:rubric", "track=x", "must be one of"),
    ("alignment:figure", "model=x", "must be one of"),
    ("alignment:disagreements", "min_diff=big", "Enter a number."),
    ("alignment:disagreements", "min_diff=-1", "greater than or equal to 0"),
    ("alignment:disagreements", "min_diff=5", "less than or equal to 4"),
    ("alignment:disagreements", "limit=0", "greater than or equal to 1"),
    ("alignment:disagreements", "limit=many", "Enter a whole number."),
    ("alignment:disagreements", "theme=abc", "Enter a whole number."),
    ("alignment:disagreements", "theme=987654", "there is no such theme."),
    ("alignment:disagreements", "rubric=kindness", "must be one of"),
    ("alignment:trend", "track=x", "must be one of"),
    ("alignment:trend_figure", "synthetic=on", 'must be one of "1"'),
    ("alignment:loop_comparison", "baseline=nope", 'must be one of "original"'),
    ("alignment:loop_comparison", "synthetic=1", 'must be one of "include"'),
    ("alignment:loop_comparison", "fragment=all", 'must be one of "progress"'),
    ("alignment:loop_comparison_csv", "baseline=nope", 'must be one of "original"'),
    ("annotation:staff_study", "fragment=all", 'must be one of "progress"'),
    ("annotation:staff_study_export", "pseudonymise=yes", 'must be one of "1"'),
    ("annotation:staff_round_report", "synthetic=1", 'must be one of "include"'),
    ("rubric_lab:kb", "q=statins&retriever=google", "Select a valid choice."),
    ("rubric_lab:pipeline_new", "run=abc", "Enter a whole number."),
    ("rubric_lab:pipeline_new", "run=987654", "there is no such run."),
    ("rubric_lab:pipeline_new", "conversation=not-a-uuid", "Enter a valid UUID."),
    ("rubric_lab:pipeline_new", f"conversation={MISSING_UUID}", "there is no such conversation."),
    ("rubric_lab:sensitivity", "fragment=all", 'must be one of "progress"'),
    ("rubric_lab:coverage", "fragment=all", 'must be one of "progress"'),
    ("rubric_lab:refine", "fragment=all", 'must be one of "progress"'),
    ("rubric_lab:ablation", "fragment=all", 'must be one of "progress"'),
]


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    yield from access_world(django_db_blocker)


def url_of(name: str, objects: dict) -> str:
    return reverse(name, kwargs=PAGE_BY_NAME[name].kwargs(objects))


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "query", "reason"), BAD, ids=[f"{n}?{q}" for n, q, _ in BAD])
def test_a_bad_query_parameter_is_refused_with_the_reason(client, world, name, query, reason):
    users, objects = world
    client.force_login(users[Role.ADMIN])
    response = client.get(f"{url_of(name, objects)}?{query}", HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 400, page[:300]
    parameter, value = parse_qsl(query)[-1]
    assert f"sets &quot;{parameter}&quot; to &quot;{value}&quot;" in page
    assert reason.replace('"', "&quot;") in page
    assert "The request could not be used" in page and 'class="brand"' in page  # site page


def good_queries(objects) -> list[tuple[str, str]]:
    run, job = objects["run"], objects["scoring_job"]
    agent = run.agents.get().pk
    rubric = job.rubric_versions.order_by("rubric_id").first().rubric_id
    return [
        ("benchmark:set", "infeasible=True&page=1&condition="),
        ("benchmark:set", "fragment=entries&page=99"),  # past the end: the last page
        ("benchmark:set_report", "format="),
        ("benchmark:distribution_new", f"from={objects['distribution'].pk}"),
        ("benchmark:run", f"status=pending&termination_reason=&agent={agent}&page=1"),
        ("jury:report", "pass_rates=hide"),
        ("jury:sensitivity", "measure=aggregate"),
        ("jury:failures", f"rubric={rubric}&agent={agent}"),
        ("alignment:report", "track=clinical&synthetic=1&width=0.1&model="),
        ("alignment:disagreements", "min_diff=1.5&limit=10&rubric=clinical_safety"),
        ("alignment:trend", "track=operational"),
        ("alignment:loop_comparison", "baseline=original&synthetic=include"),
        ("annotation:staff_study_export", "pseudonymise=1"),
        ("annotation:staff_round_report", "synthetic=include"),
        ("rubric_lab:kb", "q=statins&retriever=bm25"),
        (
            "rubric_lab:pipeline_new",
            f"run={run.pk}&conversation={objects['conversation'].public_id}",
        ),
    ]


@pytest.mark.django_db
def test_good_values_are_still_taken(client, world):
    users, objects = world
    client.force_login(users[Role.ADMIN])
    refused = []
    for name, query in good_queries(objects):
        response = client.get(f"{url_of(name, objects)}?{query}")
        if response.status_code != 200:
            refused.append((name, query, response.status_code))
    assert refused == []
