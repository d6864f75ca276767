"""Rubric lab pages: knowledge base, launching the pipeline, the pipeline page, the rubric
and its scores. Staff only."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from rubric_lab.engine.pipeline import STAGES
from rubric_lab.models import GenerationJob, InstanceScore, KnowledgePassage
from rubric_lab.services import instance_scoring, pipeline

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def generated(played_run):
    conversation = played_run.conversations.scorable().first()
    job = pipeline.generation_job_launch(
        conversations=[conversation], generator_model="offline/standard", run=played_run
    )
    generation = job.generations.get()
    pipeline.generation_execute(generation.pk)
    generation.refresh_from_db()
    return generation


def test_the_knowledge_base_lists_passages_and_searches_them(researcher_client):
    page = researcher_client.get(reverse("rubric_lab:kb"))
    assert page.status_code == 200
    assert b"rf-chest-pain" in page.content
    found = researcher_client.get(
        reverse("rubric_lab:kb"), {"q": "suicide 988 crisis", "retriever": "bm25"}, **HTMX
    )
    assert found.status_code == 200
    body = found.content.decode()
    assert body.lstrip().startswith('<div id="kb-results">')
    assert body.index("mh-crisis-resources") < body.index("</tr>", body.index("<tbody>"))


def test_a_bad_upload_is_refused_with_every_problem_and_nothing_saved(researcher_client):
    researcher_client.get(reverse("rubric_lab:kb"))
    before = KnowledgePassage.objects.count()
    bad = SimpleUploadedFile(
        "bad.csv", b"passage_id,topic,title,text,source,source_version\nBad Id,t,,short,,1\n"
    )
    response = researcher_client.post(reverse("rubric_lab:kb_upload"), {"file": bad})
    assert response.status_code == 400
    assert b"row 1: title is missing or empty" in response.content
    assert KnowledgePassage.objects.count() == before


def test_the_launch_form_starts_a_job_for_one_conversation(researcher_client, played_run):
    conversation = played_run.conversations.scorable().first()
    response = researcher_client.post(
        reverse("rubric_lab:pipeline_new"),
        {"run": played_run.pk, "conversation": str(conversation.public_id), "limit": 5,
         "generator_model": "offline/standard", "judge_model": "", "retriever": "embedding",
         "top_k": 3, "skip_intent": "on", "use_cache": "on"},
    )  # fmt: skip
    job = GenerationJob.objects.get()
    assert response.status_code == 302 and response.url == reverse(
        "rubric_lab:pipeline", args=[job.pk]
    )
    assert job.skip_intent and not job.skip_audit and job.retriever == "embedding"
    assert list(job.generations.values_list("conversation", flat=True)) == [conversation.pk]
    assert (job.method, job.audit_rounds, job.sampling) == ("pipeline", 3, {})


def test_the_launch_form_sets_the_method_the_fact_ablation_and_each_stages_sampling(
    researcher_client, played_run
):
    response = researcher_client.post(
        reverse("rubric_lab:pipeline_new"),
        {"run": played_run.pk, "limit": 1, "generator_model": "offline/standard",
         "retriever": "bm25", "top_k": 3, "skip_facts": "on", "audit_rounds": 2,
         "temperature": "0.7", "top_p": "0.9", "temperature_audit": "0.2"},
    )  # fmt: skip
    job = GenerationJob.objects.get()
    assert response.status_code == 302 and job.skip_facts and job.audit_rounds == 2
    assert job.sampling["routing"] == {"temperature": 0.7, "top_p": 0.9}
    assert job.sampling["audit"] == {"temperature": 0.2, "top_p": 0.9}
    assert "direct" not in job.sampling

    researcher_client.post(
        reverse("rubric_lab:pipeline_new"),
        {"run": played_run.pk, "limit": 1, "generator_model": "offline/standard",
         "retriever": "bm25", "top_k": 3, "method": "direct", "top_p_direct": "0.5"},
    )  # fmt: skip
    direct = GenerationJob.objects.get(method="direct")
    assert direct.sampling == {"direct": {"top_p": 0.5}}


def test_the_launch_form_refuses_an_unknown_generator(researcher_client, played_run):
    response = researcher_client.post(
        reverse("rubric_lab:pipeline_new"),
        {"run": played_run.pk, "limit": 5, "generator_model": "offline/sloppy",
         "retriever": "bm25", "top_k": 3},
    )  # fmt: skip
    assert response.status_code == 200
    assert b"offline/standard" in response.content and not GenerationJob.objects.exists()


def test_the_pipeline_page_reads_stage_by_stage_and_polls_while_running(
    researcher_client, generated
):
    page = researcher_client.get(reverse("rubric_lab:generation", args=[generated.pk]))
    body = page.content.decode()
    order = [body.index(f'id="stage-{name}"') for name in STAGES]
    assert order == sorted(order)
    assert "You plan the evidence search" in body and "hx-trigger" not in body
    pending = pipeline.generation_job_launch(
        conversations=[generated.conversation], generator_model="offline/flaky"
    ).generations.get()
    live = researcher_client.get(reverse("rubric_lab:generation", args=[pending.pk]), **HTMX)
    assert 'hx-trigger="every 2s"' in live.content.decode()


def test_the_job_page_links_each_rubric(researcher_client, generated):
    page = researcher_client.get(reverse("rubric_lab:pipeline", args=[generated.job.pk]))
    assert reverse("rubric_lab:rubric", args=[generated.rubric.pk]).encode() in page.content


def test_the_rubric_page_links_criteria_to_facts_and_passages(researcher_client, generated):
    rubric = generated.rubric
    page = researcher_client.get(reverse("rubric_lab:rubric", args=[rubric.pk])).content.decode()
    criterion = rubric.criteria.exclude(fact_ids=[]).first()
    assert f'href="#fact-{criterion.fact_ids[0]}"' in page
    assert f'id="fact-{criterion.fact_ids[0]}"' in page
    assert f'id="passage-{criterion.passage_ids[0]}"' in page
    assert "scripted, not a model" in page


def test_scoring_from_the_rubric_page_shows_the_decisions(researcher_client, generated):
    rubric = generated.rubric
    response = researcher_client.post(
        reverse("rubric_lab:rubric_score", args=[rubric.pk]),
        {"conversation": str(rubric.conversation.public_id), "judge_model": "offline/standard"},
    )
    score = InstanceScore.objects.get()
    assert response.url == reverse("rubric_lab:score", args=[score.pk])
    assert instance_scoring.instance_score_execute(score.pk, score.lease_token)  # as the worker
    page = researcher_client.get(response.url).content.decode()
    assert "Weighted sum" in page and page.count("Scripted rule") == rubric.criteria.count()


@pytest.mark.parametrize(
    "name", ["rubric_lab:kb", "rubric_lab:pipelines", "rubric_lab:pipeline_new"]
)
def test_annotators_are_refused(client, annotator, name):
    client.force_login(annotator)
    assert client.get(reverse(name)).status_code == 403


def test_the_pipeline_page_shows_each_audit_round_and_sampling_not_sent(
    researcher_client, played_run
):
    conversation = played_run.conversations.scorable().first()
    job = pipeline.generation_job_launch(
        conversations=[conversation], generator_model="offline/standard",
        sampling={"routing": {"temperature": 0.7, "top_p": 0.9}},
    )  # fmt: skip
    generation = job.generations.get()
    pipeline.generation_execute(generation.pk)

    body = researcher_client.get(reverse("rubric_lab:generation", args=[generation.pk])).content
    page = body.decode()
    assert "Round 1: <strong>revise</strong>" in page and "Round 2: <strong>pass</strong>" in page
    assert "temperature 0.7, top-p 0.9" in page and "not sent" in page  # offline: ignored


def test_the_lab_landing_page_links_every_part_of_the_lab(researcher_client):
    page = researcher_client.get(reverse("rubric_lab:pipelines")).content.decode()
    for name in ("sensitivity_list", "coverage_list", "refine_list", "ablation_list"):
        assert f'href="{reverse(f"rubric_lab:{name}")}"' in page
