"""Django's full password rules apply wherever a password is set: like the username or name,
shorter than 12, common, all digits, or easy to guess by zxcvbn's estimate is refused; the
demo's people and the tests' passphrase follow the rules."""

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.urls import reverse

from accounts.models import Role, User
from accounts.services import DEMO_PASSWORD, demo_people_ensure
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("password", "reason"),
    [
        ("rfranklin.2026", "too similar to the username"),
        ("short-pw1", "too short"),
        ("password1234", "too common"),
        ("839201746512", "entirely numeric"),
        ("aaaaaaaaaaaa", "too guessable"),
        ("qwertyuiop12", "too guessable"),
    ],
)
def test_a_weak_password_is_refused_with_the_reason(password, reason):
    person = User(username="rfranklin", first_name="Rosalind", last_name="Franklin")
    with pytest.raises(ValidationError) as refused:
        validate_password(password, person)
    assert reason in " ".join(refused.value.messages)


def test_the_admin_cannot_give_a_new_person_a_weak_password(client, admin_user):
    client.force_login(admin_user)
    response = client.post(
        reverse("admin:accounts_user_add"),
        {
            "username": "newcomer", "password1": "password1234", "password2": "password1234",
            "usable_password": "true", "role": Role.RESEARCHER,
        },
    )  # fmt: skip
    assert response.status_code == 200
    assert "This password is too common." in response.content.decode()
    assert not User.objects.filter(username="newcomer").exists()


def test_the_demo_people_and_the_tests_passphrase_follow_the_rules(admin_user):
    rows = demo_people_ensure()  # validates each password against its person
    assert {password for _, password, _ in rows} == {DEMO_PASSWORD}
    validate_password(PASSWORD, admin_user)
    for user in User.objects.filter(username__in=[row[0] for row in rows]):
        assert user.check_password(DEMO_PASSWORD)


def test_the_admin_and_the_people_page_refuse_a_long_but_guessable_password(client, admin_user):
    client.force_login(admin_user)
    admin_form = {
        "username": "newcomer", "password1": "aaaaaaaaaaaa", "password2": "aaaaaaaaaaaa",
        "usable_password": "true", "role": Role.RESEARCHER,
    }  # fmt: skip
    people_form = {"username": "newcomer", "is_active": "on", "role": Role.RESEARCHER,
                   "password": "aaaaaaaaaaaa"}  # fmt: skip
    for url, form in ((reverse("admin:accounts_user_add"), admin_form),
                      (reverse("person_new"), people_form)):  # fmt: skip
        response = client.post(url, form)
        assert response.status_code == 200
        assert "too guessable" in response.content.decode()
    assert not User.objects.filter(username="newcomer").exists()
