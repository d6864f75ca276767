"""What the API takes. Each body names the fields of the page's form it fills (limits and
rules live in that form and the service behind it); a field left out takes the page's default."""

from __future__ import annotations

from decimal import Decimal

from ninja import Schema
from pydantic import Field


class CaseSetIn(Schema):
    name: str
    distribution: int | None = Field(None, description="Distribution id (default: the shipped one)")
    size: int | None = None
    sampler_seed: int | None = None
    generator_model: str | None = None
    cost_limit_usd: Decimal | None = None


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
    role: str = Field(description="agent: <label>, patient, roster, judge <seat>")
    model: str
    units: int = Field(description="Conversations (judges: conversations x rubrics)")
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
    source: str = Field(description="The earlier run or scoring job, in words")
    method: str
