"""The teardown of transactional tests (tests/support/fast_flush.py): every row a test wrote
goes, whatever the order of the foreign keys, and the rows migrations made stay."""

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.test import TransactionTestCase
from django.utils import timezone

from accounts.models import Role
from annotation.models import Project, ProjectMember
from tests.conftest import make_user
from tests.support import fast_flush


def test_every_row_goes_and_the_rows_migrations_made_stay(transactional_db):
    kept_before = fast_flush.kept_rows(connection)
    # A member points at its project and, with PROTECT, at two users: deleting a user first
    # would break a foreign key at once unless the checks wait for the commit.
    annie = make_user("annie", Role.ANNOTATOR)
    rita = make_user("rita", Role.RESEARCHER)
    project = Project.objects.create(name="Ward study")
    ProjectMember.objects.create(
        project=project, annotator=annie, enrolled_by=rita, enrolled_at=timezone.now()
    )
    assert {"accounts_user", "annotation_project", "annotation_projectmember"} <= set(
        fast_flush.tables_with_rows(connection)
    )

    fast_flush.empty_database(connection)

    assert fast_flush.tables_with_rows(connection) == []
    assert fast_flush.kept_rows(connection) == kept_before
    assert Permission.objects.exists() and ContentType.objects.exists()


def test_a_test_that_adds_a_permission_is_named_at_teardown(transactional_db):
    assert fast_flush.changed_kept_tables(connection) == []
    extra = Permission.objects.create(
        name="Can hold", codename="hold", content_type=ContentType.objects.first()
    )
    try:
        assert fast_flush.changed_kept_tables(connection) == ["auth_permission"]
    finally:
        extra.delete()
    assert fast_flush.changed_kept_tables(connection) == []


def test_a_teardown_after_such_a_test_puts_the_rows_back_and_fails(transactional_db):
    Permission.objects.create(
        name="Can hold", codename="hold", content_type=ContentType.objects.first()
    )
    case = TransactionTestCase(methodName="__init__")
    with pytest.raises(AssertionError, match=r"\(auth_permission\)"):
        case._fixture_teardown()
    assert fast_flush.changed_kept_tables(connection) == []
    assert not Permission.objects.filter(codename="hold").exists()
