"""The rubric lab's part of `manage.py demo`: a few instance rubrics from the demo run.

It runs in the demo command's own process with the offline scripted provider (a few seconds),
picks cases played by more than one agent so each rubric scores two replies to the same case,
and is idempotent: a second demo finds the job and builds nothing again.
"""

from __future__ import annotations

from benchmark.models import Run
from rubric_lab.models import GenerationJob, InstanceRubric
from rubric_lab.services import instance_scoring, pipeline
from rubric_lab.services.evaluation_demo import evaluation_demo_build

DEMO_JOB_NAME = "Demo instance rubrics (scripted)"
DEMO_MODEL = "offline/standard"
DEMO_CASES = 3


def lab_demo_build(run: Run) -> GenerationJob:
    job = GenerationJob.objects.filter(name=DEMO_JOB_NAME, run=run).first()
    if job is None:
        job = pipeline.generation_job_launch(
            conversations=demo_conversations(run),
            generator_model=DEMO_MODEL,
            judge_model=DEMO_MODEL,
            name=DEMO_JOB_NAME,
            run=run,
        )
    for generation_id in job.generations.values_list("pk", flat=True):
        pipeline.generation_execute(generation_id)
    for rubric in InstanceRubric.objects.filter(generation__job=job):
        for other in _same_case(rubric):
            instance_scoring.instance_score_run_here(
                rubric=rubric, conversation=other, judge=DEMO_MODEL
            )
    evaluation_demo_build(run)  # the evaluation side: one sensitivity study
    job.refresh_from_db()
    return job


def demo_conversations(run: Run) -> list:
    """One conversation for each of the first cases every agent finished, varied by task."""
    scorable = run.conversations.scorable().select_related("entry").order_by("entry__index")
    picked, seen_tasks = [], set()
    for conversation in scorable:
        task = conversation.entry.task_subcategory
        if task in seen_tasks:
            continue
        seen_tasks.add(task)
        picked.append(conversation)
        if len(picked) == DEMO_CASES:
            break
    return picked


def _same_case(rubric: InstanceRubric):
    conversation = rubric.conversation
    return (
        conversation.run.conversations.scorable()
        .filter(entry=conversation.entry)
        .exclude(pk=conversation.pk)
    )
