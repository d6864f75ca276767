"""The filters of each list, declared: a value a filter does not offer is a 400 (a problem
naming the parameter), as is a query parameter the route does not take - a misspelt filter
never silently widens a list."""

from __future__ import annotations

import functools
import inspect

from django.http import HttpRequest
from ninja import Schema
from pydantic import Field

from accounts.models import Track
from annotation.models import StudyKind, StudyStatus
from api.problems import Refused
from benchmark.models import ConversationStatus, Termination
from jobs.models import JobStatus
from jury.models import ScoreStatus
from rubric_lab.models import RetrieverKind

PAGER = ("cursor", "page_size")


class CaseSetFilters(Schema):
    status: JobStatus | None = None


class RunFilters(Schema):
    status: JobStatus | None = None
    benchmark_set: int | None = Field(None, description="Runs of this case set")


class ConversationFilters(Schema):
    status: ConversationStatus | None = None
    termination_reason: Termination | None = None
    agent: int | None = Field(None, description="A run agent's id (the run's `agents`)")


class ScoringJobFilters(Schema):
    status: JobStatus | None = None
    run: int | None = Field(None, description="Scoring jobs of this run")


class ScoreFilters(Schema):
    rubric: str | None = Field(None, description="A rubric the job judged, e.g. clinical_safety")
    status: ScoreStatus | None = None
    judge: int | None = Field(None, ge=0, description="The judge's seat, from 0")


class StudyFilters(Schema):
    status: StudyStatus | None = None
    kind: StudyKind | None = None


class AgreementFilters(Schema):
    model: str | None = Field(None, description="One model's conversations (its label)")
    track: Track | None = Field(None, description="One track's annotators")
    synthetic: bool = Field(False, description="Count synthetic clinicians' ratings too")
    learned: bool = Field(False, description="Count learned (simulated) ratings too")


def known_query(*filters: type[Schema], extra: tuple[str, ...] = ()):
    """Refuse a query parameter none of `filters` (nor the pager, nor `extra`) declares."""
    allowed = {name for schema in filters for name in schema.model_fields} | {*PAGER, *extra}

    def decorator(view):
        @functools.wraps(view)
        def checked(request: HttpRequest, *args, **kwargs):
            unknown = sorted(set(request.GET) - allowed)
            if unknown:
                raise Refused(
                    f"Unknown query parameter(s): {', '.join(unknown)}; this route takes "
                    f"{', '.join(sorted(allowed))}.",
                    [
                        {"location": f"query.{name}", "message": "not a parameter here"}
                        for name in unknown
                    ],
                )
            return view(request, *args, **kwargs)

        # django-ninja reads the view's annotations in the wrapper's module: give it them read.
        checked.__signature__ = inspect.signature(view, eval_str=True)
        return checked

    return decorator


class LabJobFilters(Schema):
    status: JobStatus | None = None


class GenerationJobFilters(LabJobFilters):
    run: int | None = Field(None, description="Generation jobs of this run")


class KnowledgeSearchFilters(Schema):
    q: str = Field("", description="What to search the knowledge base for (blank: nothing)")
    retriever: RetrieverKind = RetrieverKind.BM25
