"""Jury versions on the pages: the families list, a version's calibration page, the launch form
without fold juries, and reports and exports that name the version that scored them."""

import csv
import io

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from jury.engine.calibration import Calibration, Example, RubricCalibration, ScoreMap
from jury.services import juries
from tests.jury.services.builders import scored

pytestmark = pytest.mark.django_db

STANDARD, STRICT = juries.DEMO_JUDGES


def calibration(example_id: int) -> Calibration:
    return Calibration(
        {
            "clinical_safety": RubricCalibration(
                judge_maps={STANDARD: ScoreMap((1.0, 3.0, 5.0), (1.5, 2.25, 4.75))},
                weights={STANDARD: 0.8, STRICT: 0.4},
                intercept=-0.125,
                aggregate_map=ScoreMap((1.0, 5.0), (1.0, 4.5)),
                examples=(Example(example_id, 2, "Missed the warfarin interaction."),),
            )
        }
    )


def learned(run, **extra) -> dict:
    items = list(run.conversations.order_by("pk").values_list("pk", flat=True)[:3])
    return {"study_id": 1, "study_name": "Pilot study", "variant": "examples", "items": items,
            "n_ratings": 24, **extra}  # fmt: skip


@pytest.fixture
def family(played_run):
    """The demo jury, a calibrated v2 and a fold jury."""
    base = juries.jury_demo_ensure()
    example = played_run.conversations.order_by("pk").first()
    v2 = juries.jury_version_create(base, calibration(example.pk), learned_from=learned(played_run))
    fold = juries.jury_version_create(
        base,
        calibration(example.pk),
        learned_from=learned(played_run, label="Pilot study fold 2/5", fold=1, folds=5),
        purpose=juries.FOLD,
    )
    return base, v2, fold, example


def test_the_juries_list_shows_each_family_with_its_versions_and_hides_fold_juries(
    researcher_client, family
):
    base, v2, fold, _ = family
    page = " ".join(researcher_client.get(reverse("jury:juries")).content.decode().split())
    assert v2.name == f"{base.name} · v2" and v2.name in page
    assert (
        reverse("jury:jury", args=[v2.pk]) in page and reverse("jury:jury", args=[base.pk]) in page
    )
    assert "examples, judge maps, judge weights, aggregate map" in page
    assert "study Pilot study · 3 conversations" in page
    assert fold.name not in page
    assert page.index(base.name) < page.index(v2.name)  # the first version heads its family


def test_a_version_page_shows_its_whole_calibration_and_what_it_learned_from(
    researcher_client, family, played_run
):
    base, v2, _, example = family
    page = researcher_client.get(reverse("jury:jury", args=[v2.pk])).content.decode()
    for text in ("2.25", "4.75", "0.800", "0.400", "-0.125", "4.50"):  # maps, weights, intercept
        assert text in page, text
    assert "Missed the warfarin interaction." in page
    assert reverse("benchmark:conversation", args=[example.public_id]) in page
    assert reverse("annotation:staff_study", args=[1]) in page and "Pilot study" in page
    assert "Conversations it learned from (3)" in page
    for conversation in played_run.conversations.order_by("pk")[:3]:
        assert reverse("benchmark:conversation", args=[conversation.public_id]) in page
    assert reverse("jury:jury", args=[base.pk]) in page  # the family's other version
    plain = researcher_client.get(reverse("jury:jury", args=[base.pk])).content.decode()
    assert "none: the judges' plain mean" in plain


def test_annotators_cannot_open_a_jury_page(client, annotator, family):
    client.force_login(annotator)
    assert client.get(reverse("jury:jury", args=[family[1].pk])).status_code == 403


def test_the_launch_form_offers_versions_but_never_a_fold_jury(
    researcher_client, family, played_run
):
    _, v2, fold, _ = family
    page = researcher_client.get(reverse("jury:score_run", args=[played_run.pk])).content.decode()
    assert f'value="{v2.pk}"' in page and f'value="{fold.pk}"' not in page
    refused = researcher_client.post(
        reverse("jury:score_run", args=[played_run.pk]), {"jury": fold.pk}
    )
    assert refused.status_code == 200 and b"not one of the available choices" in refused.content
    with pytest.raises(CommandError, match="is a fold jury"):
        call_command("score_run", str(played_run.pk), "--jury", str(fold.pk))


def test_reports_job_pages_and_exports_name_the_calibrated_version(
    researcher_client, family, played_run
):
    _, v2, _, _ = family
    job = scored(played_run, v2)
    summary = (
        "calibrated (examples, judge maps, judge weights, aggregate map) from study Pilot study"
    )
    for url in (reverse("jury:job", args=[job.pk]), reverse("jury:report", args=[job.pk])):
        page = researcher_client.get(url).content.decode()
        assert v2.name in page and summary in page, url
    export = (
        researcher_client.get(reverse("jury:report_export", args=[job.pk, "models", "csv"]))
        .getvalue()
        .decode()
    )
    assert export.startswith(f"# Scored by jury {v2.name}, {summary}")
    scores = researcher_client.get(reverse("jury:job_scores_export", args=[job.pk, "csv"]))
    rows = list(csv.DictReader(io.StringIO(scores.getvalue().decode())))
    assert rows and {row["jury"] for row in rows} == {v2.name}


def test_an_uncalibrated_jury_exports_as_before(researcher_client, scored_job):
    export = (
        researcher_client.get(reverse("jury:report_export", args=[scored_job.pk, "models", "csv"]))
        .getvalue()
        .decode()
    )
    assert export.startswith("Model,")
    scores = researcher_client.get(reverse("jury:job_scores_export", args=[scored_job.pk, "csv"]))
    header = scores.getvalue().decode().splitlines()[0].split(",")
    assert header[:2] == ["score_id", "jury"]
