"""The knowledge base in the database: the shipped corpus, uploads and retrieval.

The shipped corpus (rubric_lab/data/knowledge) is loaded the first time it is needed and
refreshed when a shipped file changes; uploads add passages and never replace one. A rejected
upload names every bad row and saves nothing.
"""

from __future__ import annotations

import threading
from functools import lru_cache

from django.db import transaction
from django.db.models import Count, Max

from rubric_lab.engine.knowledge import CorpusError, Passage, load_shipped_corpus, parse_upload
from rubric_lab.engine.retrieval import Hit, Retriever, build_retriever
from rubric_lab.models import KnowledgePassage, KnowledgeUpload, PassageOrigin

# kind -> (state of the base it was built on, retriever)
_retrievers: dict[str, tuple[tuple, Retriever]] = {}
_retrievers_lock = threading.Lock()


@lru_cache(maxsize=1)
def shipped_corpus() -> tuple[Passage, ...]:
    """The shipped files, read once per process: they change only with a new release."""
    return tuple(load_shipped_corpus())


def knowledge_ensure_shipped() -> int:
    """Store shipped passages that are missing or changed; returns how many were written."""
    shipped = KnowledgePassage.objects.filter(origin=PassageOrigin.SHIPPED)
    if shipped.filter(passage_id__in=_shipped_ids()).count() == len(shipped_corpus()) and (
        _stored_signature() == _shipped_signature()
    ):
        return 0
    stored = {
        row.passage_id: row for row in KnowledgePassage.objects.filter(origin=PassageOrigin.SHIPPED)
    }
    missing = [p for p in shipped_corpus() if p.passage_id not in stored]
    # Worker threads (and processes) meeting an empty base at once all insert the corpus:
    # a passage another one stored in the meantime is left as it is, not an error.
    KnowledgePassage.objects.bulk_create(
        [KnowledgePassage(origin=PassageOrigin.SHIPPED, **p.as_dict()) for p in missing],
        ignore_conflicts=True,
    )
    changed = [
        (stored[p.passage_id], p.as_dict())
        for p in shipped_corpus()
        if p.passage_id in stored and _fields_of(stored[p.passage_id]) != p.as_dict()
    ]
    for row, fields in changed:
        KnowledgePassage.objects.filter(pk=row.pk).update(**fields)
    return len(missing) + len(changed)


@transaction.atomic
def knowledge_upload(*, filename: str, content: bytes, user=None) -> KnowledgeUpload:
    """Validate every row, refuse ids already in the base, then save all or nothing."""
    passages = parse_upload(filename, content)
    knowledge_ensure_shipped()  # so an upload can never take a shipped passage's id
    taken = set(
        KnowledgePassage.objects.filter(
            passage_id__in=[p.passage_id for p in passages]
        ).values_list("passage_id", flat=True)
    )
    if taken:
        raise CorpusError(
            [
                f"row {number}: passage_id {passage.passage_id!r} is already in the knowledge base"
                for number, passage in enumerate(passages, 1)
                if passage.passage_id in taken
            ]
        )
    upload = KnowledgeUpload.objects.create(
        filename=filename[:200], passage_count=len(passages), created_by=user
    )
    KnowledgePassage.objects.bulk_create(
        KnowledgePassage(origin=PassageOrigin.UPLOADED, upload=upload, **passage.as_dict())
        for passage in passages
    )
    return upload


def knowledge_passages() -> list[Passage]:
    knowledge_ensure_shipped()
    return [_passage_of(row) for row in KnowledgePassage.objects.order_by("pk")]


def retriever_for(kind: str) -> Retriever:
    """A retriever over the current base, rebuilt only when passages were added or changed."""
    knowledge_ensure_shipped()
    aggregate = KnowledgePassage.objects.aggregate(count=Count("pk"), last=Max("pk"))
    state = (aggregate["count"], aggregate["last"])
    with _retrievers_lock:
        built = _retrievers.get(kind)
        if built is None or built[0] != state:
            built = _retrievers[kind] = (state, build_retriever(kind, knowledge_passages()))
        return built[1]


def knowledge_search(query: str, *, kind: str = "bm25", k: int = 5) -> list[Hit]:
    if not query.strip():
        return []
    return retriever_for(kind).search(query, k)


def _shipped_ids() -> list[str]:
    return [passage.passage_id for passage in shipped_corpus()]


def _shipped_signature() -> set[tuple[str, str]]:
    return {(passage.passage_id, passage.source_version) for passage in shipped_corpus()}


def _stored_signature() -> set[tuple[str, str]]:
    rows = KnowledgePassage.objects.filter(origin=PassageOrigin.SHIPPED)
    return set(rows.values_list("passage_id", "source_version"))


def _fields_of(row: KnowledgePassage) -> dict:
    return _passage_of(row).as_dict()


def _passage_of(row: KnowledgePassage) -> Passage:
    return Passage(
        passage_id=row.passage_id,
        topic=row.topic,
        title=row.title,
        text=row.text,
        source=row.source,
        source_version=row.source_version,
        tags=tuple(row.tags or ()),
    )
