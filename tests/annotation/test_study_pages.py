"""The researcher's study pages: list, create form, dashboard, lock, one annotation."""

from html import unescape

import pytest
from django.urls import reverse

from annotation.engine.sampling import Design
from annotation.models import Assignment, AssignmentHistory, HistoryKind, Study, StudyStatus
from annotation.services import queue
from annotation.services.annotations import (
    Draft,
    annotation_reopen,
    annotation_submit,
)
from jury.services.rubrics import current_versions
from tests.annotation.conftest import annotators, new_study
from tests.annotation.staff_support import annotate, full_scores
from tests.support.text import squashed

pytestmark = pytest.mark.django_db


def form_data(job, **overrides) -> dict:
    data = {
        "project": "Pilot",
        "name": "Round A",
        "kind": "calibration",
        "round_number": 1,
        "scoring_jobs": [job.pk],
        "rubric_versions": [v.pk for v in current_versions()],
        "sample_size": 4,
        "overlap_clinical": 2,
        "overlap_operational": 3,
        "seed": 5,
        "reservation_minutes": 45,
    }
    return data | overrides


def post_new(client, data):
    return client.post(reverse("annotation:staff_study_new"), data)


# --- list and create -----------------------------------------------------------------------


def test_the_list_shows_each_study_with_its_kind_status_and_progress(
    researcher_client, scored_job, study, clinicians
):
    new_study(scored_job, name="Round 1", kind="calibration", size=3, project="Other")
    annotate(study.items.first(), clinicians[0])
    page = researcher_client.get(reverse("annotation:staff_studies")).content.decode()
    assert "Target study" in page and "Round 1" in page and "Calibration round" in page
    seats = study.items.count() * (2 + 2)  # both tracks need 2 annotations per item
    assert f"1 / {seats} ({round(100 / seats)}%)" in page


def test_the_create_form_draws_the_sample_and_opens_the_study_page(researcher_client, scored_job):
    response = post_new(researcher_client, form_data(scored_job))
    study = Study.objects.get(name="Round A")
    assert response.status_code == 302
    assert response["Location"] == reverse("annotation:staff_study", args=[study.pk])
    assert study.items.count() == 4 and study.overlap_operational == 3
    assert study.project.name == "Pilot" and study.round_number == 1


def test_the_create_form_sets_the_alt_test_margin_and_drift_flag_or_keeps_the_defaults(
    researcher_client, scored_job
):
    post_new(researcher_client, form_data(scored_job))
    assert Study.objects.get(name="Round A").alt_test_epsilon == 0.2
    chosen = form_data(scored_job, name="Round B", round_number=2, alt_test_epsilon="0.1",
                       drift_flag_points="0.75")  # fmt: skip
    post_new(researcher_client, chosen)
    study = Study.objects.get(name="Round B")
    assert (study.alt_test_epsilon, study.drift_flag_points) == (0.1, 0.75)
    refused = post_new(researcher_client, form_data(scored_job, name="Round C", round_number=3,
                                                    alt_test_epsilon="2"))  # fmt: skip
    assert "alt_test_epsilon" in refused.context["form"].errors
    assert not Study.objects.filter(name="Round C").exists()


def test_the_create_form_offers_finished_jobs_and_every_current_rubric_by_default(
    researcher_client, scored_job
):
    page = researcher_client.get(reverse("annotation:staff_study_new"))
    form = page.context["form"]
    assert list(form.fields["scoring_jobs"].queryset) == [scored_job]
    rubric_ids = {
        v.rubric_id for v in current_versions() if v.pk in form.initial["rubric_versions"]
    }
    assert {"profile_realism", "conversation_realism", "clinical_safety"} <= rubric_ids


@pytest.mark.parametrize("overlap", [1, 5])
def test_an_overlap_out_of_range_is_named_under_its_field(researcher_client, scored_job, overlap):
    response = post_new(researcher_client, form_data(scored_job, overlap_clinical=overlap))
    assert response.status_code == 200
    assert "2 to 4" in response.context["form"].errors["overlap_clinical"][0]
    assert not Study.objects.filter(name="Round A").exists()


def test_a_study_without_a_scoring_job_is_refused(researcher_client, scored_job):
    response = post_new(researcher_client, form_data(scored_job, scoring_jobs=[]))
    assert "finished scoring job" in response.context["form"].errors["scoring_jobs"][0]
    assert not Study.objects.exists()


def test_a_study_name_naming_a_model_is_refused(researcher_client, scored_job):
    response = post_new(researcher_client, form_data(scored_job, name="Careless check"))
    assert "must not name a model" in response.context["form"].errors["name"][0]
    assert not Study.objects.exists()


def test_a_new_project_name_is_created_and_an_existing_one_reused(researcher_client, scored_job):
    post_new(researcher_client, form_data(scored_job, project="Fresh project"))
    post_new(researcher_client, form_data(scored_job, project="Fresh project", name="Round B",
                                          round_number=2))  # fmt: skip
    assert Study.objects.filter(project__name="Fresh project").count() == 2


# --- the study page ------------------------------------------------------------------------


def test_the_study_page_shows_coverage_as_table_and_heat_map_and_names_shortfalls(
    researcher_client, study
):
    page = researcher_client.get(reverse("annotation:staff_study", args=[study.pk]))
    html = page.content.decode()
    coverage = study.coverage
    assert 'id="coverage-table"' in html
    assert html.count('class="chart heatmap"') == len(coverage["models"]) == 2
    assert coverage["shortfalls"], "8 conversations cannot fill 60 strata"
    assert len(page.context["coverage"]["shortfalls"]) == len(coverage["shortfalls"])
    first = coverage["shortfalls"][0]
    assert f"jury score {first['bin']}: {first['sampled']} of {first['wanted']} wanted" in html
    assert "offline/careful" in html  # staff pages may name the models


def test_the_study_page_lists_the_sampling_strata_with_each_ones_chance(
    researcher_client, scored_job
):
    study = new_study(scored_job, size=4)
    page = researcher_client.get(reverse("annotation:staff_study", args=[study.pk]))
    text = unescape(page.content.decode())
    assert 'id="sampling-strata"' in text
    for stratum in Design.from_coverage(study.coverage).strata:
        assert (f"<td>{stratum.key}</td>" in text
                and f"{stratum.drawn / stratum.size:.3f}" in text)  # fmt: skip
    assert "exactly drawn / size of its stratum" in text


def test_the_progress_region_is_polled_alone_while_the_study_is_open(researcher_client, study):
    url = reverse("annotation:staff_study", args=[study.pk])
    page = researcher_client.get(url).content.decode()
    assert f'hx-get="{url}?fragment=progress"' in page
    fragment = researcher_client.get(url, {"fragment": "progress"}, HTTP_HX_REQUEST="true")
    html = fragment.content.decode()
    assert html.lstrip().startswith('<section id="study-progress"')
    assert "coverage-table" not in html and "<html" not in html


def test_a_locked_study_stops_polling(researcher_client, study):
    study.status = StudyStatus.LOCKED
    study.save()
    page = researcher_client.get(reverse("annotation:staff_study", args=[study.pk]))
    assert "?fragment=progress" not in page.content.decode()


def test_locking_asks_first_then_locks_and_refuses_new_work(researcher_client, study, clinicians):
    url = reverse("annotation:staff_study_lock", args=[study.pk])
    confirm = researcher_client.get(url)
    assert "cannot be undone" in confirm.content.decode()
    assert Study.objects.get(pk=study.pk).status == StudyStatus.OPEN
    response = researcher_client.post(url)
    assert response.status_code == 302
    study.refresh_from_db()
    assert study.is_locked and study.locked_at is not None
    with pytest.raises(queue.StudyClosed):
        queue.next_assignment(study=study, annotator=clinicians[0])


# --- one annotation: history and invalidation -----------------------------------------------


def scored_then_edited(study, annotator):
    assignment = queue.next_assignment(study=study, annotator=annotator)
    first = Draft(scores=full_scores(study, annotator.track, 3))
    saved = annotation_submit(assignment, draft=first, version=0, actor=annotator)
    reopened = annotation_reopen(saved, actor=annotator)
    second = Draft(scores=full_scores(study, annotator.track, 3, clinical_safety=4))
    return annotation_submit(reopened, draft=second, version=reopened.version, actor=annotator)


def test_the_assignment_page_shows_who_changed_what_old_and_new(
    researcher_client, study, clinicians
):
    assignment = scored_then_edited(study, clinicians[0])
    page = squashed(
        researcher_client.get(reverse("annotation:staff_assignment", args=[assignment.public_id]))
    )
    assert "Reopened" in page and page.count("Submitted") >= 2 and "clinical-0" in page
    assert "scores: Clinical Safety</strong>: <del>3</del> → <ins>4</ins>" in page


def test_invalidating_keeps_the_annotation_and_logs_why(researcher_client, researcher, study,
                                                         clinicians):  # fmt: skip
    assignment = annotate(study.items.first(), clinicians[0])
    url = reverse("annotation:staff_assignment_invalidate", args=[assignment.public_id])
    response = researcher_client.post(url, {"reason": "scored the wrong conversation"})
    assert response.status_code == 302
    kept = Assignment.objects.get(pk=assignment.pk)
    assert kept.is_invalidated and kept.scores == assignment.scores and kept.slot is None
    entry = AssignmentHistory.objects.get(assignment=kept, kind=HistoryKind.INVALIDATE)
    assert entry.actor == researcher and entry.note == "scored the wrong conversation"
    page = researcher_client.get(response["Location"]).content.decode()
    assert "invalidated" in page and "scored the wrong conversation" in page


def test_invalidating_without_a_reason_is_refused(researcher_client, study, clinicians):
    assignment = annotate(study.items.first(), clinicians[0])
    url = reverse("annotation:staff_assignment_invalidate", args=[assignment.public_id])
    response = researcher_client.post(url, {"reason": "  "})
    assert response.status_code == 200 and response.context["form"].errors["reason"]
    assert not Assignment.objects.get(pk=assignment.pk).is_invalidated


def test_synthetic_and_practice_work_is_marked_on_the_staff_pages(researcher_client, calibration):
    simulated = annotators("clinical", 1, prefix="sim")[0]
    trainee = annotators("clinical", 1, licensed=False, prefix="trainee")[0]
    item = calibration.items.first()
    synthetic = annotate(item, simulated, synthetic=True)
    practice = annotate(item, trainee)
    dashboard = researcher_client.get(reverse("annotation:staff_study", args=[calibration.pk]))
    row = _row_of(dashboard.content.decode(), "sim-0")
    assert "synthetic" in row
    assert "practice" in _row_of(dashboard.content.decode(), "trainee-0")
    for assignment, mark in ((synthetic, "synthetic"), (practice, "practice")):
        page = researcher_client.get(
            reverse("annotation:staff_assignment", args=[assignment.public_id])
        )
        assert f">{mark}</span>" in page.content.decode()


def _row_of(html: str, name: str) -> str:
    start = html.index(f"<tr><td>{name}")
    return html[start : html.index("</tr>", start)]


def test_the_admin_site_shows_study_data_but_offers_no_edit(admin_client_, study, clinicians):
    assignment = annotate(study.items.first(), clinicians[0])
    listing = admin_client_.get(reverse("admin:annotation_assignment_changelist"))
    assert listing.status_code == 200 and str(assignment.public_id) in listing.content.decode()
    assert admin_client_.get(reverse("admin:annotation_assignment_add")).status_code == 403
    delete = reverse("admin:annotation_assignment_delete", args=[assignment.pk])
    assert admin_client_.post(delete, {"post": "yes"}).status_code == 403
    assert Assignment.objects.filter(pk=assignment.pk).exists()
