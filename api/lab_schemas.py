"""What the rubric lab's routes take and answer (api.routes.lab). Each launch body names the
fields of the lab page's form it fills; a field left out takes the page's default. Money is a
number of US dollars (null when a price is unknown); an estimate with its interval is one
object {estimate, low, high}."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal

from ninja import Schema
from pydantic import Field

from api.schemas import Cell, Interval, ProviderBatchOut
from jobs.models import JobStatus

SENSITIVITY_BATCH = (
    "Send the editor's and the judges' calls through the providers' batch APIs (about half the "
    "price, each round of calls within 24 h; openai/, anthropic/ and offline/ models)"
)
COVERAGE_BATCH = (
    "Send the judge's calls through the providers' batch APIs (about half the price, each "
    "round of calls within 24 h; openai/, anthropic/ and offline/ models)"
)
REFINE_BATCH = (
    "Send the evaluator's, the editor's and the judges' calls through the providers' batch APIs "
    "(about half the price, each round of calls within 24 h; openai/, anthropic/ and offline/ "
    "models)"
)
ABLATION_BATCH = (
    "Launch every job of the ablation (rubric generations, coverage runs, sensitivity studies) "
    "in batch mode: about half the price, each round of calls within 24 h; the generator, judge "
    "and editor must be openai/, anthropic/ or offline/ models"
)
RESEND_LIVE = "Call live what a batch left unanswered, instead of another batch"
GENERATION_BATCH = (
    "Send the pipeline's calls through the providers' batch APIs (about half the price, each "
    "round of calls within 24 h; openai/, anthropic/ and offline/ models, no judge, cache on)"
)
DRY_RUN = (
    "Answer the forecast of each stage's calls, tokens and cost (200, from an earlier study of "
    "the same kind) and create nothing; a launch the service would refuse is still a 400"
)


# --- imports ---------------------------------------------------------------------------------


class CriteriaImportOut(Schema):
    """A file of expert (physician) criteria: a HealthBench import's or an upload's."""

    id: int
    benchmark_set: int
    filename: str
    criteria: int = Field(description="Criteria the file held")
    created_at: datetime


class ExpertCriterionOut(Schema):
    id: int
    case: int = Field(description="The case's index in its set")
    conversation: uuid.UUID | None = Field(
        description="The one conversation it judges (null: every reply to the case)"
    )
    text: str
    weight: int | None = Field(description="HealthBench's points (negative: a penalty)")
    axis: str
    tags: list[str]


class HealthBenchImportOut(Schema):
    run: int = Field(description="The imported run (GET /runs/{id})")
    criteria_import: CriteriaImportOut
    conversations: int
    with_completion: int = Field(description="Conversations with a reply to score")
    with_ideal: int = Field(description="... whose reply is the physicians' ideal completion")
    left_out: int = Field(description="Rows outside the source's subset, when asked for it")
    summary: str


# --- jobs ------------------------------------------------------------------------------------


class ModelCostOut(Schema):
    model: str
    calls: int
    cached: int
    input_tokens: int
    output_tokens: int
    cost: float | None = Field(description="USD; null when some call had no price")


class LabJobOut(Schema):
    id: int
    name: str
    status: JobStatus
    stop_reason: str = Field(description="Why a paused job stopped (its cost limit)")
    failure_reason: str
    cost_limit_usd: float | None
    use_cache: bool
    created_at: datetime
    finished_at: datetime | None


class GenerationCounts(Schema):
    total: int = Field(description="Conversations to build a rubric for")
    finished: int
    failed: int
    done: int
    percent: float


class GenerationProgress(GenerationCounts):
    cost: float | None = Field(description="USD spent so far; null when a price is unknown")


class GenerationJobIn(Schema):
    run: int
    conversation: uuid.UUID | None = Field(None, description="Only this conversation")
    limit: int | None = Field(None, description="At most this many conversations")
    generator_model: str | None = None
    judge_model: str | None = Field(None, description="Blank: the rubrics are not scored")
    method: str | None = Field(None, description="pipeline or direct")
    retriever: str | None = None
    top_k: int | None = None
    skip_routing: bool | None = None
    skip_intent: bool | None = None
    skip_facts: bool | None = None
    skip_audit: bool | None = None
    audit_rounds: int | None = None
    temperature: float | None = Field(None, description="Every model stage's")
    top_p: float | None = Field(None, description="Every model stage's")
    stage_sampling: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Per stage (routing, audit, ...): {temperature, top_p} over the above",
    )
    use_cache: bool | None = None
    cost_limit_usd: Decimal | None = None
    batch: bool | None = Field(None, description=GENERATION_BATCH)
    batch_resend_live: bool | None = Field(None, description=RESEND_LIVE)


class GenerationJobOut(LabJobOut):
    run: int | None
    method: str
    generator_model: str
    judge_model: str
    retriever: str
    top_k: int
    audit_rounds: int
    ablations: list[str] = Field(description="Stages left out")
    sampling: dict[str, dict[str, float | None]]
    progress: GenerationCounts


class GenerationJobDetailOut(GenerationJobOut):
    progress: GenerationProgress
    model_costs: list[ModelCostOut]
    batch: bool = Field(False, description="The pipeline's calls go through the batch APIs")
    batch_resend_live: bool = False
    batches: list[ProviderBatchOut] = Field(default_factory=list)
    warning: str = Field("", description="Set when the queue cannot be reached")


class CriterionOut(Schema):
    index: int
    text: str
    axis: str
    weight: int = Field(description="-10 to 10; negative penalises a behaviour")
    fact_ids: list[str]
    passage_ids: list[str]
    intent_basis: list[str]


class InstanceRubricOut(Schema):
    id: int
    conversation: uuid.UUID
    positive_total: int = Field(description="The positive weights' sum (a score's scale)")
    criteria: list[CriterionOut]


class CitedFactOut(Schema):
    """A medical fact of the rubric's reference board, as the facts stage wrote it."""

    id: str
    text: str
    evidence_ids: list[str] = Field(default_factory=list)
    passage_ids: list[str] = Field(default_factory=list)
    safety: bool = Field(False, description="A red flag, contraindication or resource")


class CitedPassageOut(Schema):
    passage_id: str
    title: str
    source: str
    source_version: str
    text: str


class InstanceRubricDetailOut(InstanceRubricOut):
    generation: int
    job: int
    facts: list[CitedFactOut] = Field(description="The medical facts criteria cite")
    passages: list[CitedPassageOut] = Field(description="The knowledge passages cited")


class GenerationOut(Schema):
    """One conversation of a generation job: how far it got and, once made, its rubric."""

    id: int
    conversation: uuid.UUID
    case: int = Field(description="The case's index in its set")
    source_id: str = Field(description="An imported row's id (HealthBench prompt_id)")
    status: str = Field(description="pending, finished or failed")
    current_stage: str
    failed_stage: str
    failure_reason: str
    rubric: InstanceRubricOut | None


class WorkCounts(Schema):
    total: int
    pending: int
    done: int
    percent: float
    counts: dict[str, int] = Field(description="Units by status")


class WorkProgress(WorkCounts):
    input_tokens: int
    output_tokens: int
    cost: float | None = Field(description="USD; null when some call had no price")


class ResultTableOut(Schema):
    """A result table with the numbers it is computed from; a missing figure is null."""

    columns: list[str] = Field(description="Row keys in order; an interval is one column")
    rows: list[dict[str, Cell]]


class SensitivityIn(Schema):
    run: int
    name: str | None = None
    setup: str = Field(description="generic (a jury), instance (rubrics) or pairwise")
    jury: int | None = Field(None, description="Default: the demo jury")
    generation_job: int | None = Field(None, description="The instance setup's rubrics")
    reference_model: str | None = Field(None, description="References by this agent only")
    judge_model: str | None = None
    perturber_model: str | None = None
    perturbations: list[str] | None = Field(None, description="Default: every type")
    max_cases: int | None = None
    seed: int | None = None
    min_type_references: int | None = None
    min_type_share: float | None = None
    use_cache: bool | None = None
    cost_limit_usd: Decimal | None = None
    batch: bool | None = Field(None, description=SENSITIVITY_BATCH)
    batch_resend_live: bool | None = Field(None, description=RESEND_LIVE)
    dry_run: bool = Field(False, description=DRY_RUN)


class SensitivityOut(LabJobOut):
    run: int
    setup: str
    jury: int | None
    generation_job: int | None
    judge_model: str
    perturber_model: str
    perturbations: list[str]
    reference_model: str
    max_cases: int
    seed: int
    progress: WorkCounts


class LabJobDetail(Schema):
    progress: WorkProgress
    model_costs: list[ModelCostOut]
    warning: str = Field("", description="Set when the queue cannot be reached")


class BatchModeOut(Schema):
    batch: bool = Field(False, description="The study's calls go through the batch APIs")
    batch_resend_live: bool = False
    batches: list[ProviderBatchOut] = Field(default_factory=list)


class SensitivityDetailOut(LabJobDetail, SensitivityOut, BatchModeOut):
    pass


class CoverageIn(Schema):
    generation_job: int
    name: str | None = None
    judge_model: str | None = None
    cost_limit_usd: Decimal | None = None
    batch: bool | None = Field(None, description=COVERAGE_BATCH)
    batch_resend_live: bool | None = Field(None, description=RESEND_LIVE)
    dry_run: bool = Field(False, description=DRY_RUN)


class CoverageOut(LabJobOut):
    generation_job: int
    judge_model: str
    progress: WorkCounts


class CoverageDetailOut(LabJobDetail, CoverageOut, BatchModeOut):
    pass


class RefineIn(Schema):
    generation_job: int
    name: str | None = None
    evaluator_model: str | None = None
    editor_model: str | None = None
    judge_model: str | None = None
    criteria_judge_model: str | None = Field(None, description="Blank: no expert scoring")
    max_cases: int | None = None
    cost_limit_usd: Decimal | None = None
    batch: bool | None = Field(None, description=REFINE_BATCH)
    batch_resend_live: bool | None = Field(None, description=RESEND_LIVE)
    dry_run: bool = Field(False, description=DRY_RUN)


class RefineOut(LabJobOut):
    generation_job: int
    evaluator_model: str
    editor_model: str
    judge_model: str
    criteria_judge_model: str
    max_cases: int
    progress: WorkCounts


class RefineDetailOut(LabJobDetail, RefineOut, BatchModeOut):
    pass


class AblationIn(Schema):
    run: int
    name: str | None = None
    reference_model: str | None = None
    generator_model: str | None = None
    judge_model: str | None = None
    perturber_model: str | None = None
    max_cases: int | None = None
    cost_limit_usd: Decimal | None = None
    batch: bool | None = Field(None, description=ABLATION_BATCH)
    batch_resend_live: bool | None = Field(None, description=RESEND_LIVE)
    dry_run: bool = Field(False, description=DRY_RUN)


class AblationOut(LabJobOut):
    run: int
    generator_model: str
    judge_model: str
    perturber_model: str
    reference_model: str
    max_cases: int
    batch: bool = Field(False, description="Every job of the ablation runs in batch mode")
    batch_resend_live: bool = False


class VersusFullOut(Schema):
    difference: Interval = Field(description="Recall of this variant minus the full pipeline's")
    p_value: float | None
    test: str


class AblationArmOut(Schema):
    variant: str
    label: str
    generation_job: int
    generation_status: JobStatus
    coverage_run: int | None
    sensitivity_study: int | None
    rubrics: int = Field(description="Rubrics the variant made")
    recall: Interval | None = Field(description="Coverage of the expert criteria (micro)")
    precision: Interval | None
    f1: Interval | None
    versus_full: VersusFullOut | None
    auroc: Interval | None = Field(description="Sensitivity, every type pooled")
    win_rate: Interval | None


class AblationDetailOut(AblationOut):
    arms: list[AblationArmOut]
    model_costs: list[ModelCostOut]
    warning: str = Field("", description="Set when the queue cannot be reached")


class ResumeIn(Schema):
    cost_limit_usd: Decimal | None = Field(None, ge=0, description="A new limit (null: keep it)")


# --- scoring with an instance rubric; the knowledge base ------------------------------------


class InstanceScoreIn(Schema):
    conversation: uuid.UUID = Field(description="A scorable reply to the rubric's case")
    judge_model: str | None = None
    batch: bool = Field(
        False, description="Not offered: a score is judged live; true is refused with a 400"
    )
    batch_resend_live: bool = Field(False, description="Not offered, as `batch`")
    dry_run: bool = Field(False, description=DRY_RUN)


class DecisionOut(Schema):
    criterion: int = Field(description="The criterion's index in its rubric")
    text: str
    weight: int
    met: bool
    reason: str
    cached: bool


class InstanceScoreOut(Schema):
    """One judge's verdict on one conversation against one instance rubric."""

    id: int
    rubric: int
    conversation: uuid.UUID
    judge_model: str
    status: str = Field(description="pending, valid, invalid or error")
    weighted_sum: int | None
    positive_total: int
    normalised: float | None = Field(description="weighted_sum / positive_total")
    failure_reason: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    created_at: datetime
    finished_at: datetime | None
    decisions: list[DecisionOut]


class PassageFields(Schema):
    passage_id: str
    topic: str
    title: str
    text: str
    source: str
    source_version: str
    tags: list[str]


class PassageOut(PassageFields):
    origin: str = Field(description="shipped, or uploaded")


class KnowledgeHitOut(PassageFields):
    score: float = Field(description="The retriever's score (higher is closer)")


class KnowledgeUploadOut(Schema):
    id: int
    filename: str
    passages: int
    created_at: datetime
