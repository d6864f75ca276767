"""People and enrolment as JSON: the site's accounts (admins, as on the People page), the
projects, who is enrolled in each (researchers, as on a project's Members page), enrolling,
quotas and withdrawing. Enrolment is per project: a study's annotators are those enrolled in
its project. Every write calls the page's form and service, so it is checked, audited and told
to the annotator exactly as on the page."""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Prefetch, Q
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Schema, Status
from ninja.pagination import paginate
from pydantic import Field

from accounts.models import AccountOrigin, Role, Track, User
from annotation.forms import studyops as forms
from annotation.models import Project, ProjectMember
from annotation.services import enrolment
from api.auth import admins
from api.filters import known_query
from api.forms import form_checked
from api.pagination import RowsCursorPagination
from api.problems import Refused, responses

router = Router(tags=["people"])


# --- shapes --------------------------------------------------------------------------------------


class ProjectRef(Schema):
    id: int
    name: str


class PersonRef(Schema):
    id: int
    username: str
    full_name: str
    track: Track | None = Field(description="Annotators only: the rubrics they score")
    licensed: bool = Field(description="Holds a clinical licence: their work takes a seat")
    senior: bool = Field(description="Senior clinician: may adjudicate")


class PersonOut(PersonRef):
    role: Role
    active: bool
    origin: AccountOrigin = Field(description="site, or the import that created the account")
    projects: list[ProjectRef] = Field(description="Projects the person is enrolled in now")
    date_joined: datetime
    last_login: datetime | None


class MemberOut(Schema):
    id: int
    project: ProjectRef
    person: PersonRef
    enrolled: bool = Field(description="False once withdrawn (the row stays, as a record)")
    quota: int | None = Field(description="Items of each study of the project; null: no limit")
    enrolled_at: datetime
    enrolled_by: str | None = Field(description="Who enrolled them (null: their sign-on)")
    withdrawn_at: datetime | None


class PersonDetailOut(PersonOut):
    memberships: list[MemberOut] = Field(description="Every enrolment, withdrawn ones too")


class ProjectOut(Schema):
    id: int
    name: str
    studies: list[int]
    enrolled: int = Field(description="How many annotators are enrolled now")
    created_at: datetime


class EnrolIn(Schema):
    people: list[int] = Field(description="Annotator ids (`GET /projects/{id}/candidates`)")
    quota: int | None = Field(None, description="Items of each study; null: no limit")


class MemberQuotaIn(Schema):
    quota: int | None = Field(description="Items of each study; null: no limit")


class WithdrawnOut(Schema):
    member: MemberOut
    released: int = Field(description="Reservations given back (submitted work stays)")


class PeopleFilters(Schema):
    role: Role | None = None
    track: Track | None = None
    origin: AccountOrigin | None = Field(None, description="site: people of this site")
    active: bool | None = None


class MemberFilters(Schema):
    enrolled: bool | None = Field(None, description="true: enrolled now; false: withdrawn")


# --- rows ----------------------------------------------------------------------------------------


def person_ref(person: User) -> dict:
    return {
        "id": person.pk,
        "username": person.username,
        "full_name": person.get_full_name(),
        "track": person.track or None,
        "licensed": person.licensed,
        "senior": person.senior,
    }


def person_out(person: User) -> dict:
    """`person.enrolled_in`: their active memberships, prefetched (see `_people`)."""
    projects = [{"id": m.project_id, "name": m.project.name} for m in person.enrolled_in]
    return person_ref(person) | {
        "role": person.role,
        "active": person.is_active,
        "origin": person.origin,
        "projects": projects,
        "date_joined": person.date_joined,
        "last_login": person.last_login,
    }


def people_out(page: list[User]) -> list[dict]:
    return [person_out(person) for person in page]


def member_out(member: ProjectMember) -> dict:
    return {
        "id": member.pk,
        "project": {"id": member.project_id, "name": member.project.name},
        "person": person_ref(member.annotator),
        "enrolled": member.is_active,
        "quota": member.quota,
        "enrolled_at": member.enrolled_at,
        "enrolled_by": member.enrolled_by.username if member.enrolled_by else None,
        "withdrawn_at": member.withdrawn_at,
    }


def members_out(page: list[ProjectMember]) -> list[dict]:
    return [member_out(member) for member in page]


def project_out(project: Project) -> dict:
    return {
        "id": project.pk,
        "name": project.name,
        "studies": [study.pk for study in project.studies.all()],
        "enrolled": project.enrolled_count,
        "created_at": project.created_at,
    }


def projects_out(page: list[Project]) -> list[dict]:
    return [project_out(project) for project in page]


def _people():
    """Accounts with their active memberships read in one more query for any page."""
    active = ProjectMember.objects.active().select_related("project")
    return User.objects.prefetch_related(Prefetch("memberships", active, to_attr="enrolled_in"))


def _members():
    return ProjectMember.objects.select_related("project", "annotator", "enrolled_by")


def _member(member_id: int) -> ProjectMember:
    return get_object_or_404(_members(), pk=member_id)


# --- people (admins, as the People page) ----------------------------------------------------


@router.get(
    "/people", response=responses({200: list[PersonOut]}, 400), url_name="people", auth=admins()
)
@paginate(RowsCursorPagination, out=people_out)
@known_query(PeopleFilters)
def person_list(request: HttpRequest, filters: Query[PeopleFilters]):
    """Every account with its role, track, licence and senior flags and the projects it is
    enrolled in (admins); `role`, `track`, `origin` and `active` narrow the list."""
    found = _people()
    for name in ("role", "track", "origin"):
        if getattr(filters, name):
            found = found.filter(**{name: getattr(filters, name)})
    if filters.active is not None:
        found = found.filter(is_active=filters.active)
    return found


@router.get(
    "/people/{person_id}",
    response=responses({200: PersonDetailOut}, 404),
    url_name="person",
    auth=admins(),
)
def person_detail(request: HttpRequest, person_id: int):
    """One account and every enrolment it had (admins)."""
    person = get_object_or_404(_people(), pk=person_id)
    memberships = _members().filter(annotator=person).order_by("enrolled_at", "pk")
    return person_out(person) | {"memberships": members_out(list(memberships))}


# --- projects and their members (researchers, as a project's Members page) ----------------


@router.get("/projects", response=responses({200: list[ProjectOut]}, 400), url_name="projects")
@paginate(RowsCursorPagination, out=projects_out)
@known_query()
def project_list(request: HttpRequest):
    """Projects with their studies' ids and how many annotators are enrolled now."""
    enrolled = Count("members", filter=Q(members__withdrawn_at__isnull=True), distinct=True)
    return Project.objects.prefetch_related("studies").annotate(enrolled_count=enrolled)


@router.get(
    "/projects/{project_id}/members",
    response=responses({200: list[MemberOut]}, 400, 404),
    url_name="project_members",
)
@paginate(RowsCursorPagination, out=members_out)
@known_query(MemberFilters)
def project_member_list(request: HttpRequest, project_id: int, filters: Query[MemberFilters]):
    """Who is (and was) enrolled in the project; `enrolled` narrows to either."""
    project = get_object_or_404(Project, pk=project_id)
    found = _members().filter(project=project)
    if filters.enrolled is not None:
        found = found.filter(withdrawn_at__isnull=filters.enrolled)
    return found


@router.get(
    "/projects/{project_id}/candidates",
    response=responses({200: list[PersonRef]}, 404),
    url_name="project_candidates",
)
def project_candidates(request: HttpRequest, project_id: int):
    """The annotators that may be enrolled in the project (active, of this site, not enrolled
    now), as the Members page offers them."""
    project = get_object_or_404(Project, pk=project_id)
    return [person_ref(person) for person in _candidates(project)]


def _candidates(project: Project):
    enrolled = project.members.active().values("annotator_id")
    return enrolment.enrolable_people().exclude(pk__in=enrolled)


@router.post(
    "/projects/{project_id}/members",
    response=responses({201: list[MemberOut]}, 400, 404),
    url_name="project_enrol",
)
def project_enrol(request: HttpRequest, project_id: int, payload: EnrolIn):
    """Enrol annotators in the project with a quota (the Members page's form); each is told by
    email. All or none: a refusal enrols nobody."""
    project = get_object_or_404(Project, pk=project_id)
    form = form_checked(forms.EnrolForm, payload.dict(), candidates=_candidates(project))
    try:
        with transaction.atomic():
            members = [
                enrolment.member_enrol(
                    project=project,
                    annotator=person,
                    quota=form.cleaned_data["quota"],
                    actor=request.user,
                )
                for person in form.cleaned_data["people"]
            ]
    except ValidationError as error:
        raise Refused(" ".join(error.messages)) from None
    return Status(201, members_out(list(_members().filter(pk__in=[m.pk for m in members]))))


@router.get("/members/{member_id}", response=responses({200: MemberOut}, 404), url_name="member")
def member_detail(request: HttpRequest, member_id: int):
    return member_out(_member(member_id))


@router.put(
    "/members/{member_id}", response=responses({200: MemberOut}, 400, 404), url_name="member_quota"
)
def member_quota(request: HttpRequest, member_id: int, payload: MemberQuotaIn):
    """Set the member's quota (null: no limit)."""
    member = _member(member_id)
    form = form_checked(forms.QuotaForm, payload.dict())
    enrolment.member_quota_set(member, quota=form.cleaned_data["quota"], actor=request.user)
    return member_out(_member(member_id))


@router.delete(
    "/members/{member_id}",
    response=responses({200: WithdrawnOut}, 404, 409),
    url_name="member_withdraw",
)
def member_withdraw(request: HttpRequest, member_id: int):
    """Withdraw the annotator from the project: its studies disappear from their pages and
    their reservations are released; their submitted work stays and counts. 409 when they are
    not enrolled any more."""
    member = _member(member_id)
    try:
        released = enrolment.member_withdraw(member, actor=request.user)
    except ValidationError as error:
        raise Refused(" ".join(error.messages), status=409) from None
    return {"member": member_out(_member(member_id)), "released": released}
