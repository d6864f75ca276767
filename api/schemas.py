"""What the API takes. Each body names the fields of the page's form it fills (limits and
rules live in that form and the service behind it); a field left out takes the page's default."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal

from ninja import Schema
from pydantic import Field

from alignment.models import ArchiveJobKind, ArchiveJobStatus
from annotation.models import StudyKind, StudyStatus
from benchmark.models import ConversationStatus
from jobs.models import JobStatus
from jury.models import ScoreStatus


class CaseSetIn(Schema):
    name: str
    distribution: int | None = Field(None, description="Distribution id (default: the shipped one)")
    size: int | None = None
    sampler_seed: int | None = None
    generator_model: str | None = None
    cost_limit_usd: Decimal | None = None
    batch: bool = Field(
        False, description="Batch APIs: about half the price, results within 24 hours"
    )
    batch_resend_live: bool = Field(
        False, description="Call live what a batch left unanswered, instead of another batch"
    )


class RunIn(Schema):
    name: str
    benchmark_set: int = Field(description="A finished case set's id")
    models: list[str] = Field(description="Models under test, e.g. offline/careful")
    agent_configs: list[int] | None = Field(None, description="Agent configuration ids")
    patient_model: str | None = None
    roster_model: str | None = None
    repetitions: int | None = None
    concurrency: int | None = None
    max_turns: int | None = None
    seed: int | None = None
    use_cache: bool | None = None
    cost_limit_usd: Decimal | None = None
    dry_run: bool = Field(False, description="Answer the forecast (200) and create nothing")
    pilot: int | None = Field(
        None,
        description="With dry_run, when the set has no finished run to forecast from: launch "
        "a pilot of this many of its cases, played by the offline scripts (free), and answer "
        "202 with its id; ask again once it finished",
    )


class PilotOut(Schema):
    """A dry run asked with `pilot` for a set with no finished run: the pilot run playing."""

    dry_run: bool = True
    pilot_run: int = Field(description="The pilot run's id (GET /runs/{id} shows its progress)")
    conversations: int = Field(description="The pilot's conversations")
    detail: str


class RunResumeIn(Schema):
    retry_failed: bool = False
    cost_limit_usd: Decimal | None = None


class ScoringJobIn(Schema):
    run: int
    jury: int | None = Field(None, description="Jury id (default: the demo jury)")
    use_cache: bool | None = None
    cost_limit_usd: Decimal | None = None
    batch: bool = Field(
        False, description="Batch APIs: about half the price, results within 24 hours"
    )
    batch_resend_live: bool = Field(
        False, description="Call live what a batch left unanswered, instead of another batch"
    )
    dry_run: bool = Field(False, description="Answer the forecast (200) and create nothing")


class StudyIn(Schema):
    project: str
    name: str
    kind: str | None = None
    round_number: int | None = None
    scoring_jobs: list[int] = Field(default_factory=list)
    rubric_versions: list[int] | None = None
    sample_size: int | None = None
    overlap_clinical: int | None = None
    overlap_operational: int | None = None
    seed: int | None = None
    include_infeasible: bool | None = None
    reservation_minutes: int | None = None
    alt_test_epsilon: float | None = None
    drift_flag_points: float | None = None


class ArchiveExportIn(Schema):
    study: int
    with_usernames: bool = False


class IntervalOut(Schema):
    estimate: float
    low: float | None = Field(description="None when one earlier unit gives no spread")
    high: float | None


class RoleForecastOut(Schema):
    role: str = Field(
        description="agent: <label>, patient, roster, judge <seat>; in the rubric lab "
        "stage: <name> (an ablation's prefixed with its variant) or judge seat <n>"
    )
    model: str
    units: int = Field(
        description="Conversations (judges: conversations x rubrics); in the rubric lab the "
        "launch's units: near-miss pairs, coverage cases, refinements or a rubric's criteria"
    )
    observed_units: int = Field(description="Earlier units the role is forecast from")
    basis: str
    calls: IntervalOut | None
    input_tokens: IntervalOut | None
    cached_input_tokens: IntervalOut | None
    cache_write_tokens: IntervalOut | None
    output_tokens: IntervalOut | None
    cost_usd: IntervalOut | None = Field(description="None when the model has no price")


class ForecastOut(Schema):
    """A launch asked with dry_run: what it would call and spend (llm.engine.forecast)."""

    dry_run: bool = True
    roles: list[RoleForecastOut]
    cost_usd: IntervalOut | None = Field(description="The priced roles' total")
    unpriced: list[str] = Field(description="Models whose cost is unknown (never counted free)")
    unobserved: list[str] = Field(description="Roles no earlier call shows")
    source: str = Field(description="The earlier run, job or study, in words")
    method: str


# --- what the API answers ---------------------------------------------------------------------
# Money is a number of US dollars (null when a price is unknown); an interval is an object.


class Interval(Schema):
    """An estimate with its 95% interval (low and high null when it has none)."""

    estimate: float | None
    low: float | None
    high: float | None


class CaseSetCounts(Schema):
    total: int
    done: int
    failed: int
    pending: int


class CaseSetProgress(CaseSetCounts):
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None = Field(description="USD spent enriching the entries")
    unknown_cost: int = Field(description="Entries with an unpriced call")
    calls: int
    cached: int


class ProviderBatchOut(Schema):
    model: str
    batch_id: str = Field(description="The provider's id of the batch (blank until sent)")
    state: str
    detail: str
    requests: int
    counts: dict[str, int] = Field(description="Requests by the provider's state")
    error: str
    submitted_at: datetime | None
    ended_at: datetime | None


class CaseSetOut(Schema):
    id: int
    name: str
    status: JobStatus
    distribution: int | None
    imported_from: str
    size: int
    sampler_seed: int | None
    generator_model: str
    cost_limit_usd: float | None
    created_at: datetime
    progress: CaseSetCounts
    batch: bool = Field(False, description="Enrichment calls sent through the batch APIs")


class CaseSetDetailOut(CaseSetOut):
    progress: CaseSetProgress
    batches: list[ProviderBatchOut] = Field(default_factory=list)
    warning: str = Field("", description="Set when the queue cannot be reached")


class AgentOut(Schema):
    id: int
    label: str
    model: str


class RunCounts(Schema):
    total: int
    finished: int
    failed: int
    cancelled: int
    running: int
    queued: int
    pending: int
    percent: float


class RunProgress(RunCounts):
    input_tokens: int
    output_tokens: int
    cost: float | None
    calls: int
    cached_calls: int
    terminations: dict[str, int]


class RunOut(Schema):
    id: int
    name: str
    status: JobStatus
    benchmark_set: int
    agents: list[AgentOut]
    patient_model: str
    roster_model: str
    repetitions: int
    concurrency: int
    max_turns: int
    seed: int | None
    cost_limit_usd: float | None
    progress: RunCounts


class RunDetailOut(RunOut):
    progress: RunProgress


class RunLaunchOut(RunDetailOut):
    warning: str = Field("", description="Set when the queue cannot be reached")
    unpriced: list[str] = Field(default_factory=list, description="Models with no price")


class RunImportOut(RunDetailOut):
    conversations: int = Field(description="Conversations imported")


class ConversationOut(Schema):
    id: uuid.UUID
    run: int
    agent: str
    model: str
    case: int
    repetition: int
    status: ConversationStatus
    termination_reason: str
    assistant_turns: int
    cost_usd: float | None
    finished_at: datetime | None


class JuryRef(Schema):
    id: int
    name: str
    judges: list[str]


class ScoringCounts(Schema):
    total: int
    valid: int
    invalid: int
    error: int
    pending: int
    done: int
    percent: float


class ScoringProgress(ScoringCounts):
    cached: int
    calls: int
    cached_calls: int
    input_tokens: int
    output_tokens: int
    cost: float | None = Field(description="USD; null when some call had no price")
    unpriced: int
    failed: int
    running: bool


class ConversationCounts(Schema):
    complete: int
    incomplete: int
    awaiting: int
    excluded: int


class ScoringJobOut(Schema):
    id: int
    run: int
    jury: JuryRef
    status: JobStatus
    cost_limit_usd: float | None
    created_at: datetime
    finished_at: datetime | None
    progress: ScoringCounts
    batch: bool = Field(description="Judge calls sent through the providers' batch APIs")


class ScoringJobDetailOut(ScoringJobOut):
    progress: ScoringProgress
    conversations: ConversationCounts
    batches: list[ProviderBatchOut] = Field(default_factory=list)


class ScoringJobLaunchOut(ScoringJobDetailOut):
    queued: int = Field(description="Judge calls sent to the workers")
    warning: str = ""
    unpriced: list[str] = Field(default_factory=list)


class ScoreOut(Schema):
    id: int
    conversation: uuid.UUID
    rubric: str
    rubric_version: int
    judge_index: int
    judge_model: str
    status: ScoreStatus
    score: float | None
    explanation: str
    invalid_reason: str
    cost_usd: float | None
    cached: bool


class RubricResultOut(Schema):
    rubric: str
    code: str
    name: str
    mean: float | None
    pass_rate: Interval = Field(description="Percent passing, with its 95% Wilson interval")


class ModelRowOut(Schema):
    model: str
    scripted: bool = Field(description="A scripted agent, not a model")
    n: int = Field(description="Complete conversations")
    aggregate: Interval = Field(description="The aggregate's mean and 95% interval")
    versus_best: str = Field(description="best, indistinguishable, different, untested or ''")
    rubrics: list[RubricResultOut]


class ModelTableOut(Schema):
    counts: ConversationCounts
    models: list[ModelRowOut]


Cell = Interval | bool | int | float | str | None


class ReportTableOut(Schema):
    table: str
    caption: str
    counts: ConversationCounts
    columns: list[str] = Field(description="Row keys in order; an interval is one column")
    rows: list[dict[str, Cell]]


class StudyOut(Schema):
    id: int
    project: str
    name: str
    kind: StudyKind
    round_number: int | None
    status: StudyStatus
    sample_size: int
    items: int
    scoring_jobs: list[int]
    created_at: datetime


class ArchiveJobOut(Schema):
    id: int
    kind: ArchiveJobKind
    study: int | None
    status: ArchiveJobStatus
    done: int
    total: int
    error: str
    file_name: str
    downloadable: bool
    created_at: datetime
    finished_at: datetime | None


class LearnedFromOut(Schema):
    """Where a calibrated jury learned its calibration (those conversations are held out of
    its reports). A field the calibration did not record is null."""

    purpose: str | None = Field(None, description="promoted (a version) or fold (cross-fitting)")
    study_id: int | None = None
    study_name: str | None = None
    variant: str | None = None
    items: list[int] = Field(default_factory=list, description="Items whose scores were used")
    n_ratings: int | None = None
    fitted_at: str | None = Field(None, description="ISO 8601 time of the fit")
    label: str | None = Field(None, description="A fold jury's: its study and fold")
    fold: int | None = None
    folds: int | None = None


class JuryOut(Schema):
    id: int
    name: str
    judges: list[str] = Field(description="Model strings, one per judge seat")
    weights: dict[str, float] = Field(description="Rubric id -> weight in the aggregate")
    pass_threshold: float
    merge_mode: str
    version: int
    base: int | None = Field(description="The first version's id (null: this is the first)")
    calibrated: bool
    learned_from: LearnedFromOut | None = Field(description="Null: not calibrated")
    note: str
    created_at: datetime


class RubricOut(Schema):
    id: int = Field(description="This version's id (a study's rubric_versions)")
    rubric: str
    version: int
    name: str
    code: str
    kind: str = Field(description="dimension (judged) or realism (clinicians only)")
    track: str
    current: bool
    fingerprint: str
    text: str = Field(description="The rubric file (YAML)")


class PriceFigures(Schema):
    """USD per million tokens; a cache price left null is the input price."""

    input_per_million: float | None
    output_per_million: float | None
    cached_input_per_million: float | None
    cache_write_per_million: float | None


class PriceOut(PriceFigures):
    model: str = Field(description="A model string, or a pattern (openai/*) from prices.yaml")
    source: str = Field(description="prices.yaml, or staff (a price set on the Prices page)")
    set_at: datetime | None = Field(description="When staff set it (null: the file's)")


class PriceIn(Schema):
    model: str
    input_per_million: Decimal
    output_per_million: Decimal
    cached_input_per_million: Decimal | None = None
    cache_write_per_million: Decimal | None = None
    note: str = ""


class EndpointOut(Schema):
    name: str
    base_url: str
    api_key_env: str = Field(description="The variable holding the key (never the key)")
    key_state: str = Field(description="set, not set, not needed or refused")
    requests_per_minute: int | None
    tokens_per_minute: int | None
    concurrency: int | None


class EndpointListOut(Schema):
    yaml_text: str = Field(description="The list in force, as its YAML")
    endpoints: list[EndpointOut]


class EndpointListIn(Schema):
    yaml_text: str
    note: str = ""


class DistributionOut(Schema):
    id: int
    name: str
    fingerprint: str
    created_at: datetime
    text: str = Field(description="The distribution file (YAML)")


class AgentConfigOut(Schema):
    id: int
    slug: str
    name: str
    fingerprint: str
    created_at: datetime
    text: str = Field(description="The configuration file (YAML)")
