"""The API's contract: the schema and docs reach a token, every error is an RFC 9457 problem
declared in the schema, filters are declared and refuse what they do not offer (top-level
lists and nested ones alike), and a list costs the same queries for any number of rows."""

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from accounts.models import ApiToken, Role, Track
from accounts.tokens import token_create, token_digest
from annotation.models import Adjudication, Assignment, Project, ProjectMember, Study, StudyItem
from benchmark.models import Run
from jury.services import juries, scoring
from rubric_lab.models import (
    AblationStudy,
    CoverageCase,
    CoverageRun,
    ExpertCriteriaUpload,
    ExpertCriterion,
    GenerationJob,
    InstanceRubric,
    KnowledgePassage,
    NearMiss,
    Refinement,
    RefineStudy,
    RubricCriterion,
    RubricGeneration,
    SensitivityStudy,
)
from tests.conftest import make_user
from tests.support.api import API, bearer
from tests.support.builders import enriched_set, launched_run, played

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_rate_counts")]
PROBLEM = "application/problem+json"
DOWNLOADS = (".{fmt}", ".{suffix}", "manifest.json", "/download")


def _problem(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith(PROBLEM)
    body = response.json()
    assert body["status"] == status and body["type"] == "about:blank"
    assert body["title"] and body["detail"]
    return body


def test_a_token_fetches_the_schema_and_the_docs(client, researcher):
    _, raw = token_create(user=researcher, name="script", scope="read", days=7)
    schema = client.get(reverse("api:openapi-json"), **bearer(raw))
    assert schema.status_code == 200 and "/api/v1/runs" in schema.json()["paths"]
    assert client.get(reverse("api:openapi-view"), **bearer(raw)).status_code == 200
    refused = client.get(reverse("api:openapi-json"), **bearer("cj_not-a-token"))
    _problem(refused, 401)


def test_every_refusal_is_a_problem(client, researcher, annotator):
    _problem(client.get(f"{API}/runs"), 401)
    client.force_login(annotator)
    _problem(client.get(f"{API}/runs"), 403)
    client.force_login(researcher)
    _problem(client.get(f"{API}/runs/999999"), 404)
    body = _problem(
        client.post(f"{API}/case-sets", {"name": "x", "size": 0}, content_type="application/json"),
        400,
    )
    assert body["errors"][0]["location"] == "body.size"


@pytest.mark.parametrize(
    ("path", "query", "where"),
    [
        ("/runs", {"status": "sleeping"}, "query.status"),
        ("/case-sets", {"status": "sleeping"}, "query.status"),
        ("/scoring-jobs", {"status": "sleeping"}, "query.status"),
        ("/studies", {"kind": "nonsense"}, "query.kind"),
        ("/runs", {"stauts": "finished"}, "query.stauts"),  # a misspelt filter
        ("/runs/{run}/conversations", {"termination_reason": "bored"}, "query.termination_reason"),
        ("/runs/{run}/conversations", {"agent": "999999"}, "query.agent"),
        ("/runs/{run}/conversations", {"colour": "red"}, "query.colour"),
    ],
)
def test_an_unknown_filter_value_is_a_400_on_every_list(researcher_client, path, query, where):
    run = launched_run(enriched_set(size=1), models=("offline/careful",))
    response = researcher_client.get(API + path.format(run=run.pk), query)
    body = _problem(response, 400)
    assert [error["location"] for error in body["errors"]] == [where]


def test_the_schema_declares_every_answer_of_every_route(researcher_client):
    schema = researcher_client.get(reverse("api:openapi-json")).json()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            answers = operation["responses"]
            assert {"401", "403"} <= set(answers), (method, path)
            if "{" in path:
                assert "404" in answers, (method, path)
            for status, answer in answers.items():
                if status.startswith("4"):
                    assert answer["content"][PROBLEM]["schema"]["$ref"].endswith("/Problem")
                elif status == "204":
                    assert "content" not in answer, (method, path)  # no content, as it says
                elif not any(part in path for part in DOWNLOADS):
                    declared = answer["content"]["application/json"]["schema"]
                    ref = declared.get("$ref") or declared.get("items", {}).get("$ref")
                    assert ref, (method, path, status)  # a declared schema, not a free object
    params = {
        p["name"]
        for p in schema["paths"]["/api/v1/runs/{run_id}/conversations"]["get"]["parameters"]
    }
    assert {"status", "termination_reason", "agent", "cursor", "page_size"} <= params


def _queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, {"page_size": 500})
    assert response.status_code == 200, response.content
    return len(captured.captured_queries)


def test_every_list_costs_the_same_queries_for_one_row_or_several(researcher_client):
    one_set = enriched_set(size=2)
    run = played(launched_run(one_set, models=("offline/careful", "offline/careless")))
    job = scoring.scoring_launch(run=run, jury=juries.jury_demo_ensure())
    lists = ["/case-sets", "/runs", "/scoring-jobs", f"/runs/{run.pk}/conversations",
             f"/scoring-jobs/{job.pk}/scores", "/studies"]  # fmt: skip
    _queries(researcher_client, API + "/runs")  # the session's own first queries, once
    before = {path: _queries(researcher_client, API + path) for path in lists}
    more_sets = [enriched_set(size=2) for _ in range(2)]
    runs = [played(launched_run(each, models=("offline/careful",))) for each in more_sets]
    for each in runs:
        scoring.scoring_launch(run=each, jury=juries.jury_demo_ensure())
    assert Run.objects.count() == 3
    after = {path: _queries(researcher_client, API + path) for path in lists}
    assert after == before


def _lab_jobs(run, job=None, number: int = 0) -> GenerationJob:
    """One lab job of each kind with a unit each (on the run's conversation `number`), stored
    directly, nothing executed; the rubric goes to `job` and the criteria to the first
    upload when there are some."""
    conversation = run.conversations.order_by("pk")[number]
    made = GenerationJob.objects.create(name="q", run=run, generator_model="offline/standard")
    generation = RubricGeneration.objects.create(
        job=job or made, conversation=conversation, status="finished"
    )
    rubric = InstanceRubric.objects.create(generation=generation, conversation=conversation)
    RubricCriterion.objects.create(rubric=rubric, index=0, text="Asks", axis="x", weight=2)
    upload = ExpertCriteriaUpload.objects.order_by("pk").first()
    upload = upload or ExpertCriteriaUpload.objects.create(
        benchmark_set=run.benchmark_set, filename="q.csv", criterion_count=0
    )
    ExpertCriterion.objects.create(upload=upload, entry=conversation.entry, text="Calls 911")
    models = {"judge_model": "offline/standard"}
    study = SensitivityStudy.objects.create(
        name="q", run=run, setup="pairwise", perturber_model="offline/surgical", **models
    )
    NearMiss.objects.create(study=study, conversation=conversation, kind="swap_dose")
    coverage_run = CoverageRun.objects.create(name="q", generation_job=made, **models)
    CoverageCase.objects.create(coverage_run=coverage_run, rubric=rubric)
    refine = RefineStudy.objects.create(
        name="q", generation_job=made, evaluator_model="offline/standard",
        editor_model="offline/standard", **models,
    )  # fmt: skip
    Refinement.objects.create(study=refine, rubric=rubric, arm="rubric")
    AblationStudy.objects.create(
        name="q", run=run, generator_model="offline/standard",
        perturber_model="offline/surgical", **models,
    )  # fmt: skip
    return made


def test_every_lab_list_costs_the_same_queries_for_one_row_or_several(researcher_client):
    run = launched_run(enriched_set(size=3), models=("offline/careful",))
    job = _lab_jobs(run)
    upload = ExpertCriteriaUpload.objects.get()
    lists = ["/lab/imports", f"/lab/imports/{upload.pk}/criteria", "/lab/generation-jobs",
             f"/lab/generation-jobs/{job.pk}/rubrics", "/lab/sensitivity-studies",
             "/lab/coverage-runs", "/lab/refine-studies", "/lab/ablation-studies",
             "/lab/knowledge"]  # fmt: skip
    # The session's own first queries, and the shipped passages stored, once.
    _queries(researcher_client, API + "/lab/knowledge")
    before = {path: _queries(researcher_client, API + path) for path in lists}
    for number in (1, 2):
        _lab_jobs(run, job, number)
        ExpertCriteriaUpload.objects.create(
            benchmark_set=run.benchmark_set, filename="more.csv", criterion_count=0
        )
        KnowledgePassage.objects.create(
            passage_id=f"query-count-{number}", topic="t", title="t", text="t", source="s",
            source_version="1", origin="uploaded",
        )  # fmt: skip
    assert SensitivityStudy.objects.count() == 3 and job.generations.count() == 3
    after = {path: _queries(researcher_client, API + path) for path in lists}
    assert after == before


def test_the_people_and_study_operation_lists_cost_the_same_queries_for_one_row_or_several(
    admin_client_, admin_user
):
    run = launched_run(enriched_set(size=2), models=("offline/careful", "offline/careless"))
    conversations = list(run.conversations.order_by("pk"))
    project = Project.objects.create(name="Counted")
    study = Study.objects.create(project=project, name="Counted", kind="target", sample_size=4)

    def row_each(number: int) -> None:
        """One more person enrolled, item, assignment and adjudication (and project)."""
        person = make_user(f"counted-{number}", Role.ANNOTATOR, Track.CLINICAL)
        ProjectMember.objects.create(project=project, annotator=person, enrolled_by=admin_user,
                                     enrolled_at=timezone.now())  # fmt: skip
        other = Project.objects.create(name=f"Other {number}")
        Study.objects.create(project=other, name=f"Other {number}", kind="target", sample_size=1)
        item = StudyItem.objects.create(
            study=study, conversation=conversations[number], position=number
        )
        Assignment.objects.create(item=item, annotator=person, track=Track.CLINICAL, slot=0,
                                  queue_key=f"counted-{number}")  # fmt: skip
        Adjudication.objects.create(item=item, rubric_id="clinical_safety", reason="clinicians",
                                    gap=2, sent_by=admin_user, adjudicator=person)  # fmt: skip

    lists = ["/people", "/projects", f"/projects/{project.pk}/members",
             f"/studies/{study.pk}/assignments", f"/studies/{study.pk}/adjudications"]  # fmt: skip
    row_each(0)
    _queries(admin_client_, API + "/people")  # the session's own first queries, once
    before = {path: _queries(admin_client_, API + path) for path in lists}
    for number in range(1, 4):
        row_each(number)
    after = {path: _queries(admin_client_, API + path) for path in lists}
    assert after == before


def test_token_create_prints_a_working_token_once(researcher, capsys):
    call_command("token_create", researcher.username, "--scope", "write", "--days", "7")
    printed = capsys.readouterr()
    raw = printed.out.strip()
    token = ApiToken.objects.get(user=researcher)
    assert token.digest == token_digest(raw) and token.scope == "write"
    assert raw not in printed.err and token.prefix in printed.err
