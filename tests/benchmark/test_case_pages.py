"""Pages for distributions, benchmark sets, entries and agent configurations."""

import csv
import html
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from benchmark.engine.distribution import DEFAULT_DISTRIBUTION_PATH
from benchmark.models import AgentConfig, BenchmarkEntry, BenchmarkSet, Distribution, EntryStatus
from benchmark.services import cases
from tests.benchmark.conftest import SET_SIZE, enrich_all, make_set, provider_down, use_router
from tests.support.regions import region

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


def test_the_new_distribution_form_refuses_a_malformed_copy_reference(researcher_client):
    response = researcher_client.get(reverse("benchmark:distribution_new") + "?from=abc")
    assert response.status_code == 400
    assert "Enter a whole number." in response.content.decode()


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
    # The entries are sent to the queue only after the commit, and the set's watch starts.
    assert len(callbacks) == 2
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


@pytest.mark.parametrize("field", [f for f in BenchmarkEntry.FILTER_FIELDS if f != "infeasible"])
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


def test_an_htmx_progress_request_returns_the_panel_and_the_regions_out_of_band(
    researcher_client, ready_set
):
    response = researcher_client.get(
        reverse("benchmark:set", args=[ready_set.pk]), {"fragment": "progress"}, **HTMX
    )
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="set-progress"')
    assert f"{SET_SIZE} ready" in page and "<html" not in page
    assert '<div id="entry-table" hx-swap-oob="true">' in page


def poll_set(client, benchmark_set, **query) -> str:
    response = client.get(
        reverse("benchmark:set", args=[benchmark_set.pk]), {"fragment": "progress", **query}, **HTMX
    )
    assert response.status_code == 200
    return response.content.decode()


def test_the_set_poll_refreshes_the_entries_with_the_counts_and_stops_when_done(
    researcher_client, distribution
):
    benchmark_set = make_set(distribution)
    before = poll_set(researcher_client, benchmark_set)
    assert 'hx-trigger="every 2s"' in before
    assert region(before, "entry-table").text.count("pending") == SET_SIZE
    first = benchmark_set.entries.order_by("index").first()
    cases.entry_enrich(first.pk)
    during = poll_set(researcher_client, benchmark_set)
    assert "1 ready" in region(during, "set-progress").text
    rows = region(during, "entry-table").text
    assert rows.count("ready") == 1 and rows.count("pending") == SET_SIZE - 1
    enrich_all(benchmark_set)
    after = poll_set(researcher_client, benchmark_set)
    assert "hx-trigger" not in region(after, "set-progress").attrs  # the final refresh
    assert region(after, "entry-table").text.count("ready") == SET_SIZE
    complexity = region(after, "entry-filter-form")  # choices that exist only once enriched
    assert complexity.attrs["hx-swap-oob"] == "true"
    assert BenchmarkEntry.objects.get(pk=first.pk).complexity in complexity.text


def test_the_set_poll_sends_the_chosen_filters_and_page_and_answers_with_them(
    researcher_client, distribution
):
    benchmark_set = make_set(distribution, size=SET_SIZE)
    page = researcher_client.get(reverse("benchmark:set", args=[benchmark_set.pk])).content
    progress = region(page.decode(), "set-progress")
    assert progress.attrs["hx-include"] == "#entry-filter-form, #entry-page"
    # A change sends the stable wrapper's request (the poll swaps the form itself in anew).
    wrapper = region(page.decode(), "entry-filters")
    assert (wrapper.tag, wrapper.attrs["hx-include"]) == ("div", "#entry-filter-form")
    assert region(page.decode(), "entry-page").attrs["value"] == "1"
    entry = benchmark_set.entries.first()
    polled = poll_set(researcher_client, benchmark_set, personality=entry.personality, page="1")
    shown = region(polled, "entry-table").text
    others = benchmark_set.entries.exclude(personality=entry.personality)
    assert f"{SET_SIZE - others.count()} entries" in shown
    assert f"<option selected>{entry.personality}</option>" in polled


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
        "expected_share",
        "eligibility_effect",
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


def test_the_add_a_configuration_box_holds_a_commented_example_that_saves(researcher_client):
    page = researcher_client.get(reverse("benchmark:agents")).content.decode()
    box = region(page, "id_yaml_text")
    assert box.tag == "textarea" and box.text.startswith("# An example variant")
    assert "prompt: assistant_baseline.md" in box.text
    response = researcher_client.post(reverse("benchmark:agents"), {"yaml_text": textarea(page)})
    assert response.status_code == 302
    assert AgentConfig.objects.filter(slug="plain_language").exists()


def textarea(page: str) -> str:
    """The yaml_text box's text exactly as a browser submits it."""
    start = page.index(">", page.index('id="id_yaml_text"')) + 1
    return html.unescape(page[start : page.index("</textarea>", start)]).removeprefix("\n")


def test_an_entry_with_an_unpriced_model_shows_its_cost_as_unknown(researcher_client, ready_set):
    entry = ready_set.entries.first()
    BenchmarkEntry.objects.filter(pk=entry.pk).update(cost_usd=None)
    page = researcher_client.get(reverse("benchmark:entry", args=[entry.pk])).content.decode()
    assert ">unknown<" in page and "$0.0000" not in page


# --- infeasible cases by design --------------------------------------------------------------


@pytest.fixture
def mixed_set(distribution):
    """An enriched set with at least one case that breaks an eligibility rule on purpose."""
    from benchmark.engine.sampler import sample_seeds
    from benchmark.services.cases import distribution_spec

    spec = distribution_spec(distribution)
    seed = next(s for s in range(1_000) if any(d["broken_rule"] for d in sample_seeds(spec, 8, s)))
    return enrich_all(make_set(distribution, size=8, seed=seed))


def test_an_infeasible_entry_page_names_the_rule_it_breaks(researcher_client, mixed_set):
    entry = mixed_set.entries.infeasible().first()
    page = researcher_client.get(reverse("benchmark:entry", args=[entry.pk])).content.decode()
    assert 'id="broken-rule"' in page and "infeasible by design" in page
    assert entry.seed["broken_rule"]["text"].replace("'", "&#x27;") in page


def test_a_feasible_entry_page_has_no_broken_rule(researcher_client, mixed_set):
    entry = mixed_set.entries.feasible().first()
    page = researcher_client.get(reverse("benchmark:entry", args=[entry.pk])).content.decode()
    assert 'id="broken-rule"' not in page


@pytest.mark.parametrize("value", ["True", "False"])
def test_the_set_page_filters_infeasible_cases_in_or_out(researcher_client, mixed_set, value):
    response = researcher_client.get(
        reverse("benchmark:set", args=[mixed_set.pk]), {"infeasible": value}
    )
    shown = {entry.pk for entry in response.context["page"]}
    expected = mixed_set.entries.infeasible() if value == "True" else mixed_set.entries.feasible()
    assert shown == set(expected.values_list("pk", flat=True))
    [choices] = [f["choices"] for f in response.context["filters"] if f["field"] == "infeasible"]
    assert choices == ["False", "True"]
    assert f"<option selected>{value}</option>" in response.content.decode()


def test_the_set_report_shows_configured_fitted_and_realised_shares_with_the_effect(
    researcher_client, mixed_set
):
    response = researcher_client.get(reverse("benchmark:set_report", args=[mixed_set.pk]))
    page = response.content.decode()
    assert "After eligibility" in page and "Eligibility effect" in page
    assert 'id="report-eligibility"' in page and "breaks the sex rule" in page
    [eligibility] = [s for s in response.context["sections"] if s["attribute"] == "eligibility"]
    counts = {row["value"]: row["count"] for row in eligibility["rows"]}
    assert counts["eligible"] == mixed_set.entries.feasible().count()
    assert sum(counts.values()) == 8


def test_a_distribution_page_shows_the_shares_after_eligibility(researcher_client, distribution):
    response = researcher_client.get(reverse("benchmark:distribution", args=[distribution.pk]))
    page = response.content.decode()
    assert "After eligibility" in page and 'id="targets-eligibility"' in page
    assert "breakable: [sex, age]" in page  # the rules, in the file as stored


def test_an_upload_with_a_faulty_eligibility_rule_is_refused_naming_its_line(researcher_client):
    broken = DEFAULT_YAML.replace(
        "Benign prostatic hyperplasia: {sex: [male],", "Benign prostatic hyperplasia: {sex: [man],"
    )
    page = upload(researcher_client, broken).content.decode()
    line = line_of(broken, "Benign prostatic hyperplasia: {sex: [man]")
    assert f"line {line}, eligibility.Benign prostatic hyperplasia.sex" in page
    assert "unknown value(s) &#x27;man&#x27;" in page
    assert not Distribution.objects.filter(name="Edited").exists()


def test_a_set_whose_every_case_failed_reads_failed_with_the_reason(
    researcher_client, distribution, monkeypatch
):
    use_router(monkeypatch, provider_down("enrichment"))
    benchmark_set = enrich_all(make_set(distribution, size=2))

    progress = region(poll_set(researcher_client, benchmark_set), "set-progress").text
    assert "Generation failed" in progress and "All 2 cases failed; commonest reason:" in progress
    listed = researcher_client.get(reverse("benchmark:sets")).content.decode()
    assert "All 2 cases failed" in listed
