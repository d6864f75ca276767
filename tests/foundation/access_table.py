"""Which roles may open which page. New URLs must be added here (a test enforces it)."""

from dataclasses import dataclass, field
from types import SimpleNamespace

from accounts.models import Role
from tests.support.builders import enriched_set, launched_run

STAFF = (Role.RESEARCHER, Role.ADMIN)
ADMIN = (Role.ADMIN,)
EVERYONE = (Role.ANNOTATOR, Role.RESEARCHER, Role.ADMIN)

# Reachable without login.
PUBLIC = {"login", "logout"}


@dataclass(frozen=True)
class Page:
    name: str
    roles: tuple
    args: tuple = field(default_factory=tuple)  # (kwarg name, object key, attribute)

    def kwargs(self, objects: dict) -> dict:
        return {kwarg: getattr(objects[key], attr) for kwarg, key, attr in self.args}


PAGES = [
    Page("home", EVERYONE),
    Page("people", ADMIN),
]

PAGES += [
    Page("benchmark:distributions", STAFF),
    Page("benchmark:distribution_new", STAFF),
    Page("benchmark:distribution", STAFF, (("pk", "distribution", "pk"),)),
    Page("benchmark:sets", STAFF),
    Page("benchmark:set_new", STAFF),
    Page("benchmark:set", STAFF, (("pk", "set", "pk"),)),
    Page("benchmark:set_retry", STAFF, (("pk", "set", "pk"),)),
    Page("benchmark:set_report", STAFF, (("pk", "set", "pk"),)),
    Page("benchmark:entry", STAFF, (("pk", "entry", "pk"),)),
    Page("benchmark:agents", STAFF),
    Page("benchmark:runs", STAFF),
    Page("benchmark:run_new", ADMIN),
    Page("benchmark:run", STAFF, (("pk", "run", "pk"),)),
    Page("benchmark:run_export", STAFF, (("pk", "run", "pk"),)),
    Page("benchmark:run_control", ADMIN, (("pk", "run", "pk"), ("action", "run_action", "name"))),
    Page("benchmark:conversation", STAFF, (("public_id", "conversation", "public_id"),)),
]


def benchmark_objects() -> dict:
    """A one-case set, enriched, and a launched run (its conversation not played: cheap)."""
    benchmark_set = enriched_set(name="Access", size=1, sampler_seed=1)
    run = launched_run(benchmark_set, name="Access run")
    return {
        "distribution": benchmark_set.distribution,
        "set": benchmark_set,
        "entry": benchmark_set.entries.get(),
        "run": run,
        "run_action": SimpleNamespace(name="pause"),
        "conversation": run.conversations.get(),
    }


# --- jury pages ---------------------------------------------------------------------------

_JOB = (("pk", "scoring_job", "pk"),)
_RUBRIC = (("pk", "clinical_rubric", "pk"),)

PAGES += [
    # Annotators read the rubrics of their track (the fixture annotator is clinical).
    Page("jury:rubrics", EVERYONE),
    Page("jury:rubric", EVERYONE, _RUBRIC),
    Page("jury:rubric_new_version", STAFF, _RUBRIC),
    Page("jury:juries", STAFF),
    Page("jury:reports", STAFF),
    Page("jury:score_run", STAFF, (("run_id", "run", "pk"),)),
    Page("jury:job", STAFF, _JOB),
    Page("jury:job_retry", STAFF, _JOB),
    Page("jury:report", STAFF, _JOB),
    Page(
        "jury:report_export",
        STAFF,
        (*_JOB, ("table", "export", "table"), ("suffix", "export", "suffix")),
    ),
    Page("jury:sensitivity", STAFF, _JOB),
    Page("jury:comparison", STAFF, _JOB),
    Page("jury:judges", STAFF, _JOB),
    Page("jury:failures", STAFF, _JOB),
]


def build_objects(users_by_role) -> dict:
    """One object of each kind the URLs point at."""
    objects = benchmark_objects()
    return {**objects, **jury_objects(objects["run"])}


def jury_objects(run) -> dict:
    """An empty scoring job (nothing judged yet) with the current rubrics pinned."""
    from jury.models import RubricVersion, ScoringJob
    from jury.services import juries, rubrics

    job = ScoringJob.objects.create(run=run, jury=juries.jury_demo_ensure())
    job.rubric_versions.set(rubrics.current_versions(judged_only=True))
    return {
        "scoring_job": job,
        "clinical_rubric": RubricVersion.objects.get(rubric_id="clinical_safety"),
        "export": SimpleNamespace(table="outcomes", suffix="csv"),
    }
