"""A study's annotations, jury means and judge scores as the long tables the engine reads.

Counting rules, the same for every alignment page and export:
- only submitted annotations are data; drafts, skips and expired reservations are not;
- invalidated annotations never count, practice (unlicensed) work never counts, synthetic work
  (the scripted simulated clinician) counts only when the researcher includes it;
- every left-out rating is counted under its reason in `StudyFrames.excluded`, so nothing is
  dropped silently. Ratings of a judged rubric whose conversation has no complete jury result
  stay in `clinicians_long` (they still serve clinician-clinician figures) and are counted
  under JURY_INCOMPLETE as left out of the jury figures;
- a calibrated jury version is judged only on conversations it did not learn from: where the
  jury of a conversation learned from that conversation's clinician scores
  (`Jury.learned_items`), its jury mean and judge scores are left out (the conversations are
  `StudyFrames.learned`, their ratings counted under LEARNED) unless `include_learned` asks for
  them, and then the figures are not held out (`StudyFrames.learned_included`). Every page and
  export that computes agreement reads its jury through here, so this is the one place.

`item` is the conversation id (engine ITEM); `rater` the annotator's user id. The jury of a
conversation is, by default, the first of the study's scoring jobs that scored its run (the job
its sample was drawn from); pass `job=` for another configuration (the re-scoring loop does).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from django.db.models import Count, Q, Sum
from django.db.models.functions import Length

from alignment.engine.frames import ITEM, JUDGE, JURY, RATER, RUBRIC, SCORE
from alignment.engine.judge_bias import AGENT_MODEL
from annotation.models import Assignment, AssignmentStatus, Study, StudyItem
from benchmark.models import Conversation, TraceEvent
from common.json_columns import json_as_text, json_values
from jury.models import JudgeScore, RubricResult, ScoreStatus, ScoringJob

SYNTHETIC = "synthetic"
PRACTICE = "practice"
INVALIDATED = "invalidated"
JURY_INCOMPLETE = "jury incomplete"
LEARNED = "learned from"
EXCLUSION_REASONS = {
    INVALIDATED: "invalidated by a researcher: never counted",
    PRACTICE: "practice work of unlicensed annotators: never counted",
    SYNTHETIC: "scripted simulated clinician: left out unless included",
    JURY_INCOMPLETE: "no complete jury result for the conversation and rubric: left out of "
    "jury figures, kept for clinician-clinician figures",
    LEARNED: "the jury learned from the conversation's clinician scores (a calibrated version): "
    "left out of jury figures unless included, kept for clinician-clinician figures",
}
LEARNED_NOTE = "{n} conversation{s} left out: this jury learned from their clinician scores"
INCLUDED_NOTE = (
    "{n} conversation{s} included although this jury learned from their clinician scores: "
    "these figures are not held out"
)
SUBMITTED = "submitted_at"
PASSED = "passed"
CLINICIAN_COLUMNS = [
    ITEM,
    RUBRIC,
    RATER,
    SCORE,
    "track",
    "assignment",
    "synthetic",
    "practice",
    SUBMITTED,
]
JURY_COLUMNS = [ITEM, RUBRIC, JURY, PASSED]  # PASSED: the jury's verdict (its pass rule)
# No explanation: the figures never read it, and 36,000 of them were a third of the judges' read
# in a 3,000-conversation study; the disagreement page reads its own few (judge_explanations).
JUDGE_COLUMNS = [ITEM, RUBRIC, JUDGE, "judge_model", SCORE, "rubric_version"]


@dataclass(frozen=True)
class RubricInfo:
    rubric_id: str
    name: str
    code: str
    kind: str  # "dimension" (judged) or "realism" (clinicians only)
    track: str
    version: int

    @property
    def judged(self) -> bool:
        return self.kind == "dimension"


@dataclass(frozen=True)
class Rater:
    id: int
    username: str
    track: str
    active: bool
    synthetic: bool
    imported: bool = False  # some of their counted work was imported from a file


@dataclass(frozen=True)
class StudyFrames:
    clinicians_long: pd.DataFrame
    jury_long: pd.DataFrame
    judges_long: pd.DataFrame
    models: dict[int, str]  # item -> model label (run agent label)
    excluded: dict[str, int]  # reason -> ratings left out (every reason present, 0 if none)
    excluded_annotations: dict[str, int]  # reason -> annotations left out (not jury incomplete)
    rubrics: list[RubricInfo]  # the study's rubric versions, judged first, in rubric order
    raters: dict[int, Rater] = field(default_factory=dict)
    jobs: dict[int, int] = field(default_factory=dict)  # item -> scoring job id used
    agents: dict[int, str] = field(default_factory=dict)  # item -> agent's model string
    # Conversations whose jury learned from their clinician scores; left out of jury_long and
    # judges_long unless learned_included.
    learned: frozenset[int] = frozenset()
    learned_included: bool = False
    # Where the items came from (the study, and the model label filter if any): the reads that
    # follow select the same conversations by a subquery (see `conversation_scope`).
    study_id: int | None = None
    model: str | None = None

    @property
    def learned_note(self) -> str:
        """What a page or export must say about the learned-from conversations ("" if none)."""
        return learned_note(len(self.learned), included=self.learned_included)

    def rubric(self, rubric_id: str) -> RubricInfo | None:
        return next((r for r in self.rubrics if r.rubric_id == rubric_id), None)

    @property
    def judged_rubrics(self) -> list[RubricInfo]:
        return [r for r in self.rubrics if r.judged]

    @property
    def realism_rubrics(self) -> list[RubricInfo]:
        return [r for r in self.rubrics if not r.judged]

    @property
    def conversations(self):
        """The frames' conversations for a further read: the study's (of the model label) as a
        subquery, or the ids themselves for frames made without a study."""
        if self.study_id is None:
            return list(self.models)
        return conversation_scope(self.study_id, self.model)


def study_frames(
    study: Study,
    *,
    job: ScoringJob | None = None,
    include_synthetic: bool = False,
    model: str | None = None,
    track: str | None = None,
    include_learned: bool = False,
) -> StudyFrames:
    """The study's counted ratings, its jury means and judge scores, filtered to one model
    label and/or one annotator track when given; the jury side held out from the conversations
    the jury learned from unless `include_learned`."""
    rows = list(
        _shown(study.pk, model).values_list(
            "conversation_id",
            "conversation__run_agent__label",
            "conversation__run_agent__model",
            "conversation__run_id",
        )
    )
    items = {item: label for item, label, _, _ in rows}
    agents = {item: agent for item, _, agent, _ in rows}
    jobs = _job_of(study, {item: run for item, _, _, run in rows}, job)
    # The study's conversations as a subquery: a list of thousands of ids costs more to bind
    # (Django prepares each one) than the database spends reading the rows.
    scope = conversation_scope(study.pk, model)
    rubrics = study_rubrics(study)
    clinicians, excluded, excluded_annotations, raters = _clinicians(
        study, scope if model else None, include_synthetic=include_synthetic, track=track
    )
    learned = learned_conversations(jobs)
    judged_jobs = jobs if include_learned else {i: j for i, j in jobs.items() if i not in learned}
    jury = _jury(judged_jobs, scope)
    judges = _judges(judged_jobs, scope)
    left_out = learned if not include_learned else frozenset()
    excluded[LEARNED] = int(clinicians[ITEM].isin(left_out).sum())
    rated = clinicians[~clinicians[ITEM].isin(left_out)]
    excluded[JURY_INCOMPLETE] = _jury_incomplete(rated, jury, rubrics)
    return StudyFrames(
        clinicians_long=clinicians,
        jury_long=jury,
        judges_long=judges,
        models=items,
        excluded=excluded,
        excluded_annotations=excluded_annotations,
        rubrics=rubrics,
        raters=raters,
        jobs=jobs,
        agents=agents,
        learned=learned,
        learned_included=include_learned,
        study_id=study.pk,
        model=model,
    )


def _shown(study_id: int, model: str | None):
    items = StudyItem.objects.filter(study_id=study_id)
    return items.filter(conversation__run_agent__label=model) if model else items


def conversation_scope(study_id: int, model: str | None):
    """The study's conversations (of one model label if given) as a subquery of ids."""
    return _shown(study_id, model).values("conversation_id")


def learned_note(count: int, *, included: bool) -> str:
    if not count:
        return ""
    return (INCLUDED_NOTE if included else LEARNED_NOTE).format(
        n=count, s="s" if count != 1 else ""
    )


def learned_conversations(jobs: dict[int, int]) -> frozenset[int]:
    """Of `jobs` (item -> scoring job), the items whose job's jury learned from their clinician
    scores: a calibrated version would agree with the clinicians there by construction."""
    learned_by_job = {
        job.pk: job.jury.learned_items
        for job in ScoringJob.objects.filter(pk__in=set(jobs.values())).select_related("jury")
    }
    return frozenset(item for item, job in jobs.items() if item in learned_by_job.get(job, ()))


def study_rubrics(study: Study) -> list[RubricInfo]:
    versions = sorted(study.rubric_versions.all(), key=lambda v: (v.kind != "dimension", v.order))
    return [RubricInfo(v.rubric_id, v.name, v.code, v.kind, v.track, v.version) for v in versions]


def _job_of(study: Study, run_of: dict[int, int], job: ScoringJob | None) -> dict[int, int]:
    """item -> the scoring job whose jury it is compared with (run_of: item -> its run)."""
    if job is not None:
        return dict.fromkeys(run_of, job.pk)
    first_job_of_run: dict[int, int] = {}
    for job_id, run_id in study.scoring_jobs.order_by("pk").values_list("pk", "run_id"):
        first_job_of_run.setdefault(run_id, job_id)
    return {item: first_job_of_run[run] for item, run in run_of.items() if run in first_job_of_run}


def _clinicians(study: Study, scope, *, include_synthetic: bool, track: str | None):
    """scope: the conversations to read (a subquery), None for all of the study's."""
    raters = {}
    excluded = dict.fromkeys((INVALIDATED, PRACTICE, SYNTHETIC), 0)
    excluded_annotations = dict(excluded)
    assignments = Assignment.objects.filter(item__study=study, status=AssignmentStatus.SUBMITTED)
    if scope is not None:
        assignments = assignments.filter(item__conversation_id__in=scope)
    # The assignment's key, not its public id: only this process looks it up again
    # (disagreements), and 12,000 public ids made into UUIDs and back were a tenth of the read.
    assignments = assignments.annotate(scores_json=json_as_text("scores")).values_list(
        "item__conversation_id",
        "annotator_id",
        "annotator__username",
        "annotator__is_active",
        "track",
        "pk",
        "synthetic",
        "practice",
        "invalidated_at",
        "imported",
        "submitted_at",
        "scores_json",
    )
    fetched = list(assignments)
    every_scores = json_values(row[-1] for row in fetched)  # one decoding for all (json_columns)
    # One row per counted annotation, then one (annotation, rubric, score) per score: the
    # score rows take the annotation's columns by position, not a nine-field tuple each.
    counted, of_annotation, rubrics, scores = [], [], [], []
    for (
        item,
        rater,
        name,
        active,
        own_track,
        assignment,
        synthetic,
        practice,
        invalid,
        imported,
        submitted,
        _,
    ), given in zip(fetched, every_scores, strict=True):
        if track and own_track != track:
            continue
        reason = _exclusion(synthetic, practice, invalid, include_synthetic)
        if reason:
            excluded[reason] += len(given)
            excluded_annotations[reason] += 1
            continue
        known = raters.get(rater)
        if known is None:
            known = raters[rater] = Rater(rater, name, own_track, active, synthetic)
        if imported and not known.imported:
            raters[rater] = replace(known, imported=True)
        position = len(counted)
        counted.append((item, rater, own_track, assignment, synthetic, practice, submitted))
        for rubric, score in given.items():
            if score is not None:
                of_annotation.append(position)
                rubrics.append(rubric)
                scores.append(int(score))
    frame = _clinician_frame(counted, of_annotation, rubrics, scores)
    return frame, excluded, excluded_annotations, raters


ANNOTATION_COLUMNS = [c for c in CLINICIAN_COLUMNS if c not in (RUBRIC, SCORE)]


def _clinician_frame(counted, of_annotation, rubrics, scores) -> pd.DataFrame:
    if not of_annotation:  # the empty table's columns keep the types they always had
        return pd.DataFrame([], columns=CLINICIAN_COLUMNS).astype(
            {ITEM: "int64", RATER: "int64", SCORE: "int64"}
        )
    annotations = _table(counted, ANNOTATION_COLUMNS)
    frame = annotations.iloc[of_annotation].reset_index(drop=True)
    frame[RUBRIC] = rubrics
    frame[SCORE] = scores
    frame = frame[CLINICIAN_COLUMNS]
    return frame.astype({ITEM: "int64", RATER: "int64", SCORE: "int64"})


def _exclusion(synthetic: bool, practice: bool, invalid, include_synthetic: bool) -> str:
    if invalid is not None:
        return INVALIDATED
    if practice:
        return PRACTICE
    if synthetic and not include_synthetic:
        return SYNTHETIC
    return ""


def _jury(jobs: dict[int, int], scope) -> pd.DataFrame:
    """scope: a subquery of the conversations (at least those of `jobs`)."""
    results = RubricResult.objects.filter(
        conversation_id__in=scope, job_id__in=set(jobs.values())
    ).values_list("conversation_id", "job_id", "rubric_id", "mean", "passed")
    frame = _of_their_jobs(_table(list(results), [ITEM, JOB, *JURY_COLUMNS[1:]]), jobs)
    frame = frame.astype({ITEM: "int64", JURY: "float64", PASSED: "bool"})
    return frame.sort_values([RUBRIC, ITEM])


def _valid_scores(jobs: dict[int, int], conversations):
    """The valid judge scores of `conversations` (ids or a subquery) by the jobs of `jobs`
    (keep each row's own job's: `_of_their_jobs`)."""
    return JudgeScore.objects.filter(
        conversation_id__in=conversations, job_id__in=set(jobs.values()), status=ScoreStatus.VALID
    )


JOB = "job"
WHOLE_NUMBERS = frozenset((ITEM, JOB, RATER, JUDGE, SCORE))


def _table(rows: list[tuple], columns: list[str]) -> pd.DataFrame:
    """The rows as a table built column by column, the id and score columns as int64 arrays:
    twice as fast as a table of tuples (a 2-D object array first), with the same types."""
    if not rows:
        return pd.DataFrame(rows, columns=columns)
    return pd.DataFrame(
        {
            name: np.fromiter(values, np.int64, len(values))
            if name in WHOLE_NUMBERS
            else list(values)
            for name, values in zip(columns, zip(*rows, strict=True), strict=True)
        }
    )


def _of_their_jobs(frame: pd.DataFrame, jobs: dict[int, int]) -> pd.DataFrame:
    """The rows scored by the job their item is compared with (`jobs`: item -> job), without
    the job column."""
    theirs = frame[ITEM].map(jobs).to_numpy() == frame[JOB].to_numpy()
    return frame[theirs].drop(columns=JOB).reset_index(drop=True)


def _judges(jobs: dict[int, int], scope) -> pd.DataFrame:
    scores = _valid_scores(jobs, scope).values_list(
        "conversation_id",
        "job_id",
        "rubric_version__rubric_id",
        "judge_index",
        "judge_model",
        "score",
        "rubric_version__version",
    )
    frame = _of_their_jobs(_table(list(scores), [ITEM, JOB, *JUDGE_COLUMNS[1:]]), jobs)
    return frame.astype({ITEM: "int64", JUDGE: "int64", SCORE: "int64"}).sort_values(
        [RUBRIC, ITEM, JUDGE]
    )


def judge_explanations(frames: StudyFrames, items) -> dict[tuple[int, str, int], str]:
    """(item, rubric, judge index) -> the explanation of that counted judge score, for the few
    conversations a page shows beside their scores."""
    jobs = {item: frames.jobs[item] for item in items if item in frames.jobs}
    rows = _valid_scores(jobs, list(jobs)).values_list(
        "conversation_id", "job_id", "rubric_version__rubric_id", "judge_index", "explanation"
    )
    frame = _of_their_jobs(_table(list(rows), [ITEM, JOB, RUBRIC, JUDGE, "explanation"]), jobs)
    keys = zip(frame[ITEM].tolist(), frame[RUBRIC].tolist(), frame[JUDGE].tolist(), strict=True)
    return dict(zip(keys, frame["explanation"].tolist(), strict=True))


def _jury_incomplete(clinicians: pd.DataFrame, jury: pd.DataFrame, rubrics) -> int:
    """Ratings of judged rubrics whose (item, rubric) has no jury mean."""
    judged = {r.rubric_id for r in rubrics if r.judged}
    rated = clinicians[clinicians[RUBRIC].isin(judged)]
    if rated.empty:
        return 0
    keys = pd.MultiIndex.from_frame(rated[[ITEM, RUBRIC]])
    known = pd.MultiIndex.from_frame(jury[[ITEM, RUBRIC]]) if not jury.empty else None
    return int(len(keys) if known is None else (~keys.isin(known)).sum())


DIALOGUE = ("patient_message", "assistant_message")
FEATURE_COLUMNS = [ITEM, "turns", "characters", "tool_calls", AGENT_MODEL]


def conversation_features(frames: StudyFrames) -> pd.DataFrame:
    """Per study conversation: assistant turns, characters of the dialogue (patient and
    assistant messages), tool calls, and the agent's model string - what the judge bias
    diagnostics set the judges' disagreement against."""
    items = list(frames.agents)
    scope = frames.conversations
    turns = dict(Conversation.objects.filter(pk__in=scope).values_list("pk", "assistant_turns"))
    events = {
        row["conversation_id"]: row
        for row in TraceEvent.objects.filter(conversation_id__in=scope)
        .values("conversation_id")
        .annotate(
            characters=Sum(Length("content"), filter=Q(kind__in=DIALOGUE)),
            tool_calls=Count("pk", filter=Q(kind="tool_call")),
        )
        .order_by()
    }
    rows = [
        (
            item,
            turns.get(item, 0),
            (events.get(item) or {}).get("characters") or 0,
            (events.get(item) or {}).get("tool_calls") or 0,
            frames.agents[item],
        )
        for item in sorted(items)
    ]
    return pd.DataFrame(rows, columns=FEATURE_COLUMNS)
