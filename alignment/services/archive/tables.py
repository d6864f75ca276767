"""Which rows of which models make up a study archive, and how a row becomes JSON and back.

Every table is one JSON Lines member, `data/<table>.jsonl`, written in dependency order. A row
carries every concrete field of its model except the primary key: its `id` is the row's
number in the archive (1, 2, ... in the order of the original primary keys), and a foreign key
holds the `id` of the row it points at in the table of that model. People are never written
by id or username: a foreign key to a user holds their pseudonym (`A1` annotators, `S1` staff),
resolved through `data/people.jsonl`. Many-to-many fields hold sorted lists of ids.

Ids in JSON fields (a run's `config.benchmark_set`, a calibration guide's example items) are
translated the same way. A few references may name rows the archive does not hold (a guide the
annotators saw was written after another round of the project): those are written as null, and
such a guide's examples from that round keep the description annotators saw instead of the item.

Because rows are written and re-created in the order of their original primary keys, an
imported study sorts its conversations and annotators exactly as the original did, so the
statistics (bootstrap resamples over sorted items) come out identical.
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import models

from alignment.models import ItemTheme, Theme
from annotation.models import (
    Assignment,
    AssignmentHistory,
    CalibrationGuide,
    Project,
    Study,
    StudyItem,
)
from benchmark.models import (
    AgentConfig,
    BenchmarkEntry,
    BenchmarkSet,
    Conversation,
    Distribution,
    Run,
    RunAgent,
    TraceEvent,
)
from jury.models import (
    ConversationResult,
    JudgeScore,
    Jury,
    RubricResult,
    RubricVersion,
    ScoringJob,
)

PEOPLE = "people"
SANDBOXES = "sandboxes"
SANDBOX_FIELDS = ("sandbox_initial", "sandbox_final")
# Fields of the study that say where it came from: set by an import, never carried over.
IMPORT_FIELDS = ("imported_from", "imported_at")
# What this site keeps and purges (portal.services.retention): its own policy, not the study's.
SITE_RETENTION_FIELDS = ("purged_at",)

Keys = dict[str, dict[int, int]]  # table -> original pk -> archive id
# Fields added to format version 1 after archives of it were written (table -> fields): an
# older archive's rows lack them and take the field's default; every other field is required.
ADDED_FIELDS = {
    "assignments": ("imported",),
    "benchmark_sets": ("imported_from",),
    # What a run was made with, kept at launch (issue 32): blank for older archives' runs.
    "runs": ("inputs",),
    # The sampling design and the study's analysis settings (issue 22): an older archive's
    # study is reconstructed from its coverage (alignment.services.design).
    "study_items": ("jury_bins", "cell_available", "cell_drawn", "inclusion_probability", "phase"),
    "studies": ("alt_test_epsilon", "drift_flag_points", "guide_in_target"),
}

# What an export of an imported study writes differently from the archive it came from
# (table -> fields); every other member is the same, byte for byte, apart from the manifest.
# An import locks the study, leaves every account it creates inactive (staff accounts come
# back as researchers, never admins) and names what it creates by name "... (imported)":
CHANGED_BY_IMPORT = {
    "studies": ("status", "locked_at"),
    PEOPLE: ("active",),
    "projects": ("name",),
    "juries": ("name",),
    "runs": ("name",),
    "benchmark_sets": ("name",),
    "distributions": ("name",),
}
# ...and where the site already held them, usernames get a suffix, public ids are new and
# a shared theme becomes the imported project's own:
RENEWED_WHEN_TAKEN = {
    "themes": ("project",),
    "conversations": ("public_id",),
    "assignments": ("public_id",),
    PEOPLE: ("username",),
}


@dataclass(frozen=True)
class Table:
    name: str
    model: type[models.Model]
    m2m: tuple[str, ...] = ()
    omit: tuple[str, ...] = ()
    # JSON fields holding ids of another table: (field, path inside the value, table).
    json_ids: tuple[tuple[str, str, str], ...] = ()
    # Foreign keys that may name a row outside the archive: written as null then.
    outside: tuple[str, ...] = ()
    fields: list = field(default_factory=list, compare=False)

    def __post_init__(self) -> None:
        concrete = [
            f
            for f in self.model._meta.concrete_fields
            if not f.primary_key and f.name not in self.omit
        ]
        self.fields.extend(concrete)

    @property
    def member(self) -> str:
        return f"data/{self.name}.jsonl"

    def m2m_field(self, name: str) -> models.ManyToManyField:
        return self.model._meta.get_field(name)


TABLES = (
    Table("rubric_versions", RubricVersion),
    Table("distributions", Distribution),
    Table("agent_configs", AgentConfig),
    Table("benchmark_sets", BenchmarkSet),
    Table("entries", BenchmarkEntry),
    Table("runs", Run, json_ids=(("config", "benchmark_set", "benchmark_sets"),)),
    Table("run_agents", RunAgent),
    Table("conversations", Conversation, omit=SANDBOX_FIELDS),
    Table("events", TraceEvent),
    Table("juries", Jury),
    Table("scoring_jobs", ScoringJob, m2m=("rubric_versions", "conversations")),
    Table("judge_scores", JudgeScore),
    Table("rubric_results", RubricResult),
    Table("conversation_results", ConversationResult),
    Table("projects", Project, omit=("retention_days",)),
    Table(
        "studies",
        Study,
        m2m=("scoring_jobs", "rubric_versions"),
        omit=IMPORT_FIELDS + SITE_RETENTION_FIELDS,
    ),
    Table("study_items", StudyItem),
    Table("assignments", Assignment),
    Table("assignment_history", AssignmentHistory),
    Table(
        "calibration_guides",
        CalibrationGuide,
        outside=("after_study",),
        json_ids=(("examples", "[].item", "study_items"),),
    ),
    Table("themes", Theme),
    Table("item_themes", ItemTheme),
)
TABLE_OF_MODEL = {table.model: table.name for table in TABLES}
BY_NAME = {table.name: table for table in TABLES}


def is_person(model_field) -> bool:
    return model_field.is_relation and model_field.related_model._meta.label == (
        settings.AUTH_USER_MODEL
    )


def target_table(model_field) -> str:
    if is_person(model_field):
        return PEOPLE
    return TABLE_OF_MODEL[model_field.related_model]


# --- values to JSON and back -------------------------------------------------------------------


def plain(value):
    """A field value as JSON: datetimes ISO 8601, decimals and UUIDs as text."""
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    return value


def translate_json_ids(table: Table, row: dict, lookup: Callable[[str, int], int]) -> None:
    """Replace ids inside JSON fields in place (export: pk -> archive id; import: back)."""
    for name, path, target in table.json_ids:
        value = row.get(name)
        if path.startswith("[]."):
            key = path[3:]
            for element in value or []:
                if isinstance(element, dict) and element.get(key) is not None:
                    element[key] = lookup(target, element[key])
        elif isinstance(value, dict) and value.get(path) is not None:
            value[path] = lookup(target, value[path])
