"""Run a near-miss sensitivity study from the command line:
`manage.py lab_sensitivity RUN_ID --setup instance --generation-job ID --judge MODEL [...]`."""

from django.core.management.base import BaseCommand, CommandError

from benchmark.models import Run
from jury.models import Jury
from rubric_lab.engine import perturb
from rubric_lab.management.lab_cli import (
    add_batch_arguments,
    add_cost_arguments,
    add_play_arguments,
    inline_batch_refuse,
    object_or_error,
    play,
)
from rubric_lab.management.lab_forecast_cli import add_dry_run_argument, launched_or_forecast
from rubric_lab.models import GenerationJob, JudgeSetup
from rubric_lab.services import sensitivity


class Command(BaseCommand):
    help = (
        "Score a run's reference conversations against near-miss copies with one judge setup "
        "(the jury's six rubrics, an instance rubric, or pairwise), with a progress bar; the "
        "results are on the study's page and `lab_export sensitivity ID`."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("run_id", type=int)
        parser.add_argument("--setup", choices=JudgeSetup.values, required=True)
        parser.add_argument("--judge", default="", help="judge model (instance, pairwise)")
        parser.add_argument("--jury", default="", help="jury id or name (the six-rubric setup)")
        parser.add_argument(
            "--generation-job",
            type=int,
            default=None,
            help="the rubrics of the instance setup: a generation job's id",
        )
        parser.add_argument("--perturber", default="offline/surgical", help="editor model")
        parser.add_argument(
            "--perturbation",
            action="append",
            choices=list(perturb.REGISTRY),
            default=[],
            help="a perturbation type (repeatable; default: every type)",
        )
        parser.add_argument("--reference-model", default="", help="only this agent's replies")
        parser.add_argument("--max-cases", type=int, default=20, help="references (at most)")
        parser.add_argument("--seed", type=int, default=0, help="of the bootstrap")
        parser.add_argument("--min-type-references", type=int, default=5)
        parser.add_argument("--min-type-share", type=float, default=0.25)
        parser.add_argument("--name", default="")
        add_batch_arguments(parser, "the editor's and the judges' calls")
        add_play_arguments(parser, concurrency_help="near-miss pairs at once (default 8)")
        add_cost_arguments(parser)
        add_dry_run_argument(parser)

    def handle(self, *args, run_id: int, **opts) -> None:
        inline_batch_refuse(opts)
        run = object_or_error(Run, run_id, "run")
        job = None
        if opts["generation_job"] is not None:
            job = object_or_error(GenerationJob, opts["generation_job"], "generation job")

        def launch():
            return sensitivity.study_launch(
                run=run,
                setup=opts["setup"],
                perturber_model=opts["perturber"],
                perturbations=opts["perturbation"] or None,
                name=opts["name"],
                judge_model=opts["judge"],
                jury=_jury(opts["jury"]),
                generation_job=job,
                reference_model=opts["reference_model"],
                max_cases=opts["max_cases"],
                seed=opts["seed"],
                min_type_references=opts["min_type_references"],
                min_type_share=opts["min_type_share"],
                use_cache=not opts["no_cache"],
                concurrency=opts["concurrency"],
                cost_limit_usd=opts["cost_limit"],
                batch=opts["batch"],
                batch_resend_live=opts["resend_live"],
            )

        study = launched_or_forecast(
            self, launch, opts, name="lab_sensitivity", refused=sensitivity.StudyError
        )
        if study is None:
            return
        self.stdout.write(
            f"Sensitivity study {study.pk} {study.name!r}: {study.pairs.count()} near-miss pairs."
        )
        play(self, study, "sensitivity", inline=opts["inline"], wait=not opts["no_wait"])


def _jury(value: str) -> Jury | None:
    if not value:
        return None
    found = Jury.objects.filter(pk=int(value)) if value.isdigit() else Jury.objects.none()
    jury = found.first() or Jury.objects.filter(name=value).first()
    if jury is None:
        raise CommandError(f"There is no jury with id or name {value!r}.")
    return jury
