"""The People page lists the site's people; the accounts imports created (pseudonymous
records of who did imported work) are folded apart with their count, whichever import made
them."""

import pytest
from django.urls import reverse

from accounts.models import AccountOrigin, Role, Track, User
from tests.annotation.conftest import (  # noqa: F401 - fixtures
    clinicians,
    scored_job,
    study,
    world,
    world_job,
)
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


# --- managing accounts without the Django admin ---------------------------------------------

STRONG = "a-long-enough-passphrase-41"


def test_an_admin_adds_a_person_and_the_trail_records_it(admin_client_, admin_user):
    from audit.models import AuditEvent

    response = admin_client_.post(reverse("person_new"), {
        "username": "dr-lee", "first_name": "Ana", "last_name": "Lee", "email": "lee@example.org",
        "role": Role.ANNOTATOR, "track": Track.CLINICAL, "licensed": "on", "is_active": "on",
        "password": STRONG,
    })  # fmt: skip
    assert response.status_code == 302
    person = User.objects.get(username="dr-lee")
    assert person.check_password(STRONG) and person.licensed and not person.senior
    event = AuditEvent.objects.get(action="person.created")
    assert event.actor == admin_user and event.after["track"] == Track.CLINICAL
    assert event.after["password"] == "set" and STRONG not in str(event.after)
    assert "dr-lee" in region(admin_client_.get(reverse("people")).content.decode(), "people").text


def test_the_rules_of_an_account_are_said_under_their_fields(admin_client_):
    cases = [
        ({"role": Role.ANNOTATOR, "track": ""}, "needs a track"),
        ({"role": Role.RESEARCHER, "track": "", "senior": "on"}, ""),  # cleared for staff
        ({"role": Role.ANNOTATOR, "track": Track.CLINICAL, "senior": "on"}, "licensed annotator"),
        ({"role": Role.ANNOTATOR, "track": Track.CLINICAL, "password": "short"}, "too short"),
    ]
    for number, (fields, error) in enumerate(cases):
        data = {"username": f"case-{number}", "is_active": "on", **fields}
        response = admin_client_.post(reverse("person_new"), data)
        if error:
            assert response.status_code == 200 and error in response.content.decode(), fields
        else:
            assert response.status_code == 302
            assert not User.objects.get(username=f"case-{number}").senior


def test_changing_a_role_track_or_activation_is_audited_with_before_and_after(
    admin_client_, admin_user
):
    from audit.models import AuditEvent

    person = make_user("carla", Role.ANNOTATOR, Track.CLINICAL)
    data = {"role": Role.ANNOTATOR, "track": Track.OPERATIONAL, "licensed": "on", "senior": "on",
            "is_active": "on"}  # fmt: skip
    admin_client_.post(reverse("person_edit", args=[person.pk]), data)
    person.refresh_from_db()
    assert person.track == Track.OPERATIONAL and person.senior
    event = AuditEvent.objects.get(action="person.changed")
    assert event.before == {"track": Track.CLINICAL, "senior": False}
    assert event.after == {"track": Track.OPERATIONAL, "senior": True}


def test_deactivating_an_annotator_gives_back_the_seats_they_hold(
    admin_client_,
    study,  # noqa: F811
    clinicians,  # noqa: F811
):
    from annotation.models import AssignmentStatus
    from annotation.services import queue

    person = clinicians[0]
    held = queue.next_assignment(study=study, annotator=person)
    data = {"role": Role.ANNOTATOR, "track": Track.CLINICAL, "licensed": "on"}  # not active
    admin_client_.post(reverse("person_edit", args=[person.pk]), data)
    person.refresh_from_db()
    held.refresh_from_db()
    assert not person.is_active
    assert held.status == AssignmentStatus.RELEASED and held.slot is None


def test_an_admin_cannot_lock_themselves_out(admin_client_, admin_user):
    data = {"role": Role.RESEARCHER, "is_active": "on"}
    response = admin_client_.post(reverse("person_edit", args=[admin_user.pk]), data)
    assert "give up your own admin role" in response.content.decode()
    admin_user.refresh_from_db()
    assert admin_user.role == Role.ADMIN


def test_imported_accounts_are_not_changed_here(admin_client_):
    imported = record("A7", AccountOrigin.STUDY_ARCHIVE)
    assert admin_client_.get(reverse("person_edit", args=[imported.pk])).status_code == 404


def test_deactivating_in_the_django_admin_gives_back_the_seats_too(
    admin_user,
    study,  # noqa: F811
    clinicians,  # noqa: F811
):
    from django.contrib.admin import site
    from django.test import RequestFactory

    from annotation.models import AssignmentStatus
    from annotation.services import queue

    person = clinicians[0]
    held = queue.next_assignment(study=study, annotator=person)
    person.is_active = False
    request = RequestFactory().post("/admin/")
    request.user = admin_user
    site._registry[User].save_model(request, person, form=None, change=True)
    held.refresh_from_db()
    assert held.status == AssignmentStatus.RELEASED and held.slot is None
