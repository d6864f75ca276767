"""Pages for distributions, benchmark sets, entries and agent configurations."""

import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from benchmark.engine.distribution import DEFAULT_DISTRIBUTION_PATH
from benchmark.models import AgentConfig, BenchmarkEntry, BenchmarkSet, Distribution, EntryStatus
from tests.benchmark.conftest import SET_SIZE, enrich_all, make_set

pytestmark = pytest.mark.django_db

DEFAULT_YAML = DEFAULT_DISTRIBUTION_PATH.read_text(encoding="utf-8")
HTMX = {"HTTP_HX_REQUEST": "true"}


def line_of(text: str, fragment: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if fragment in line)


def upload(client, text: str, name: str = "Edited"):
    return client.post(
        reverse("benchmark:distribution_new"),
        {
            "name": name,
            "yaml_file": SimpleUploadedFile("mix.yaml", text.encode()),
        },
    )


# --- distributions ------------------------------------------------------------------------


def test_the_distribution_list_shows_the_shipped_default(researcher_client):
    response = researcher_client.get(reverse("benchmark:distributions"))
    assert response.status_code == 200
    assert "shipped default" in response.content.decode()


def test_a_distribution_page_shows_its_target_shares(researcher_client, distribution):
    response = researcher_client.get(reverse("benchmark:distribution", args=[distribution.pk]))
    page = response.content.decode()
    assert response.status_code == 200
    assert "Essential hypertension" in page and distribution.fingerprint in page


def test_the_new_distribution_form_starts_from_a_copy(researcher_client, distribution):
    response = researcher_client.get(
        reverse("benchmark:distribution_new") + f"?from={distribution.pk}"
    )
    assert response.status_code == 200
    assert "(edited)" in response.content.decode()


def test_the_new_distribution_form_ignores_a_malformed_copy_reference(researcher_client):
    response = researcher_client.get(reverse("benchmark:distribution_new") + "?from=abc")
    assert response.status_code == 200


def test_a_valid_upload_is_saved(researcher_client, researcher):
    edited = DEFAULT_YAML.replace("Essential hypertension: 2.2", "Essential hypertension: 9")
    response = upload(researcher_client, edited, name="Hypertension heavy")
    saved = Distribution.objects.get(name="Hypertension heavy")
    assert response.status_code == 302
    assert response["Location"] == reverse("benchmark:distribution", args=[saved.pk])
    assert saved.yaml_text == edited and saved.created_by == researcher


def test_pasted_yaml_is_saved_too(researcher_client):
    response = researcher_client.post(
        reverse("benchmark:distribution_new"),
        {
            "name": "Pasted",
            "yaml_text": DEFAULT_YAML.replace("Asthma: 2.0", "Asthma: 5"),
        },
    )
    assert response.status_code == 302
    assert Distribution.objects.filter(name="Pasted").exists()


def test_malformed_yaml_is_refused_naming_the_line(researcher_client):
    broken = DEFAULT_YAML.replace("  COPD: 1.7", "  COPD: 1.7: 2")
    response = upload(researcher_client, broken)
    assert response.status_code == 200
    assert f"line {line_of(broken, 'COPD: 1.7: 2')}, (top level): invalid YAML" in (
        response.content.decode()
    )
    assert not Distribution.objects.filter(name="Edited").exists()


def test_a_negative_weight_is_refused_naming_its_line(researcher_client):
    broken = DEFAULT_YAML.replace("Hypothyroidism: 1.7", "Hypothyroidism: -1")
    page = upload(researcher_client, broken).content.decode()
    assert f"line {line_of(broken, 'Hypothyroidism: -1')}" in page
    assert "must not be negative" in page
    assert not Distribution.objects.filter(name="Edited").exists()


def test_an_unknown_attribute_is_refused(researcher_client):
    broken = DEFAULT_YAML.replace("attributes:\n", "attributes:\n  eye_colour:\n    blue: 1\n", 1)
    page = upload(researcher_client, broken).content.decode()
    assert "unknown attribute" in page and "eye_colour" in page
    assert not Distribution.objects.filter(name="Edited").exists()


def test_an_empty_form_asks_for_yaml(researcher_client):
    page = researcher_client.post(reverse("benchmark:distribution_new"), {"name": "x"})
    assert "Upload a file or paste" in page.content.decode()


# --- benchmark sets -------------------------------------------------------------------------


def test_the_set_list_shows_each_set(researcher_client, ready_set):
    response = researcher_client.get(reverse("benchmark:sets"))
    assert response.status_code == 200
    assert ready_set.name in response.content.decode()


def test_the_new_set_form_renders(researcher_client):
    assert researcher_client.get(reverse("benchmark:set_new")).status_code == 200


def test_posting_a_set_creates_it_and_enriches_its_entries_in_the_background(
    researcher_client, distribution, eager_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = researcher_client.post(
            reverse("benchmark:set_new"),
            {
                "name": "From the form",
                "distribution": distribution.pk,
                "size": 4,
                "sampler_seed": 5,
                "generator_model": "offline/standard",
            },
        )
    benchmark_set = BenchmarkSet.objects.get(name="From the form")
    assert response.status_code == 302
    assert response["Location"] == reverse("benchmark:set", args=[benchmark_set.pk])
    assert len(callbacks) == 1  # the entries are sent to the queue only after the commit
    assert benchmark_set.entries.filter(status=EntryStatus.READY).count() == 4


def test_a_set_with_an_unknown_model_provider_is_refused(researcher_client, distribution):
    response = researcher_client.post(
        reverse("benchmark:set_new"),
        {
            "name": "Bad",
            "distribution": distribution.pk,
            "size": 4,
            "sampler_seed": 5,
            "generator_model": "nowhere/model",
        },
    )
    assert response.status_code == 200
    assert not BenchmarkSet.objects.filter(name="Bad").exists()


def test_the_set_page_lists_its_entries(researcher_client, ready_set):
    response = researcher_client.get(reverse("benchmark:set", args=[ready_set.pk]))
    assert response.status_code == 200
    assert response.context["page"].paginator.count == SET_SIZE
    assert ready_set.entries.first().patient_name in response.content.decode()


@pytest.mark.parametrize("field", BenchmarkEntry.FILTER_FIELDS)
def test_each_filter_narrows_the_entries(researcher_client, distribution, field):
    benchmark_set = enrich_all(make_set(distribution, size=30))
    benchmark_set.entries.filter(index=0).update(status=EntryStatus.FAILED, complexity="")
    value = benchmark_set.entries.values_list(field, flat=True).get(index=1)
    response = researcher_client.get(
        reverse("benchmark:set", args=[benchmark_set.pk]), {field: value}
    )
    shown = {entry.pk for entry in response.context["page"]}
    expected = set(benchmark_set.entries.filter(**{field: value}).values_list("pk", flat=True))
    assert shown == expected
    assert 0 < len(shown) < 30


def test_filters_combine(researcher_client, ready_set):
    entry = ready_set.entries.first()
    response = researcher_client.get(
        reverse("benchmark:set", args=[ready_set.pk]),
        {
            "condition": entry.condition,
            "personality": entry.personality,
            "status": "ready",
        },
    )
    assert entry in list(response.context["page"])


def test_an_htmx_filter_request_returns_only_the_entry_table(researcher_client, ready_set):
    entry = ready_set.entries.first()
    response = researcher_client.get(
        reverse("benchmark:set", args=[ready_set.pk]),
        {"fragment": "entries", "condition": entry.condition},
        **HTMX,
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert page.lstrip().startswith('<div id="entry-table">')
    assert "<html" not in page and 'class="filters"' not in page
    assert entry.condition in page


def test_an_htmx_progress_request_returns_only_the_progress_panel(researcher_client, ready_set):
    response = researcher_client.get(
        reverse("benchmark:set", args=[ready_set.pk]), {"fragment": "progress"}, **HTMX
    )
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="set-progress"')
    assert f"{SET_SIZE} ready" in page and "entry-table" not in page


def test_without_htmx_a_fragment_request_gets_the_whole_page(researcher_client, ready_set):
    response = researcher_client.get(
        reverse("benchmark:set", args=[ready_set.pk]), {"fragment": "entries"}
    )
    assert "<html" in response.content.decode()


def test_retrying_failed_entries_requeues_them(
    researcher_client, ready_set, eager_tasks, django_capture_on_commit_callbacks
):
    ready_set.entries.filter(index=0).update(status=EntryStatus.FAILED, failure_reason="x")
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(reverse("benchmark:set_retry", args=[ready_set.pk]))
    assert response.status_code == 302
    assert ready_set.entries.get(index=0).status == EntryStatus.READY


def test_the_set_report_compares_target_and_realised_shares(researcher_client, ready_set):
    response = researcher_client.get(reverse("benchmark:set_report", args=[ready_set.pk]))
    page = response.content.decode()
    assert response.status_code == 200
    assert "Task subcategory" in page and "Scenario complexity" in page
    assert page.count("<svg") >= 10


def test_the_set_report_downloads_as_csv(researcher_client, ready_set):
    response = researcher_client.get(
        reverse("benchmark:set_report", args=[ready_set.pk]), {"format": "csv"}
    )
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    assert list(rows[0]) == [
        "attribute",
        "value",
        "target_share",
        "realised_share",
        "count",
        "difference",
    ]
    conditions = [r for r in rows if r["attribute"] == "condition"]
    assert sum(int(r["count"]) for r in conditions) == SET_SIZE


# --- entries --------------------------------------------------------------------------------


def test_an_entry_page_shows_the_patient_and_a_sandbox_preview(researcher_client, ready_set):
    entry = ready_set.entries.first()
    response = researcher_client.get(reverse("benchmark:entry", args=[entry.pk]))
    page = response.content.decode()
    assert response.status_code == 200
    assert entry.patient_name in page and entry.story[:40] in page
    assert "The sandbox it would get" in page
    assert response.context["sandbox"]["providers"]
    assert "scripted, not a model" in page


def test_a_failed_entry_shows_why_and_has_no_sandbox(researcher_client, ready_set):
    entry = ready_set.entries.first()
    BenchmarkEntry.objects.filter(pk=entry.pk).update(
        status=EntryStatus.FAILED, failure_reason="story has 1 sentence", profile=None
    )
    response = researcher_client.get(reverse("benchmark:entry", args=[entry.pk]))
    assert "story has 1 sentence" in response.content.decode()
    assert response.context["sandbox"] is None


# --- agents ---------------------------------------------------------------------------------

NEW_AGENT = """id: screening
name: Screening assistant
description: Screens complex patients before acting.
prompt: assistant_baseline.md
extra_instructions: Ask about red-flag symptoms before booking anything.
"""


def test_the_agents_page_lists_the_shipped_configurations(researcher_client):
    response = researcher_client.get(reverse("benchmark:agents"))
    assert response.status_code == 200
    assert "baseline" in response.content.decode()


def test_a_valid_agent_configuration_is_saved(researcher_client):
    response = researcher_client.post(reverse("benchmark:agents"), {"yaml_text": NEW_AGENT})
    assert response.status_code == 302
    assert AgentConfig.objects.get(slug="screening").name == "Screening assistant"


def test_an_invalid_agent_configuration_shows_the_error(researcher_client):
    response = researcher_client.post(
        reverse("benchmark:agents"), {"yaml_text": NEW_AGENT + "temperature: hot\n"}
    )
    assert response.status_code == 200
    assert "unknown keys temperature" in response.content.decode()
    assert not AgentConfig.objects.filter(slug="screening").exists()


def test_an_entry_with_an_unpriced_model_shows_its_cost_as_unknown(researcher_client, ready_set):
    entry = ready_set.entries.first()
    BenchmarkEntry.objects.filter(pk=entry.pk).update(cost_usd=None)
    page = researcher_client.get(reverse("benchmark:entry", args=[entry.pk])).content.decode()
    assert ">unknown<" in page and "$0.0000" not in page
