"""The roster of a case and repetition, written once and shared by every agent's conversation
of it (models.CaseRoster).

The agents of a run meet each case at the same moment (conversations are dispatched case by
case), so without a claim every one of them would pay the roster writer for the same request,
and with the response cache off each would face a different practice. Here the first
conversation to need a case's roster claims its row and writes it; the others poll the row
until it is written, or until the claim is no longer held (its conversation failed, was
cancelled, or its worker stopped reporting) and they may take it over.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from benchmark.engine.sandbox.roster import generate_roster
from benchmark.models import CaseRoster, Conversation, ConversationStatus
from jobs.services.leases import lease

logger = logging.getLogger(__name__)

# How often a conversation waiting for another's roster looks again: soon at first (a roster
# takes a few seconds to write), then at most every few seconds.
FIRST_POLL_SECONDS = 0.2
LAST_POLL_SECONDS = 2.0
CLAIMER_FIELDS = ("claimed_by__status", "claimed_by__attempts", "claimed_by__heartbeat_at")


class RosterWaitCancelled(Exception):
    """The run was cancelled while the conversation waited for its case's roster."""


def case_roster(
    conversation: Conversation, client, *, should_stop: Callable[[], bool]
) -> dict[str, Any]:
    """The roster of `conversation`'s case and repetition: the one already written, or one
    written now through `client` (raising what generate_roster raises), or, while another
    conversation writes it, that one once it is written."""
    rows = CaseRoster.objects.filter(run_id=conversation.run_id, seed=conversation.seed)
    # The claimer's liveness only: its whole row would bring its two sandbox snapshots, to be
    # decompressed and parsed by every conversation of the case.
    looks = rows.select_related("claimed_by").only("roster", "claimed_attempt", *CLAIMER_FIELDS)
    pause = FIRST_POLL_SECONDS
    while True:
        row = looks.first() or _created(conversation) or looks.first()
        if row is None:  # made by another and gone at once: the run was deleted under it
            raise RuntimeError("the case's roster row disappeared as it was made")
        if row.roster is not None:
            return row.roster
        if _mine(row, conversation) or (not _held(row) and _taken_over(row, conversation)):
            return _write(row, conversation, client)
        if should_stop():
            raise RosterWaitCancelled("the run was cancelled while waiting for the case's roster")
        _pause(pause)
        pause = min(pause * 2, LAST_POLL_SECONDS)


def _pause(seconds: float) -> None:
    time.sleep(seconds)


def _claim_of(conversation: Conversation) -> dict[str, Any]:
    return {"claimed_by": conversation, "claimed_attempt": conversation.attempts}


def _mine(row: CaseRoster, conversation: Conversation) -> bool:
    return row.claimed_by_id == conversation.pk and row.claimed_attempt == conversation.attempts


def _held(row: CaseRoster) -> bool:
    """Whether the row's claimer, as read with the row, is still at it: running the attempt
    that claimed, and reporting."""
    claimer = row.claimed_by
    return (
        claimer is not None
        and claimer.status == ConversationStatus.RUNNING
        and claimer.attempts == row.claimed_attempt
        and claimer.heartbeat_at is not None
        and claimer.heartbeat_at >= timezone.now() - lease()
    )


def _created(conversation: Conversation) -> CaseRoster | None:
    """A new row for the case, claimed for `conversation`; None if another made it first."""
    try:
        with transaction.atomic():
            return CaseRoster.objects.create(
                run_id=conversation.run_id, seed=conversation.seed, **_claim_of(conversation)
            )
    except IntegrityError:
        return None


def _taken_over(row: CaseRoster, conversation: Conversation) -> bool:
    """Whether `conversation` took over the lapsed claim it read on `row`: only while the row
    still holds that very claim and no roster (compared column by column, with no join, so
    that of two conversations taking it at once on PostgreSQL the second finds it changed)."""
    unchanged = CaseRoster.objects.filter(
        pk=row.pk,
        roster__isnull=True,
        claimed_by_id=row.claimed_by_id,
        claimed_attempt=row.claimed_attempt,
    )
    return bool(unchanged.update(**_claim_of(conversation)))


def _write(row: CaseRoster, conversation: Conversation, client) -> dict[str, Any]:
    run = conversation.run
    try:
        roster, _ = generate_roster(
            client, conversation.entry.profile, model=run.roster_model, seed=conversation.seed
        )
    except BaseException:
        # Let the next conversation of the case try at once instead of waiting for this
        # one's status to change.
        mine = CaseRoster.objects.filter(pk=row.pk, roster__isnull=True, **_claim_of(conversation))
        mine.update(claimed_by=None)
        raise
    # Whoever writes first wins: had this claim lapsed and another conversation written the
    # roster meanwhile, every conversation of the case still meets that one.
    if CaseRoster.objects.filter(pk=row.pk, roster__isnull=True).update(roster=roster):
        return roster
    logger.warning("conversation %s meets the roster another wrote", conversation.public_id)
    return CaseRoster.objects.values_list("roster", flat=True).get(pk=row.pk)
