"""Write one study into one archive file (alignment.engine.archive format).

What goes in (alignment.services.archive.tables): the study and its project, items,
assignments with their whole history, the calibration guides its annotators saw (the project's
guide in force when it opened and every guide published while it was open) and those written
after it, themes and tags;
the conversations of its items with their traces, sandbox snapshots, benchmark entries, runs,
agents and agent configurations; the scoring jobs it was drawn from and the re-scoring jobs
restricted to it, with their juries, every judge score and merged result for its conversations;
every rubric version any of them points at; and the agreement tables as computed now.

People are pseudonyms (A1.. annotators, S1.. staff, in id order); usernames are written only
when the researcher asks for them.
"""

from __future__ import annotations

import subprocess
import zipfile
import zlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import IO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.models import Role
from alignment.engine import archive as fmt
from alignment.services.archive import readme
from alignment.services.archive.report import report_tables
from alignment.services.archive.tables import (
    BY_NAME,
    PEOPLE,
    SANDBOX_FIELDS,
    SANDBOXES,
    TABLES,
    Keys,
    Table,
    is_person,
    plain,
    target_table,
    translate_json_ids,
)
from alignment.services.rescoring import rescore_jobs
from annotation.models import CalibrationGuide, Study, StudyItem
from annotation.services.exchange import has_synthetic_work
from benchmark.services.manifests import run_manifest_text
from common.synthetic import synthetic_file_name
from jury.models import RubricVersion

Progress = Callable[[int, int], None]
BATCH = 2000


def study_archive_write(
    study: Study,
    target: str | Path | IO[bytes],
    *,
    with_usernames: bool = False,
    progress: Progress | None = None,
) -> fmt.Manifest:
    """Write the archive to a path or a binary file; returns its manifest."""
    selection = study_selection(study)
    people = person_keys(selection)
    counter = _Counter(sum(q.count() for q in selection.values()), progress)
    manifest = fmt.Manifest(
        created_at=timezone.now().isoformat(),
        app_version=app_version(),
        study=_study_summary(study),
        with_usernames=with_usernames,
    )
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        records = [_people_member(archive, people, with_usernames)]
        keys: Keys = {}
        for table in TABLES:
            records.append(
                _table_member(archive, table, selection[table.name], keys, people, counter)
            )
            if table.name == "conversations":
                records.append(_sandbox_member(archive, selection[table.name], keys))
        tables = report_tables(study, conversation_ids=keys["conversations"], people=people)
        tables |= _rubric_texts(selection["rubric_versions"])
        tables |= _run_manifests(selection["runs"], keys["runs"])
        tables[fmt.README] = readme.text(
            with_usernames=with_usernames, synthetic=has_synthetic_work(study)
        )
        records += [_text_member(archive, name, text) for name, text in tables.items()]
        manifest.members = {record.name: record for record in records}
        manifest.counts = {r.name: r.rows for r in records if r.rows is not None}
        with archive.open(fmt.MANIFEST, "w") as stream:
            stream.write(manifest.as_json().encode("utf-8"))
    counter.finish()
    return manifest


def study_tables(study: Study) -> dict[str, str]:
    """The agreement tables as an archive of this study would hold them right now."""
    selection = study_selection(study)
    conversation_ids = _ids(selection["conversations"])
    return report_tables(study, conversation_ids=conversation_ids, people=person_keys(selection))


def study_selection(study: Study) -> dict[str, QuerySet]:
    """Table name -> the rows of that model the archive holds."""
    conversations = list(study.items.values_list("conversation_id", flat=True))
    jobs = set(study.scoring_jobs.values_list("pk", flat=True))
    jobs |= {job.pk for job in rescore_jobs(study)}
    job_rows = _model("scoring_jobs").objects.filter(pk__in=jobs)
    conversation_rows = _model("conversations").objects.filter(pk__in=conversations)
    runs = set(job_rows.values_list("run_id", flat=True))
    runs |= set(conversation_rows.values_list("run_id", flat=True))
    run_rows = _model("runs").objects.filter(pk__in=runs)
    scored = Q(job__in=jobs, conversation__in=conversations)
    judge_scores = _model("judge_scores").objects.filter(scored)
    versions = set(study.rubric_versions.values_list("pk", flat=True))
    versions |= set(
        RubricVersion.jobs.through.objects.filter(scoringjob_id__in=jobs).values_list(
            "rubricversion_id", flat=True
        )
    )
    versions |= set(judge_scores.values_list("rubric_version_id", flat=True).distinct())
    tags = _model("item_themes").objects.filter(item__study=study)
    sets = run_rows.values_list("benchmark_set_id", flat=True)
    selection = {
        "rubric_versions": RubricVersion.objects.filter(pk__in=versions),
        "distributions": _model("distributions").objects.filter(sets__in=sets).distinct(),
        "agent_configs": _model("agent_configs").objects.filter(runagent__run__in=runs).distinct(),
        "benchmark_sets": _model("benchmark_sets").objects.filter(pk__in=sets),
        "entries": _model("entries").objects.filter(conversations__in=conversations).distinct(),
        "runs": run_rows,
        "run_agents": _model("run_agents").objects.filter(run__in=runs),
        "conversations": conversation_rows,
        "events": _model("events").objects.filter(conversation__in=conversations),
        "juries": _model("juries").objects.filter(jobs__in=jobs).distinct(),
        "scoring_jobs": job_rows,
        "judge_scores": judge_scores,
        "rubric_results": _model("rubric_results").objects.filter(scored),
        "conversation_results": _model("conversation_results").objects.filter(scored),
        "projects": _model("projects").objects.filter(pk=study.project_id),
        "studies": Study.objects.filter(pk=study.pk),
        "study_items": study.items.all(),
        "assignments": _model("assignments").objects.filter(item__study=study),
        "assignment_history": _model("assignment_history").objects.filter(
            assignment__item__study=study
        ),
        "calibration_guides": guides_seen(study),
        "themes": _model("themes").objects.filter(tags__in=tags).distinct(),
        "item_themes": tags,
    }
    return {name: rows.order_by("pk") for name, rows in selection.items()}


def guides_seen(study: Study) -> QuerySet:
    """The guides written after the study (drafts too), and the guides of its project its
    annotators saw beside the review screen: the latest published when the study opened, and
    every one published while it was open (annotation.services.guides.published_guide)."""
    guides = CalibrationGuide.objects.filter(project=study.project_id)
    published = guides.filter(published_at__isnull=False)
    in_force = published.filter(published_at__lte=study.created_at).order_by("-published_at", "-pk")
    during = published.filter(published_at__gt=study.created_at)
    if study.locked_at is not None:
        during = during.filter(published_at__lte=study.locked_at)
    seen = [*in_force.values_list("pk", flat=True)[:1], *during.values_list("pk", flat=True)]
    return guides.filter(Q(after_study=study) | Q(pk__in=seen))


def person_keys(selection: dict[str, QuerySet]) -> dict[int, str]:
    """Every user any archived row points at -> pseudonym (A1.. annotators, S1.. others)."""
    users: set[int] = set()
    for table in TABLES:
        for model_field in table.fields:
            if is_person(model_field):
                found = selection[table.name].values_list(model_field.attname, flat=True)
                users |= {u for u in found.distinct() if u is not None}
    roles = dict(get_user_model().objects.filter(pk__in=users).values_list("pk", "role"))
    annotators = [u for u, role in roles.items() if role == Role.ANNOTATOR]
    return fmt.person_keys(annotators, [u for u in roles if u not in annotators])


def app_version() -> str:
    """The package version, and the git commit when the site runs from a checkout."""
    try:
        version = metadata.version("carejury")
    except metadata.PackageNotFoundError:
        version = "unknown"
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"carejury {version}" + (f" (git {commit})" if commit else "")


def archive_file_name(study: Study) -> str:
    """The archive's name; it says when the study holds synthetic clinicians' work."""
    name = f"study-{fmt.file_stem(study.name)}-{timezone.now():%Y%m%d-%H%M%S}.zip"
    return synthetic_file_name(name) if has_synthetic_work(study) else name


# --- members -----------------------------------------------------------------------------------


def _people_member(archive, people: dict[int, str], with_usernames: bool) -> fmt.MemberRecord:
    users = get_user_model().objects.filter(pk__in=people).order_by("pk")
    with fmt.MemberWriter(archive, f"data/{PEOPLE}.jsonl") as writer:
        for user in sorted(users, key=lambda u: (people[u.pk][0], int(people[u.pk][1:]))):
            row = {
                "id": people[user.pk],
                "role": user.role,
                "track": user.track,
                "licensed": user.licensed,
                "active": user.is_active,
            }
            if with_usernames:
                row["username"] = user.username
            writer.row(row)
    return writer.record(counted=True)


def _table_member(archive, table: Table, rows: QuerySet, keys: Keys, people, counter):
    own = keys.setdefault(table.name, {})
    links = _m2m_links(table, rows)
    # Tuples, not model instances: a paper-scale study has tens of thousands of rows.
    values = rows.values_list("pk", *(f.attname for f in table.fields))
    with fmt.MemberWriter(archive, table.member) as writer:
        for pk, *stored in values.iterator(chunk_size=BATCH):
            try:
                row = _row(table, pk, stored, writer.rows + 1, keys, people, links)
            except KeyError:
                # Made while the archive was being written (an open study): it points at a row
                # that did not exist yet when its table was written. The archive of an open
                # study is a cut taken table by table; a locked study's is exact.
                continue
            own[pk] = row["id"]
            writer.row(row)
            counter.step()
    return writer.record(counted=True)


def _row(table: Table, pk: int, stored: list, number: int, keys: Keys, people, links) -> dict:
    row = {"id": number}
    for model_field, value in zip(table.fields, stored, strict=True):
        if model_field.name in table.outside and value not in keys[target_table(model_field)]:
            row[model_field.name] = None
        elif model_field.is_relation:
            row[model_field.name] = _reference(model_field, value, keys, people)
        else:
            row[model_field.name] = plain(value)
    if table.model is CalibrationGuide:
        # Sorted keys: an example this writer describes and the same example read back from
        # the database after an import must be written alike, and PostgreSQL's jsonb keeps
        # keys in an order of its own (shortest first), not the order they were written in.
        examples = _examples_outside(row["examples"], keys["study_items"])
        row["examples"] = [dict(sorted(example.items())) for example in examples]
    translate_json_ids(table, row, lambda target, pk: keys[target][pk])
    for name in table.m2m:
        target = keys[target_table(table.m2m_field(name))]
        row[name] = sorted(target[other] for other in links[name][pk] if other in target)
    return row


def _reference(model_field, value, keys: Keys, people: dict[int, str]):
    if value is None:
        return None
    if is_person(model_field):
        return people[value]
    return keys[target_table(model_field)][value]


def _examples_outside(examples: list, items: dict[int, int]) -> list:
    """A guide's examples from a round the archive does not hold: what the annotators read
    (the round, the case's condition and request, the note) in place of the item."""
    outside = [e["item"] for e in examples if e.get("item") is not None and e["item"] not in items]
    if not outside:
        return examples
    found = StudyItem.objects.filter(pk__in=outside).values_list(
        "pk",
        "study__name",
        "conversation__entry__condition",
        "conversation__entry__task_subcategory",
    )
    described = {
        pk: {"round": name, "condition": condition, "request": request}
        for pk, name, condition, request in found
    }
    return [
        {"item": None, "note": e.get("note", ""), **described.get(e["item"], {})}
        if e.get("item") is not None and e["item"] not in items
        else e
        for e in examples
    ]


def _m2m_links(table: Table, rows: QuerySet) -> dict[str, dict[int, list[int]]]:
    links: dict[str, dict[int, list[int]]] = {}
    for name in table.m2m:
        through = table.m2m_field(name).remote_field.through
        source = table.m2m_field(name).m2m_field_name()
        target = table.m2m_field(name).m2m_reverse_field_name()
        pairs = through.objects.filter(**{f"{source}__in": rows.values("pk")}).values_list(
            f"{source}_id", f"{target}_id"
        )
        by_row = defaultdict(list)
        for row_pk, target_pk in pairs:
            by_row[row_pk].append(target_pk)
        links[name] = by_row
    return links


def _sandbox_member(archive, conversations: QuerySet, keys: Keys) -> fmt.MemberRecord:
    """One row per conversation: {"conversation", "before", "after"}. The snapshots are stored
    as compressed compact JSON (benchmark.fields), which is already the row's JSON text: they
    are only decompressed, never parsed and re-encoded (the biggest part of an archive)."""
    ids = keys["conversations"]
    with fmt.MemberWriter(archive, f"data/{SANDBOXES}.jsonl") as writer:
        for pk, before, after in _raw_snapshots(conversations.model, sorted(ids)):
            writer.write(
                b'{"conversation":%d,"before":%s,"after":%s}\n'
                % (ids[pk], _json_text(before), _json_text(after))
            )
            writer.rows += 1
    return writer.record(counted=True)


def _raw_snapshots(model, pks: list[int]):
    table = connection.ops.quote_name(model._meta.db_table)
    key = connection.ops.quote_name(model._meta.pk.column)
    columns = ", ".join(
        connection.ops.quote_name(model._meta.get_field(name).column) for name in SANDBOX_FIELDS
    )
    for start in range(0, len(pks), 200):
        chunk = pks[start : start + 200]
        marks = ", ".join(["%s"] * len(chunk))
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {key}, {columns} FROM {table} WHERE {key} IN ({marks}) ORDER BY {key}",
                chunk,
            )
            yield from cursor.fetchall()


def _json_text(packed) -> bytes:
    return b"null" if packed is None else zlib.decompress(bytes(packed))


def _rubric_texts(versions: QuerySet) -> dict[str, str]:
    """Each rubric version's YAML as its own file, for a reader (the import uses the JSONL)."""
    return {
        f"rubrics/{v.rubric_id}-v{v.version}.yaml": v.yaml_text
        for v in versions.only("rubric_id", "version", "yaml_text")
    }


def _run_manifests(runs: QuerySet, ids: dict[int, int]) -> dict[str, str]:
    """Each run's manifest as its own file, named by the run's id in this archive."""
    return {
        f"runs/run-{ids[run.pk]}-manifest.json": run_manifest_text(run)
        for run in runs.select_related("benchmark_set__distribution")
    }


def _text_member(archive, name: str, text: str) -> fmt.MemberRecord:
    with fmt.MemberWriter(archive, name) as writer:
        writer.write(text.encode("utf-8"))
    return writer.record(counted=False)


def _study_summary(study: Study) -> dict:
    return {
        "name": study.name,
        "project": study.project.name,
        "kind": study.kind,
        "round": study.round_number,
        "status": study.status,
        "settings": {
            "sample_size": study.sample_size,
            "overlap_clinical": study.overlap_clinical,
            "overlap_operational": study.overlap_operational,
            "seed": study.seed,
            "include_infeasible": study.include_infeasible,
            "reservation_minutes": study.reservation_minutes,
        },
    }


def _ids(rows: QuerySet) -> dict[int, int]:
    return {pk: n for n, pk in enumerate(rows.values_list("pk", flat=True), start=1)}


def _model(table: str):
    return BY_NAME[table].model


@dataclass
class _Counter:
    total: int
    progress: Progress | None
    done: int = 0

    def step(self) -> None:
        self.done += 1
        if self.progress is not None and self.done % 500 == 0:
            self.progress(self.done, self.total)

    def finish(self) -> None:
        if self.progress is not None:
            self.progress(self.total, self.total)
