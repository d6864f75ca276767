from django.apps import AppConfig

PIPELINE_STAGES = ("routing", "evidence", "facts", "intent", "synthesis", "audit", "direct")
# The offline provider's scripts for the lab's roles.
OFFLINE_SCRIPTS = {
    # Generation side: the pipeline stages, direct generation and the criterion judge.
    **{
        f"rubric_{stage}": "rubric_lab.engine.offline_pipeline:respond" for stage in PIPELINE_STAGES
    },
    "rubric_judge": "rubric_lab.engine.offline_criterion_judge:respond",
    # Evaluation side: near-miss edits, pairwise judging, coverage, refinement.
    "perturb": "rubric_lab.engine.perturb_script:respond",
    "pairwise_judge": "rubric_lab.engine.pairwise_script:respond",
    "coverage_decompose": "rubric_lab.engine.coverage_script:decompose",
    "coverage_entail": "rubric_lab.engine.coverage_script:entail",
    "refine_critique": "rubric_lab.engine.refine_script:critique",
    "refine_edit": "rubric_lab.engine.refine_script:edit",
}


class RubricLabConfig(AppConfig):
    """Instance-specific rubrics generated from evidence, and jury sensitivity tests."""

    name = "rubric_lab"
    verbose_name = "Rubric lab"

    def ready(self) -> None:
        from llm.engine.providers.offline import scripts_register
        from rubric_lab import tasks  # noqa: F401 - declares the lab's jobs (jobs.tasks.job_kind)

        scripts_register(OFFLINE_SCRIPTS)
