"""The roster model is a field of the web launch form: its default shown before launch, checked
like the other model fields, and used by the run."""

import pytest
from django.urls import reverse

from benchmark.models import Run
from benchmark.services import runs
from tests.benchmark.conftest import launch

pytestmark = pytest.mark.django_db


def launch_form(benchmark_set, config, **overrides) -> dict:
    return {
        "name": "Roster run",
        "benchmark_set": benchmark_set.pk,
        "models": "offline/careful",
        "agent_configs": [config.pk],
        "patient_model": "offline/patient",
        "roster_model": "offline/patient",
        "repetitions": 1,
        "concurrency": 4,
        "max_turns": 15,
        "seed": 0,
        **overrides,
    }


def test_the_launch_form_shows_which_model_writes_the_rosters_before_launch(
    admin_client_, ready_set
):
    page = admin_client_.get(reverse("benchmark:run_new")).content.decode()

    field = page.split('name="roster_model"')[1].split(">")[0]
    assert 'value="offline/patient"' in field
    assert "offices and providers" in page and "roster" in page.lower()


def test_the_launch_form_refuses_a_roster_model_it_cannot_call(admin_client_, ready_set, baseline):
    response = admin_client_.post(
        reverse("benchmark:run_new"), launch_form(ready_set, baseline, roster_model="acme/r1")
    )

    assert response.status_code == 200
    assert "unknown provider &#x27;acme&#x27;" in response.content.decode()
    assert not Run.objects.exists()


def test_a_run_launched_from_the_form_uses_the_chosen_roster_model(
    admin_client_, ready_set, baseline
):
    form = launch_form(ready_set, baseline, roster_model="offline/roster")
    response = admin_client_.post(reverse("benchmark:run_new"), form)

    run = Run.objects.get()
    assert response.status_code == 302
    assert run.roster_model == run.config["roster_model"] == "offline/roster"
    assert run.patient_model == "offline/patient"


def test_the_service_checks_the_roster_model_whichever_door_the_run_comes_through(
    ready_set, baseline
):
    with pytest.raises(runs.RunError, match="unknown provider 'acme'"):
        launch(ready_set, baseline, roster_model="acme/r1")
    assert not Run.objects.exists()
