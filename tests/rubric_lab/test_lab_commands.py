"""The rubric lab's commands end to end with the offline provider: import a HealthBench file,
generate rubrics, run a sensitivity study, measure and compare coverage, export the results;
each job played in the command's own process (--inline), with its progress bar.

These tests commit (the --inline threads read what the command wrote through their own
database connections), so they build their own data from an imported file."""

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from audit.models import AuditEvent
from benchmark.models import Run
from jobs.models import WorkerHeartbeat
from llm.models import ModelPrice
from rubric_lab.models import CoverageRun, GenerationJob, PipelineStage, SensitivityStudy
from tests.rubric_lab.healthbench_rows import MULTI_TURN, SINGLE_TURN, jsonl

pytestmark = pytest.mark.django_db(transaction=True)


def command(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def healthbench_file(tmp_path):
    path = tmp_path / "healthbench.jsonl"
    path.write_text(jsonl(SINGLE_TURN, MULTI_TURN), encoding="utf-8")
    return path


def test_a_study_from_import_to_export_runs_from_the_command_line(
    healthbench_file, tmp_path, capsys
):
    out, _ = command("lab_import", str(healthbench_file), "--name", "HB pilot")
    run = Run.objects.get(name="HB pilot")
    assert "Imported 2 conversations (2 with a reply to score) and 17 physician criteria" in out

    out, _ = command(
        "lab_generate", str(run.pk), "--generator", "offline/standard", "--inline",
        "--temperature", "0.7", "--top-p", "0.9", "--stage-sampling", "audit=0.2,",
    )  # fmt: skip
    job = GenerationJob.objects.get(run=run)
    assert job.status == "finished" and "2 finished" in out and "cost $0.0000" in out
    assert "rubric generations" in capsys.readouterr().err  # the progress bar (tqdm)
    stages = {s.name: (s.temperature, s.top_p) for s in PipelineStage.objects.filter(
        generation__job=job, generation__conversation=run.conversations.first())}  # fmt: skip
    assert stages["routing"] == (0.7, 0.9) and stages["audit"] == (0.2, None)
    assert stages["retrieval"] == (None, None)
    # The command reported itself as serving the job while it played it.
    serving = f"rubric_lab.generationjob:{job.pk}"
    assert WorkerHeartbeat.objects.filter(mode="inline", serving=serving).exists()

    out, _ = command(
        "lab_sensitivity", str(run.pk), "--setup", "instance", "--generation-job", str(job.pk),
        "--judge", "offline/standard", "--inline",
    )  # fmt: skip
    study = SensitivityStudy.objects.get(run=run)
    assert study.status == "finished" and "scored" in out

    command("lab_coverage", str(job.pk), "--judge", "offline/standard", "--inline")
    direct_out, _ = command(
        "lab_generate", str(run.pk), "--generator", "offline/standard", "--method", "direct",
        "--inline",
    )  # fmt: skip
    direct = GenerationJob.objects.get(run=run, method="direct")
    first = CoverageRun.objects.get(generation_job=job)
    out, _ = command(
        "lab_coverage", str(direct.pk), "--judge", "offline/standard", "--inline",
        "--compare", str(first.pk),
    )  # fmt: skip
    assert "Recall " in out and f"Against coverage run {first.pk}: recall" in out
    assert "p = " in out and "(McNemar adjusted for conversations, exact sign-flip p)" in out
    assert "difference " in out

    table, _ = command("lab_export", "sensitivity", str(study.pk))
    header = next(csv.reader(io.StringIO(table)))
    assert header[:3] == ["perturbation", "label", "n_pending"] and "note" in header
    pairs, _ = command("lab_export", "sensitivity", str(study.pk), "--format", "jsonl")
    rows = [json.loads(line) for line in pairs.splitlines()]
    assert len(rows) == study.pairs.count() and {r["source_id"] for r in rows} == {
        "hb-single-1", "hb-multi-1",
    }  # fmt: skip
    target = tmp_path / "rubrics.jsonl"
    command("lab_export", "rubrics", str(job.pk), "--format", "jsonl", "--out", str(target))
    rubrics = [json.loads(line) for line in target.read_text().splitlines()]
    assert all(5 <= len(r["criteria"]) <= 14 for r in rubrics)
    compared, _ = command(
        "lab_export", "coverage", str(first.pk), "--against",
        str(CoverageRun.objects.get(generation_job=direct).pk), "--format", "md",
    )  # fmt: skip
    assert "| axis" in compared and "p_value" in compared
    units, _ = command("lab_export", "coverage", str(first.pk), "--units")
    assert "expert_axes" in next(csv.reader(io.StringIO(units)))
    assert AuditEvent.objects.filter(action="lab.exported").count() == 5


def test_a_bad_file_is_refused_with_every_problem_and_nothing_saved(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(jsonl(SINGLE_TURN, "{oops", {**MULTI_TURN, "rubrics": []}), encoding="utf-8")

    with pytest.raises(CommandError) as refused:
        command("lab_import", str(path))

    message = str(refused.value)
    assert "nothing was saved. 2 problems" in message
    assert "line 2: not valid JSON" in message and "line 3: rubrics must be" in message
    assert not Run.objects.exists()


def test_a_cost_limit_needs_every_model_priced_and_price_sets_it(healthbench_file):
    command("lab_import", str(healthbench_file))
    run = Run.objects.get()

    with pytest.raises(CommandError, match="openai-compatible/writer"):
        command(
            "lab_generate", str(run.pk), "--generator", "openai-compatible/writer",
            "--cost-limit", "1", "--no-wait",
        )  # fmt: skip
    assert not GenerationJob.objects.exists()

    command(
        "lab_generate", str(run.pk), "--generator", "openai-compatible/writer", "--cost-limit",
        "1", "--price", "openai-compatible/writer=0.5,1.5", "--no-wait",
    )  # fmt: skip
    assert ModelPrice.objects.filter(model="openai-compatible/writer").exists()
    assert GenerationJob.objects.get().cost_limit_usd == 1


def test_a_study_paused_at_its_cost_limit_exits_1_with_the_reason(healthbench_file):
    command("lab_import", str(healthbench_file))
    run = Run.objects.get()
    command("lab_generate", str(run.pk), "--generator", "offline/standard", "--inline")
    job = GenerationJob.objects.get()

    # offline calls cost nothing: a limit of 0 is reached before any work is sent.
    with pytest.raises(CommandError, match="Not finished: the job is paused: Cost limit reached"):
        command(
            "lab_sensitivity", str(run.pk), "--setup", "instance", "--generation-job",
            str(job.pk), "--judge", "offline/standard", "--inline", "--cost-limit", "0",
        )  # fmt: skip
    assert SensitivityStudy.objects.get().status == "paused"
