"""Fixtures for the annotation app: the jury's module-scoped scored run (8 conversations: 4
cases x offline/careful and offline/careless, scored by the offline demo jury), studies drawn
from it, and annotators of both tracks."""

import pytest

from accounts.models import Role, Track
from annotation.services.studies import StudySpec, study_create
from jury.services.rubrics import current_versions
from tests.conftest import make_user
from tests.jury.services.builders import (  # noqa: F401 - module-scoped scored run
    scored_job,
    world,
    world_job,
)


def new_study(job, *, name="Target study", kind="target", size=8, overlap=2, **options):
    spec = StudySpec(
        project_name=options.pop("project", "Pilot"), name=name, kind=kind, sample_size=size,
        overlap_clinical=overlap, overlap_operational=overlap,
        round_number=options.pop("round_number", 1 if kind == "calibration" else None),
        **options,
    )  # fmt: skip
    return study_create(spec=spec, scoring_jobs=[job], rubric_versions=current_versions())


@pytest.fixture
def study(scored_job):  # noqa: F811 - the imported fixture
    return new_study(scored_job)


@pytest.fixture
def calibration(scored_job):  # noqa: F811 - the imported fixture
    return new_study(scored_job, name="Round 1", kind="calibration", size=3)


def annotators(
    track: str, count: int, *, licensed: bool = True, prefix: str = "", project: str = "Pilot"
):
    """Annotators of `track`, enrolled in `project` (the project `new_study` uses by default;
    None: enrolled nowhere)."""
    people = []
    for number in range(count):
        user = make_user(f"{prefix or track}-{number}", Role.ANNOTATOR, track)
        if not licensed:
            user.licensed = False
            user.save(update_fields=["licensed"])
        people.append(user)
    if project:
        enrol(project, *people)
    return people


def enrol(project, *people, quota=None):
    """Enrol the people in the project (a Project, a project name or a study's project)."""
    from annotation.models import Project, Study
    from annotation.services.enrolment import member_enrol

    if isinstance(project, Study):
        project = project.project
    elif isinstance(project, str):
        project, _ = Project.objects.get_or_create(name=project)
    return [member_enrol(project=project, annotator=p, quota=quota, actor=None) for p in people]


@pytest.fixture
def clinicians(db):
    return annotators(Track.CLINICAL, 3)


@pytest.fixture
def operators(db):
    return annotators(Track.OPERATIONAL, 3)
