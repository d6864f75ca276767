"""Generate instance rubrics for a run's conversations from the command line:
`manage.py lab_generate RUN_ID --generator MODEL [...]`, in the workers or --inline."""

from django.core.management.base import BaseCommand, CommandError

from benchmark.models import Run
from jobs.services.cli import price_options
from rubric_lab.engine.pipeline import DEFAULT_AUDIT_ROUNDS, METHODS, stages_of
from rubric_lab.management.lab_cli import (
    add_cost_arguments,
    add_play_arguments,
    object_or_error,
    play,
)
from rubric_lab.services import pipeline

ABLATIONS = ("routing", "intent", "facts", "audit")


class Command(BaseCommand):
    help = (
        "Generate an instance rubric for each finished conversation of a run (the pipeline, "
        "or the direct-generation baseline), with a progress bar."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("run_id", type=int)
        parser.add_argument("--generator", required=True, help="the generator model")
        parser.add_argument(
            "--judge", default="", help="also score each rubric's own conversation with it"
        )
        parser.add_argument(
            "--conversation",
            action="append",
            default=[],
            metavar="PUBLIC_ID",
            help="only this conversation (repeatable); default: every scorable one",
        )
        parser.add_argument("--limit", type=int, default=500, help="at most this many")
        parser.add_argument("--name", default="")
        parser.add_argument("--method", choices=METHODS, default="pipeline")
        parser.add_argument(
            "--skip",
            action="append",
            choices=ABLATIONS,
            default=[],
            help="leave a stage out (ablation); repeatable",
        )
        parser.add_argument("--audit-rounds", type=int, default=DEFAULT_AUDIT_ROUNDS)
        parser.add_argument("--retriever", default="bm25")
        parser.add_argument("--top-k", type=int, default=4)
        parser.add_argument(
            "--temperature",
            type=float,
            default=None,
            help="every model stage's temperature (default: the provider's); the source "
            "generated at 0.7",
        )
        parser.add_argument(
            "--top-p",
            type=float,
            default=None,
            help="every model stage's top-p (default: the provider's); the source used 0.9",
        )
        parser.add_argument(
            "--stage-sampling",
            action="append",
            default=[],
            metavar="STAGE=TEMPERATURE,TOP_P",
            help="one stage's sampling over the above, e.g. audit=0.2, or synthesis=0.7,0.9 "
            "(leave a value empty for the provider's default); repeatable",
        )
        parser.add_argument(
            "--batch",
            action="store_true",
            help="send the pipeline's calls through the providers' batch APIs: about half the "
            "price, each round of calls within 24 h (openai/, anthropic/ and offline/ models)",
        )
        parser.add_argument(
            "--resend-live",
            action="store_true",
            help="with --batch: call live what a batch left unanswered, not in another batch",
        )
        add_play_arguments(parser, concurrency_help="conversations at once (default 8)")
        add_cost_arguments(parser)

    def handle(self, *args, run_id: int, **opts) -> None:
        if opts["inline"] and opts["batch"]:
            raise CommandError("--inline and --batch exclude each other: batches are polled.")
        run = object_or_error(Run, run_id, "run")
        conversations = run.conversations.scorable().order_by("pk")
        if opts["conversation"]:
            conversations = conversations.filter(public_id__in=opts["conversation"])
        price_options(opts["price"], command="lab_generate")
        try:
            job = pipeline.generation_job_launch(
                conversations=list(conversations[: opts["limit"]]),
                run=run,
                generator_model=opts["generator"],
                judge_model=opts["judge"],
                name=opts["name"],
                method=opts["method"],
                retriever=opts["retriever"],
                top_k=opts["top_k"],
                audit_rounds=opts["audit_rounds"],
                sampling=sampling_option(opts),
                use_cache=not opts["no_cache"],
                concurrency=opts["concurrency"],
                cost_limit_usd=opts["cost_limit"],
                batch=opts["batch"],
                batch_resend_live=opts["resend_live"],
                **{f"skip_{stage}": stage in opts["skip"] for stage in ABLATIONS},
            )
        except pipeline.PipelineLaunchError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"Generation job {job.pk} {job.name!r}: {job.generations.count()} conversations."
        )
        play(self, job, "generation", inline=opts["inline"], wait=not opts["no_wait"])


def sampling_option(opts: dict) -> dict:
    """Per-stage sampling from --temperature / --top-p (every model stage of the method) and
    --stage-sampling STAGE=T,P (over them)."""
    stages = [stage for stage in stages_of(opts["method"]) if stage != "retrieval"]
    every = {"temperature": opts["temperature"], "top_p": opts["top_p"]}
    sampling = {stage: dict(every) for stage in stages}
    for text in opts["stage_sampling"]:
        stage, _, values = text.partition("=")
        temperature, _, top_p = values.partition(",")
        try:
            chosen = {"temperature": _number(temperature), "top_p": _number(top_p)}
        except ValueError:
            raise CommandError(
                f"--stage-sampling {text!r}: write STAGE=TEMPERATURE,TOP_P"
            ) from None
        sampling[stage.strip()] = {**sampling.get(stage.strip(), {}), **chosen}
    return sampling


def _number(text: str) -> float | None:
    return float(text) if text.strip() else None
