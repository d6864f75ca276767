"""The People page lists the site's people; the accounts imports created (pseudonymous
records of who did imported work) are folded apart with their count, whichever import made
them."""

import pytest
from django.urls import reverse

from accounts.models import AccountOrigin, Role, Track, User
from tests.conftest import make_user
from tests.support.regions import region

pytestmark = pytest.mark.django_db


def record(username: str, origin: str = AccountOrigin.SITE, **fields) -> User:
    """An account as the imports make them: inactive, no usable password."""
    user = User(username=username, role=Role.ANNOTATOR, track=Track.CLINICAL, is_active=False,
                origin=origin, **fields)  # fmt: skip
    user.set_unusable_password()
    user.save()
    return user


def test_imported_accounts_are_folded_apart_with_their_count(admin_client_):
    make_user("carla", Role.ANNOTATOR, Track.CLINICAL)
    for n in range(1, 4):
        record(f"A{n}", AccountOrigin.STUDY_ARCHIVE)
    record("paper-doc", AccountOrigin.ANNOTATION_FILE)
    body = admin_client_.get(reverse("people")).content.decode()
    people = region(body, "people").text
    assert "carla" in people and "adam" in people
    assert "A1" not in people and "paper-doc" not in people
    folded = region(body, "imported-people")
    assert folded.tag == "details" and "open" not in folded.attrs
    assert folded.text.startswith("Imported accounts (4)")
    assert "A3 Annotator Clinical yes a study archive" not in folded.text  # licensed: no
    assert "A3 Annotator Clinical no a study archive" in folded.text
    assert "paper-doc Annotator Clinical no an annotation file" in folded.text


def test_a_site_without_imported_accounts_shows_no_folded_section(admin_client_):
    assert 'id="imported-people"' not in admin_client_.get(reverse("people")).content.decode()
