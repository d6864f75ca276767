"""Rubric lab models, split by concern and re-exported here."""

from rubric_lab.models.evaluation import *  # noqa: F403  (evaluation models, see __all__)
from rubric_lab.models.pipeline import (  # noqa: F401
    CriterionDecision,
    GenerationJob,
    GenerationMethod,
    GenerationStatus,
    InstanceRubric,
    InstanceScore,
    InstanceScoreStatus,
    KnowledgePassage,
    KnowledgeUpload,
    PassageOrigin,
    PipelineStage,
    RetrieverKind,
    RubricCriterion,
    RubricGeneration,
    StageStatus,
)
