"""Evaluation pages: a study started from the web, its progress fragment, results, exports."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from jury.services import juries
from rubric_lab.models import ExpertCriterion, SensitivityStudy
from rubric_lab.services import sensitivity

pytestmark = pytest.mark.django_db


def test_a_researcher_starts_a_study_and_sees_results_chart_and_diffs(
    researcher_client, played_run
):
    response = researcher_client.post(
        reverse("rubric_lab:sensitivity_list"),
        {"run": played_run.pk, "setup": "generic", "jury": juries.jury_demo_ensure().pk,
         "perturber_model": "offline/surgical", "reference_model": "offline/careful",
         "perturbations": ["claim_without_tool_call"], "max_cases": 2, "seed": 0,
         "use_cache": "on"},
    )  # fmt: skip
    study = SensitivityStudy.objects.get()
    assert response.status_code == 302
    # The launch leased the pairs to the workers; run each as its worker would, with its token.
    for pair_id, token in study.pairs.values_list("pk", "lease_token"):
        assert token and sensitivity.near_miss_execute(pair_id, token)

    page = researcher_client.get(reverse("rubric_lab:sensitivity", args=[study.pk]))
    html = page.content.decode()
    assert "Claim an action without its tool call" in html and "<svg" in html
    fragment = researcher_client.get(
        reverse("rubric_lab:sensitivity", args=[study.pk]) + "?fragment=progress",
        headers={"HX-Request": "true"},
    )
    assert 'id="progress"' in fragment.content.decode() and "<svg" not in fragment.content.decode()
    pair = study.pairs.first()
    detail = researcher_client.get(reverse("rubric_lab:near_miss", args=[pair.pk])).content.decode()
    assert "<del>" in detail
    export = researcher_client.get(reverse("rubric_lab:sensitivity_export", args=[study.pk, "csv"]))
    assert export["Content-Type"].startswith("text/csv") and b"auroc" in export.content


def test_a_bad_launch_shows_the_reason_and_starts_nothing(researcher_client, played_run):
    response = researcher_client.post(
        reverse("rubric_lab:sensitivity_list"),
        {"run": played_run.pk, "setup": "pairwise", "judge_model": "offline/standard",
         "perturber_model": "offline/nobody"},
    )  # fmt: skip
    assert "unknown offline behaviour" in response.content.decode()
    assert not SensitivityStudy.objects.exists()


def test_an_upload_with_bad_rows_names_them_on_the_page(researcher_client, played_run):
    upload = SimpleUploadedFile("gold.csv", b"case,criterion\n0,Good\n77,Bad case\n")
    response = researcher_client.post(
        reverse("rubric_lab:coverage_list"),
        {"action": "upload", "benchmark_set": played_run.benchmark_set.pk, "file": upload},
    )
    assert "row 3: case" in response.content.decode()
    assert not ExpertCriterion.objects.exists()


def test_the_preview_shows_every_perturbation_of_a_conversation(researcher_client, played_run):
    conversation = played_run.conversations.filter(run_agent__model="offline/careful").first()
    html = researcher_client.get(
        reverse("rubric_lab:perturbation_preview", args=[conversation.public_id])
    ).content.decode()
    assert html.count('<section class="card">') == 6
