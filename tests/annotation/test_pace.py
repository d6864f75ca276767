"""Who is behind (annotation.engine.pace): a target from the quota or a fair share, and an even
pace towards the deadline. Pure: no database."""

from datetime import UTC, datetime, timedelta

from annotation.engine.pace import (
    BEHIND,
    DONE,
    NO_DEADLINE,
    ON_TRACK,
    OVERDUE,
    annotator_target,
    fair_share,
    pace,
)

START = datetime(2026, 3, 1, tzinfo=UTC)
DEADLINE = START + timedelta(days=10)


def test_without_a_quota_the_target_is_a_fair_share_of_the_tracks_seats():
    assert fair_share(seats=100 * 2, people=3) == 67  # rounded up: every seat must be filled
    assert annotator_target(quota=None, seats=200, people=3, items=100) == 67
    assert annotator_target(quota=30, seats=200, people=3, items=100) == 30
    assert annotator_target(quota=500, seats=200, people=3, items=100) == 100  # one per item


def test_halfway_to_the_deadline_half_the_target_is_expected():
    now = START + timedelta(days=5)
    assert pace(target=40, submitted=19, start=START, deadline=DEADLINE, now=now).status == BEHIND
    behind = pace(target=40, submitted=12, start=START, deadline=DEADLINE, now=now)
    assert (behind.expected, behind.behind_by) == (20, 8)
    on = pace(target=40, submitted=20, start=START, deadline=DEADLINE, now=now)
    assert on.status == ON_TRACK and on.behind_by == 0


def test_after_the_deadline_whatever_is_left_is_overdue():
    late = pace(target=40, submitted=31, start=START, deadline=DEADLINE, now=DEADLINE)
    assert late.status == OVERDUE and late.behind_by == 9


def test_reaching_the_target_is_done_whatever_the_date_and_no_deadline_judges_nobody():
    after = DEADLINE + timedelta(days=3)
    assert pace(target=10, submitted=10, start=START, deadline=DEADLINE, now=after).status == DONE
    free = pace(target=10, submitted=0, start=START, deadline=None, now=after)
    assert free.status == NO_DEADLINE and free.behind_by == 0 and free.percent == 0


def test_someone_enrolled_late_is_measured_from_the_day_they_could_start():
    enrolled = START + timedelta(days=8)
    now = START + timedelta(days=9)  # halfway through their own two days
    row = pace(target=10, submitted=5, start=enrolled, deadline=DEADLINE, now=now)
    assert row.expected == 5 and row.status == ON_TRACK
