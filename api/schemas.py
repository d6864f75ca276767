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


class RunResumeIn(Schema):
    retry_failed: bool = False
    cost_limit_usd: Decimal | None = None


class ScoringJobIn(Schema):
    run: int
    jury: int | None = Field(None, description="Jury id (default: the demo jury)")
    use_cache: bool | None = None
    cost_limit_usd: Decimal | None = None


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
