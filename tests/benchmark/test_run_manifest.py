"""A run's manifest (benchmark.services.manifests), its download, and
`run_benchmark --replay`: the same configuration launched again, or refused with each
difference named."""

import json
import shutil
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from benchmark.engine import manifest as fmt
from benchmark.models import Run
from benchmark.services import manifests, provenance
from tests.support.builders import enriched_set, launched_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """The run's data files read from a copy, which a test may change."""
    for name in provenance.RUN_DATA:
        source = provenance.PROJECT_ROOT / name
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy(source, target)
    monkeypatch.setattr(provenance, "PROJECT_ROOT", tmp_path)
    return tmp_path


@pytest.fixture
def no_workers(monkeypatch):
    # The workers are not what is tested: the message to them is not sent.
    monkeypatch.setattr(
        "benchmark.management.commands.run_benchmark.job_start", lambda *a, **k: None
    )


def a_run(**options):
    return launched_run(
        enriched_set(name="manifest set", size=2),
        name="manifest run",
        models=("offline/careful", "openai/gpt-4.1@temperature=0.3"),
        repetitions=2,
        seed=5,
        **options,
    )


def written(run, tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(manifests.run_manifest_text(run))
    return path


def test_the_manifest_holds_inputs_models_seeds_and_environment():
    run = a_run()

    manifest = manifests.run_manifest(run)

    assert manifest["recorded"] == "launch"
    assert "benchmark/data/prompts/patient.md" in manifest["data_files"]
    assert "llm/data/generation.yaml" in manifest["data_files"]
    assert set(manifest["stored"]["agent_configs"]) == {"baseline"}
    tuned = manifest["models"]["openai/gpt-4.1@temperature=0.3"]
    assert tuned["settings"] == {"temperature": 0.3} and tuned["sends_seed"] is True
    assert manifest["models"]["offline/careful"]["sends_seed"] is False
    assert manifest["seeds"]["run"] == 5 and manifest["seeds"]["conversations"] == 8
    assert manifest["environment"]["packages"]["django"]
    assert manifest["environment"]["code"]["commit"]
    assert manifest["run"]["config_hash"] == run.config_hash


def test_the_manifest_is_the_same_text_each_time_it_is_built():
    run = a_run()

    assert manifests.run_manifest_text(run) == manifests.run_manifest_text(run)


def test_a_run_from_before_manifests_is_hashed_at_export_and_says_so():
    run = a_run()
    Run.objects.filter(pk=run.pk).update(inputs={})
    run.refresh_from_db()

    manifest = manifests.run_manifest(run)

    assert manifest["recorded"] == "export"
    assert manifest["data_files"] == provenance.run_data_files()


def test_the_commit_falls_back_to_the_variable_then_unknown(monkeypatch, settings, tmp_path):
    settings.BASE_DIR = tmp_path  # not a git checkout
    monkeypatch.setenv(provenance.COMMIT_VARIABLE, "abc123")
    assert provenance.code_commit() == {"commit": "abc123", "source": "CAREJURY_COMMIT"}

    monkeypatch.delenv(provenance.COMMIT_VARIABLE)
    assert provenance.code_commit() == {"commit": "unknown", "source": "unknown"}


def test_replay_launches_the_same_configuration(tmp_path, no_workers):
    run = a_run()
    out = StringIO()

    call_command("run_benchmark", "--replay", str(written(run, tmp_path)), "--no-wait", stdout=out)

    replay = Run.objects.get(name="manifest run (replay)")
    assert replay.config == run.config and replay.config_hash == run.config_hash
    assert [a.label for a in replay.agents.all()] == [a.label for a in run.agents.all()]
    seeds = sorted(replay.conversations.values_list("seed", flat=True))
    assert seeds == sorted(run.conversations.values_list("seed", flat=True))
    assert "replaying 'manifest run'" in out.getvalue()


def test_replay_refuses_and_names_a_changed_data_file(data_copy, tmp_path, no_workers):
    run = a_run()
    path = written(run, tmp_path)
    personalities = data_copy / "benchmark" / "data" / "personalities.yaml"
    expected = fmt.sha256_bytes(personalities.read_bytes())
    personalities.write_text(personalities.read_text() + "\n# reworded\n")

    with pytest.raises(CommandError) as refused:
        call_command("run_benchmark", "--replay", str(path), "--no-wait", stdout=StringIO())

    message = str(refused.value)
    assert "benchmark/data/personalities.yaml" in message
    assert expected in message
    assert fmt.sha256_bytes(personalities.read_bytes()) in message
    assert not Run.objects.filter(name="manifest run (replay)").exists()


def test_replay_names_a_data_file_removed_since(data_copy, tmp_path, no_workers):
    path = written(a_run(), tmp_path)
    (data_copy / "benchmark" / "data" / "prompts" / "roster.md").unlink()

    with pytest.raises(CommandError, match=r"prompts/roster.md: expected \w+, found missing"):
        call_command("run_benchmark", "--replay", str(path), "--no-wait", stdout=StringIO())


def test_replay_refuses_a_stored_agent_configuration_that_changed(tmp_path, no_workers):
    run = a_run()
    path = written(run, tmp_path)
    config = run.agents.first().agent_config
    config.yaml_text += "\n# edited in the database\n"
    config.save()

    with pytest.raises(CommandError, match="agent configuration 'baseline' \\(stored\\)"):
        call_command("run_benchmark", "--replay", str(path), "--no-wait", stdout=StringIO())


@pytest.mark.parametrize(
    ("text", "problem"),
    [("{oops", "not JSON"), ('{"format": "x"}', "not a run manifest")],
)
def test_a_malformed_manifest_file_is_a_clear_error(tmp_path, text, problem):
    path = tmp_path / "manifest.json"
    path.write_text(text)

    with pytest.raises(CommandError, match=problem):
        call_command("run_benchmark", "--replay", str(path), stdout=StringIO())


def test_a_missing_manifest_file_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        call_command("run_benchmark", "--replay", str(tmp_path / "absent.json"))


def test_replay_takes_no_set_or_model_of_its_own(tmp_path):
    path = written(a_run(), tmp_path)

    with pytest.raises(CommandError, match="drop --set, --model"):
        call_command(
            "run_benchmark", "--replay", str(path), "--set", "x", "--model", "offline/careful"
        )


def test_without_replay_the_name_set_and_model_are_required():
    with pytest.raises(CommandError, match="Give --name, --set, --model"):
        call_command("run_benchmark")


def test_a_manifest_edited_to_another_seed_is_not_replayed_silently(tmp_path, no_workers):
    run = a_run()
    manifest = manifests.run_manifest(run)
    manifest["run"]["seed"] = 6
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))

    with pytest.raises(CommandError, match="run configuration: seed"):
        call_command("run_benchmark", "--replay", str(path), "--no-wait", stdout=StringIO())


def test_the_manifest_hashes_the_rubrics_and_the_review_prompt_it_is_scored_with():
    files = provenance.run_data_files()

    assert "jury/data/rubrics/clinical_safety.yaml" in files
    assert "jury/data/prompts/judge.md" in files
    assert "fidelity/data/prompts/patient_fidelity.md" in files
