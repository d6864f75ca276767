"""The evaluation side's part of `manage.py demo`: one sensitivity study on the demo run.

Pairwise judging with no rubric by the scripted judge, on the careful assistant's
conversations and every perturbation type, executed in the demo command's own process (the
offline scripts answer in milliseconds). Idempotent: a second demo finds the study.
"""

from __future__ import annotations

from benchmark.models import Run
from rubric_lab.models import JudgeSetup, SensitivityStudy
from rubric_lab.services import sensitivity

DEMO_STUDY_NAME = "Demo sensitivity study (scripted)"
DEMO_CASES = 8


def evaluation_demo_build(run: Run) -> SensitivityStudy:
    study = SensitivityStudy.objects.filter(name=DEMO_STUDY_NAME, run=run).first()
    if study is None:
        references = run.conversations.scorable().filter(run_agent__model="offline/careful")
        study = sensitivity.study_launch(
            run=run,
            setup=JudgeSetup.PAIRWISE,
            judge_model="offline/standard",
            perturber_model="offline/surgical",
            name=DEMO_STUDY_NAME,
            reference_model="offline/careful" if references.exists() else "",
            max_cases=DEMO_CASES,
        )
    for pair_id in study.pairs.filter(status="pending").values_list("pk", flat=True):
        sensitivity.near_miss_execute(pair_id)
    study.refresh_from_db()
    return study
