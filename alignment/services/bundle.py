"""The shareable report bundle: one folder holding a scoring job's report (or several jobs'
reports and their leaderboard) that opens from disk in any browser, with no server and no
network (alignment.engine.bundle is its format).

What goes in, per job: the model table with its intervals, pass^k per model, the report's
figures (aggregates, pass rates per rubric, pass^k, variance) and the subgroup figures per
stratum as SVG files, the run's manifest, the model and pass^k tables as CSV, and every scored
conversation with its trace (messages, tool calls and results) and each judge's score and
rationale. Clinicians' scores from the studies drawn from the job come under bundle-local
pseudonyms (C1, C2, ...): no username, name or e-mail ever. Their free text (per-rubric
feedback and the overall comment) only when the researcher asks for it.

It lives here, above the annotation app, because it reads the clinicians' scores.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from django.conf import settings
from django.template.loader import render_to_string

from alignment.engine import bundle as fmt
from annotation.models import Assignment, AssignmentStatus
from benchmark.models import Conversation, TraceEvent
from benchmark.services import manifests, provenance
from common.figures import render as render_figure
from jury.models import ConversationResult, JudgeScore, RubricResult, ScoringJob
from jury.services import leaderboard, reports
from jury.services.figures import FIGURES, report_figure, sensitivity_figure

Progress = Callable[[int, int], None]
ASSETS = ("css/app.css", "js/report_bundle.js")  # copied from static/, no CDN
TABLES = ("models", "reliability")
EVENT_FIELDS = ("turn", "kind", "content", "tool_name", "arguments", "ok", "model_role", "refused")
BATCH = 200


class BundleError(ValueError):
    """The bundle cannot be written as asked; the message says why."""


@dataclass(frozen=True)
class BundleResult:
    folder: Path
    manifest: dict
    conversations: int


def _no_progress(done: int, total: int) -> None:
    return None


def report_bundle_write(
    jobs: list[ScoringJob],
    out: Path,
    *,
    include_clinician_text: bool = False,
    progress: Progress = _no_progress,
) -> BundleResult:
    """Write the bundle of `jobs` into the folder `out` (created; it must be empty if it exists)."""
    if not jobs:
        raise BundleError("Name at least one scoring job.")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BundleError(f"{out} exists and is not an empty folder.")
    built = [reports.Report(job) for job in jobs]
    for report in built:
        if report.empty:
            raise BundleError(
                f"Scoring job {report.job.pk} has no complete conversation to report."
            )
    (out / "assets").mkdir(parents=True, exist_ok=True)
    # A job's statistics and figures take about as long as writing its conversations
    # (bench/bench_report_bundle.py), so each half of the bar is worth its conversations.
    sizes = {job.pk: job.conversation_results.count() for job in jobs}
    total = 2 * sum(sizes.values())
    done = 0

    def advance(steps: int) -> None:
        nonlocal done
        done += steps
        progress(done, total)

    sections = [
        _job_section(report, out, _shares(advance, sizes[report.job.pk])) for report in built
    ]
    conversations = []
    for report in built:
        conversations += _conversations(report, include_clinician_text, advance)
    data = {"clinician_text": include_clinician_text, "conversations": conversations}
    entries = leaderboard.leaderboard_entries(jobs) if len(jobs) > 1 else []
    _copy_assets(out)
    html = render_to_string(
        "alignment/report_bundle.html",
        {
            "sections": sections,
            "entries": entries,
            "data": data,
            "clinician_text": include_clinician_text,
            "conversation_count": len(conversations),
        },
    )
    (out / "index.html").write_text(html, encoding="utf-8")
    manifest = fmt.manifest_build(out, about=_about(jobs, include_clinician_text))
    fmt.manifest_write(out, manifest)
    return BundleResult(folder=out, manifest=manifest, conversations=len(conversations))


def report_bundle_zip_write(
    jobs: list[ScoringJob],
    path: Path,
    *,
    include_clinician_text: bool,
    progress: Progress = _no_progress,
) -> BundleResult:
    """The bundle as one zip at `path` (the button's download, written by a worker): the
    folder is written in a temporary folder first (the system's, so a worker killed midway
    leaves nothing the archive folder's sweep must know about)."""
    with tempfile.TemporaryDirectory(prefix="report-bundle-") as scratch:
        folder = Path(scratch) / "bundle"
        result = report_bundle_write(
            jobs, folder, include_clinician_text=include_clinician_text, progress=progress
        )
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for file in sorted(folder.rglob("*")):
                if file.is_file():
                    archive.write(
                        file, f"{bundle_name(jobs)}/{file.relative_to(folder).as_posix()}"
                    )
    return result


def _shares(advance: Callable[[int], None], weight: int) -> Callable[[int, int], None]:
    """A step callback for `parts` parts of work worth `weight` progress in all: part `index`
    (from 0) done advances the bar to its share."""
    reached = [0]

    def step(index: int, parts: int) -> None:
        target = weight * (index + 1) // parts
        advance(target - reached[0])
        reached[0] = target

    return step


def bundle_name(jobs: Iterable[ScoringJob]) -> str:
    return "report-" + "-".join(f"job{job.pk}" for job in jobs)


def _about(jobs: list[ScoringJob], include_clinician_text: bool) -> dict:
    return {
        "jobs": [{"job": job.pk, "run": job.run.name, "jury": job.jury.name} for job in jobs],
        "clinician_identities": "never: clinicians appear as bundle-local pseudonyms C1, C2, ...",
        "clinician_text": include_clinician_text,
        "code": provenance.code_commit(),
    }


def _copy_assets(out: Path) -> None:
    for asset in ASSETS:
        shutil.copyfile(
            Path(settings.BASE_DIR) / "static" / asset, out / "assets" / Path(asset).name
        )


# --- one job's report ------------------------------------------------------------------------


def _job_section(report: reports.Report, out: Path, step: Callable[[int, int], None]) -> dict:
    job = report.job
    table = reports.model_table(report)
    folder = f"job-{job.pk}"
    (out / folder / "tables").mkdir(parents=True)
    figures = _figures(report, out, folder, step)
    for name in TABLES:
        text = reports.export_text(report, name, "csv")
        (out / folder / "tables" / f"{name}.csv").write_text(text, encoding="utf-8")
    (out / folder / manifests.manifest_file_name(job.run)).write_text(
        manifests.run_manifest_text(job.run), encoding="utf-8"
    )
    verification = leaderboard.job_verification(job)
    section = {
        "job": job,
        "folder": folder,
        "report": report,
        "models": reports.model_rows(report, table, reports.best_marks(report, table)),
        "pass_k": _pass_k_rows(report),
        "figures": figures,
        "manifest": f"{folder}/{manifests.manifest_file_name(job.run)}",
        "tables": [f"{folder}/tables/{name}.csv" for name in TABLES],
        "label": verification.label,
        "reasons": verification.reasons,
    }
    return section


def _figures(report: reports.Report, out: Path, folder: str, step) -> list[dict]:
    """Every figure of the report and one subgroup figure per stratum, as SVG files."""
    subgroups = reports.sensitivity_results(report, "aggregate")
    to_draw = [
        (kind, title, partial(report_figure, report, kind)) for kind, title in FIGURES.items()
    ]
    to_draw += [
        (
            f"subgroups-{attribute}",
            f"{title}: subgroup aggregates against each model's band",
            partial(sensitivity_figure, report, "aggregate", attribute, "Aggregate", subgroups),
        )
        for attribute, title in reports.ATTRIBUTES.items()
    ]
    (out / folder / "figures").mkdir()
    figures = []
    for index, (kind, title, draw) in enumerate(to_draw):
        path = f"{folder}/figures/{kind}.svg"
        (out / path).write_bytes(render_figure(draw(), "svg", salt=f"{folder}-{kind}"))
        figures.append({"path": path, "title": title})
        step(index, len(to_draw))
    return figures


def _pass_k_rows(report: reports.Report) -> list[dict]:
    """Per model, the aggregate's pass^k over every case for k = 1..repetitions, as text."""
    rows = report.reliability
    overall = rows[(rows["measure"] == "aggregate") & (rows["stratum"] == "all")]
    return [
        {
            "model": model,
            "values": [
                f"{row.pass_hat_k:.0%} [{row.low:.0%}, {row.high:.0%}]"
                if math.isfinite(row.low)
                else f"{row.pass_hat_k:.0%}"
                for row in curve.sort_values("k").itertuples()
            ],
        }
        for model, curve in overall.groupby("model", sort=False)
    ]


# --- the conversations -----------------------------------------------------------------------


def _conversations(report: reports.Report, include_text: bool, advance) -> list[dict]:
    """Every conversation the job scored, a batch at a time: the trace, the jury's results,
    each judge's score and rationale, and the clinicians' scores under pseudonyms."""
    job = report.job
    codes = report.rubrics
    results = ConversationResult.objects.filter(job=job).select_related(
        "conversation__run_agent", "conversation__entry"
    )
    pseudonyms = _pseudonyms(job)
    records, last = [], 0
    while batch := list(results.filter(pk__gt=last).order_by("pk")[:BATCH]):
        ids = [result.conversation_id for result in batch]
        events = _grouped(
            TraceEvent.objects.filter(conversation_id__in=ids).order_by("seq"), _event
        )
        rubric_rows = RubricResult.objects.filter(job=job, conversation_id__in=ids)
        rubrics = _grouped(rubric_rows, lambda r: (codes.get(r.rubric_id, r.rubric_id), r))
        judgements = _grouped(
            JudgeScore.objects.filter(job=job, conversation_id__in=ids)
            .select_related("rubric_version")
            .order_by("rubric_version__order", "judge_index"),
            _judgement,
        )
        clinicians = _clinician_scores(job, ids, pseudonyms, codes, include_text)
        for result in batch:
            key = result.conversation_id
            records.append(
                _record(report, result, events, rubrics, judgements, clinicians.get(key, []))
            )
        last = batch[-1].pk
        advance(len(batch))
    return records


def _record(report, result, events, rubrics, judgements, clinicians) -> dict:
    conversation: Conversation = result.conversation
    entry = conversation.entry
    key = conversation.pk
    return {
        "id": str(conversation.public_id),
        "job": report.job.pk,
        "run": report.job.run.name,
        "model": report.label(conversation.run_agent.label),
        "case": entry.index,
        "repetition": conversation.repetition,
        "attributes": {a: getattr(entry, a) for a in reports.ATTRIBUTES},
        "condition": entry.condition,
        "termination": conversation.termination_reason,
        "complete": result.complete,
        "aggregate": result.aggregate,
        "passed": result.aggregate is not None
        and result.aggregate >= report.job.jury.pass_threshold,
        "rubrics": {
            code: {"mean": row.mean, "passed": row.passed} for code, row in rubrics.get(key, [])
        },
        "events": events.get(key, []),
        "judgements": judgements.get(key, []),
        "clinicians": clinicians,
    }


def _grouped(rows, shape) -> dict[int, list]:
    grouped: dict[int, list] = {}
    for row in rows:
        grouped.setdefault(row.conversation_id, []).append(shape(row))
    return grouped


def _event(row: TraceEvent) -> dict:
    return {name: getattr(row, name) for name in EVENT_FIELDS}


def _judgement(row: JudgeScore) -> dict:
    return {
        "rubric": row.rubric_version.code,
        "judge": row.judge_model,
        "status": row.status,
        "score": row.score,
        "rationale": row.explanation,
    }


# --- clinicians, never named -----------------------------------------------------------------


def _submitted(job: ScoringJob):
    return Assignment.objects.filter(
        item__study__scoring_jobs=job,
        status=AssignmentStatus.SUBMITTED,
        practice=False,
        invalidated_at__isnull=True,
    )


def _pseudonyms(job: ScoringJob) -> dict[int, str]:
    """Annotator id -> C1, C2, ... in the order of their ids: stable within one bundle, and
    meaningless outside it."""
    ids = sorted(set(_submitted(job).values_list("annotator_id", flat=True)))
    return {annotator: f"C{number}" for number, annotator in enumerate(ids, start=1)}


def _clinician_scores(job, conversation_ids, pseudonyms, codes, include_text) -> dict[int, list]:
    """Per conversation, each clinician's submitted scores (by rubric code where the jury
    judged the rubric, else by rubric id: the realism rubrics)."""
    fields = ["item__conversation_id", "annotator_id", "track", "scores", "synthetic", "imported"]
    if include_text:
        fields += ["feedback", "overall_comment"]
    rows = _submitted(job).filter(item__conversation_id__in=conversation_ids).values(*fields)
    grouped: dict[int, list] = {}
    for row in rows.order_by("item__conversation_id", "annotator_id"):
        record = {
            "clinician": pseudonyms[row["annotator_id"]],
            "track": row["track"],
            "scores": {codes.get(rubric, rubric): score for rubric, score in row["scores"].items()},
            "synthetic": row["synthetic"],
            "imported": row["imported"],
        }
        if include_text:
            record |= {"feedback": row["feedback"], "comment": row["overall_comment"]}
        grouped.setdefault(row["item__conversation_id"], []).append(record)
    return grouped


# --- what to bundle --------------------------------------------------------------------------


def bundle_jobs(targets: list[str]) -> list[ScoringJob]:
    """The scoring jobs named by `targets`: "12" or "job:12" a scoring job, "run:3" the newest
    finished whole-run scoring job of run 3. BundleError names a target that does not resolve."""
    jobs = []
    for target in targets:
        kind, _, number = target.rpartition(":")
        if kind not in ("", "job", "run") or not number.isdigit():
            raise BundleError(f"{target!r}: give a scoring job id (12 or job:12) or a run (run:3).")
        if kind == "run":
            job = leaderboard.finished_jobs().filter(run_id=int(number)).first()
            if job is None:
                raise BundleError(f"Run {number} has no finished scoring job of the whole run.")
        else:
            job = ScoringJob.objects.select_related("run", "jury").filter(pk=int(number)).first()
            if job is None:
                raise BundleError(f"There is no scoring job {number}.")
        jobs.append(job)
    return list({job.pk: job for job in jobs}.values())
