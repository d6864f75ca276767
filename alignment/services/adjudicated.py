"""The adjudicated scores of a study as the engine's long table (alignment.engine.adjudicated).

`item` is the conversation id, as in alignment.services.frames; only finished adjudications
count (one waiting for a senior clinician changes nothing)."""

from __future__ import annotations

import pandas as pd

from alignment.engine.adjudicated import ADJUDICATED_COLUMNS
from alignment.engine.frames import ITEM, SCORE
from annotation.models import Adjudication, Study


def study_adjudicated(study: Study, items) -> pd.DataFrame:
    """items: the conversations to read, ids or a subquery (StudyFrames.conversations)."""
    rows = Adjudication.objects.filter(
        item__study=study, item__conversation_id__in=items, adjudicated_at__isnull=False
    ).values_list("item__conversation_id", "rubric_id", "score")
    frame = pd.DataFrame(list(rows), columns=ADJUDICATED_COLUMNS)
    return frame.astype({ITEM: "int64", SCORE: "int64"})


def adjudications_by_key(study: Study) -> dict[tuple[int, str], Adjudication]:
    """(conversation id, rubric id) -> the adjudication, sent or done, for the report's rows."""
    return {
        (a.item.conversation_id, a.rubric_id): a
        for a in Adjudication.objects.filter(item__study=study).select_related(
            "item", "adjudicator"
        )
    }
