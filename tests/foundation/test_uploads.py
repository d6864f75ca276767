"""Every upload and pasted-text form refuses a 50 MB file, a YAML alias bomb and a binary file
with a clear error, and saves nothing."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Assignment
from benchmark.models import AgentConfig, Distribution
from common.safe_yaml import MAX_ALIASES, YamlTooComplex, safe_load
from jury.models import RubricVersion
from jury.services.rubrics import current_versions
from rubric_lab.models import ExpertCriterion, KnowledgePassage
from tests.annotation.conftest import new_study
from tests.jury.services.builders import scored_job, world, world_job  # noqa: F401

pytestmark = pytest.mark.django_db

FIFTY_MB = b"a: 1\n" * 10_000_000
BINARY = bytes(range(256)) * 64
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}]\n"
    for i in range(8)
)


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content)


def test_an_alias_bomb_is_refused_before_it_is_expanded():
    with pytest.raises(YamlTooComplex, match="aliases"):
        safe_load(BOMB)
    assert safe_load("a: &x 1\nb: *x\n") == {"a": 1, "b": 1}  # a few aliases are fine
    assert BOMB.count("*") > MAX_ALIASES


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (FIFTY_MB, "uploads are limited to 5 MB"),
        (BINARY, "binary file"),
        (BOMB.encode(), "aliases"),
    ],  # fmt: skip
)
def test_the_distribution_upload_refuses_it(researcher_client, content, message):
    before = Distribution.objects.count()
    response = researcher_client.post(
        reverse("benchmark:distribution_new"),
        {"name": "bad", "yaml_file": upload("d.yaml", content)},
    )
    assert message in response.content.decode()
    assert Distribution.objects.count() == before


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (FIFTY_MB, "uploads are limited to 5 MB"),
        (BINARY, "not UTF-8 text"),
        (BOMB.encode(), "aliases"),
    ],  # fmt: skip
)
def test_the_knowledge_upload_refuses_it(researcher_client, content, message):
    from rubric_lab.services.knowledge import knowledge_ensure_shipped

    knowledge_ensure_shipped()
    before = KnowledgePassage.objects.count()
    response = researcher_client.post(
        reverse("rubric_lab:kb_upload"), {"file": upload("more.yaml", content)}, follow=True
    )
    assert message in response.content.decode()
    assert KnowledgePassage.objects.count() == before


@pytest.mark.parametrize(
    ("content", "message"),
    [(FIFTY_MB, "uploads are limited to 5 MB"), (BINARY, "binary file")],
)
def test_the_expert_criteria_upload_refuses_it(researcher_client, scored_job, content, message):  # noqa: F811
    response = researcher_client.post(
        reverse("rubric_lab:coverage_list"),
        {"action": "upload", "benchmark_set": scored_job.run.benchmark_set.pk,
         "file": upload("gold.csv", content)},
    )  # fmt: skip
    assert message in str(response.context["upload_form"].errors["file"])
    assert not ExpertCriterion.objects.exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [(FIFTY_MB, "uploads are limited to 5 MB"), (BINARY, "the file is not text")],
)
def test_the_annotation_import_refuses_it(researcher_client, scored_job, content, message):  # noqa: F811
    study = new_study(scored_job)
    response = researcher_client.post(
        reverse("annotation:staff_study_import", args=[study.pk]),
        {"file": upload("scores.csv", content)},
    )
    assert message in response.content.decode()
    assert not Assignment.objects.filter(item__study=study).exists()


def test_a_pasted_rubric_or_agent_config_bomb_is_refused(admin_client_):
    rubric = next(v for v in current_versions() if v.rubric_id == "clinical_safety")
    before = RubricVersion.objects.count()
    response = admin_client_.post(
        reverse("jury:rubric_new_version", args=[rubric.pk]), {"yaml_text": BOMB, "note": "x"}
    )
    assert "aliases" in response.content.decode()
    assert RubricVersion.objects.count() == before
    configs = AgentConfig.objects.count()
    response = admin_client_.post(reverse("benchmark:agents"), {"yaml_text": BOMB})
    assert "aliases" in response.content.decode()
    assert AgentConfig.objects.count() == configs


def test_a_pasted_text_over_the_limit_gets_the_styled_400_page(admin_client_):
    rubric = next(v for v in current_versions() if v.rubric_id == "clinical_safety")
    response = admin_client_.post(
        reverse("jury:rubric_new_version", args=[rubric.pk]),
        {"yaml_text": "x" * 6_000_000, "note": "huge"},
    )
    assert response.status_code == 400
    assert (
        "limited to 5 MB" in response.content.decode() and "way-back" in response.content.decode()
    )
