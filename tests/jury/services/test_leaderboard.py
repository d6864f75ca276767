"""The leaderboard's "verified" and "custom" labels (jury.services.leaderboard): the offline
demo jury's scoring of a run launched here from the shipped data is verified; each thing that
departs from the packaged files makes it custom and says why."""

import pytest
from django.urls import reverse

from accounts.models import Role
from benchmark.services import provenance
from jury.services import leaderboard
from tests.conftest import make_user


def test_a_run_from_the_shipped_data_scored_by_the_packaged_jury_is_verified(scored_job):
    verification = leaderboard.job_verification(scored_job)
    assert verification.reasons == [] and verification.label == "verified"


def test_an_edited_data_file_at_launch_makes_it_custom(scored_job):
    run = scored_job.run
    name = next(iter(run.inputs["data_files"]))
    run.inputs["data_files"][name] = "0" * 64
    run.inputs["data_files"]["benchmark/data/extra.yaml"] = "1" * 64
    assert leaderboard.job_verification(scored_job).reasons == [
        f"data file {name} differs from the packaged one",
        "data file benchmark/data/extra.yaml is not a packaged file",
    ]


def test_a_run_without_a_launch_manifest_is_custom(scored_job):
    scored_job.run.inputs = {}
    assert leaderboard.job_verification(scored_job).label == "custom"


def test_an_edited_agent_distribution_or_jury_makes_it_custom(scored_job):
    config = scored_job.run.agents.first().agent_config
    config.yaml_text += "\n# edited\n"
    config.save()
    distribution = scored_job.run.benchmark_set.distribution
    distribution.yaml_text += "\n# edited\n"
    distribution.save()
    jury = scored_job.jury
    jury.weights = {rubric: 1.0 for rubric in jury.weights} | {next(iter(jury.weights)): 3.0}
    jury.pass_threshold = 3.5
    jury.save()
    reasons = leaderboard.job_verification(scored_job).reasons
    assert reasons[0] == "its case set was not sampled from a packaged distribution file"
    assert any(reason.endswith("is not a packaged agent configuration") for reason in reasons)
    assert "the jury's rubric weights are not the packaged ones" in reasons
    assert "the jury's pass threshold or merge mode is not the packaged one" in reasons


def test_the_packaged_data_files_are_what_the_check_reads(scored_job):
    assert set(scored_job.run.inputs["data_files"]) == set(provenance.run_data_files())


@pytest.mark.django_db
def test_the_leaderboard_page_labels_each_entry(client, scored_job):
    client.force_login(make_user("rita", Role.RESEARCHER))
    page = client.get(reverse("jury:leaderboard")).content.decode()
    models = scored_job.run.agents.count()
    assert page.count('<span class="badge ok">verified</span>') == models + 1  # the legend's
    assert f'name="job" value="{scored_job.pk}"' in page
