"""Opening a study's conversations, reports and annotations leaves a read record (who, what,
when) in the chained audit trail; htmx refreshes, refusals and other pages leave none."""

import csv
import io

import pytest
from django.urls import reverse

from audit.models import AuditEvent
from audit.reads import READ_PAGES
from audit.services import audit_chain_break
from tests.annotation.conftest import new_study
from tests.jury.services.builders import scored_job, world, world_job  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def study_(scored_job):  # noqa: F811 - the imported fixture
    return new_study(scored_job)


def reads():
    return list(AuditEvent.objects.filter(action__startswith="read.").order_by("pk"))


def test_opening_a_study_report_is_recorded_with_the_reader(researcher_client, researcher, study_):
    response = researcher_client.get(reverse("alignment:report", args=[study_.pk]))
    assert response.status_code == 200
    [read] = reads()
    assert (read.actor, read.action) == (researcher, "read.report")
    assert (read.object_type, read.object_id) == ("annotation.Study", str(study_.pk))
    assert audit_chain_break() is None


def test_opening_a_conversation_is_recorded(researcher_client, study_):
    conversation = study_.items.first().conversation
    researcher_client.get(reverse("benchmark:conversation", args=[conversation.public_id]))
    [read] = reads()
    assert read.action == "read.conversation"
    assert read.object_id == str(conversation.public_id)


def test_an_htmx_refresh_is_not_a_new_read(researcher_client, study_):
    url = reverse("alignment:report", args=[study_.pk])
    researcher_client.get(url, headers={"HX-Request": "true"})
    assert reads() == []


def test_a_refused_page_leaves_no_read(client, annotator, study_):
    client.force_login(annotator)
    response = client.get(reverse("alignment:report", args=[study_.pk]))
    assert response.status_code in (302, 403, 404)
    assert reads() == []


def test_pages_that_show_no_study_data_leave_no_read(researcher_client):
    researcher_client.get(reverse("home"))
    assert reads() == []


def test_every_read_page_names_a_url_argument_of_its_pattern():
    from django.urls import get_resolver

    patterns = {}
    for name in READ_PAGES:
        namespace, _, url_name = name.rpartition(":")
        resolver = get_resolver().namespace_dict[namespace][1]
        possibilities = resolver.reverse_dict.getlist(url_name)
        assert possibilities, f"{name} is not a URL name"
        patterns[name] = {param for p in possibilities for _, params in p[0] for param in params}
    for name, page in READ_PAGES.items():
        assert page.argument in patterns[name], name


def test_admins_filter_reads_and_export_them_as_csv(client, researcher, admin_user, study_):
    client.force_login(researcher)
    client.get(reverse("alignment:report", args=[study_.pk]))
    admin_client_ = client
    admin_client_.force_login(admin_user)
    changelist = reverse("admin:audit_auditevent_changelist")
    listed = admin_client_.get(changelist, {"kind": "read"})
    assert b"read.report" in listed.content
    ids = [str(event.pk) for event in reads()]
    response = admin_client_.post(
        changelist + "?kind=read", {"action": "export_csv", "_selected_action": ids}
    )
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["action"] for row in rows] == ["read.report"]
    assert len(rows[0]["hash"]) == 64
