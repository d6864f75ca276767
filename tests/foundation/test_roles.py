"""The role decides access; Django's staff and superuser flags follow it."""

import pytest

from accounts.models import Role, Track, User
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def test_demoting_an_admin_removes_their_superuser_access():
    person = make_user("former-admin", Role.ADMIN)
    assert person.is_superuser and person.is_staff
    person.role, person.track = Role.ANNOTATOR, Track.CLINICAL
    person.save()
    person.refresh_from_db()
    assert not person.is_superuser and not person.is_staff
    assert person.effective_role == Role.ANNOTATOR


def test_createsuperuser_makes_an_admin():
    person = User.objects.create_superuser("root", "root@example.org", "pw-123456789")
    assert person.role == Role.ADMIN and person.has_role(Role.ADMIN)


def test_a_researcher_is_never_a_django_superuser():
    person = make_user("rita2", Role.RESEARCHER)
    person.is_superuser = True
    person.save()
    person.refresh_from_db()
    assert not person.is_superuser
