"""Which roles may open which page. New URLs must be added here (a test enforces it)."""

from dataclasses import dataclass, field
from types import SimpleNamespace

from accounts.models import Role
from tests.support.builders import enriched_set, launched_run

STAFF = (Role.RESEARCHER, Role.ADMIN)
ADMIN = (Role.ADMIN,)
EVERYONE = (Role.ANNOTATOR, Role.RESEARCHER, Role.ADMIN)

# Reachable without login: logging in and out (also under allauth's names), the sign-on and its
# return from the provider, its error pages, and the second-factor step of a login.
PUBLIC = {
    "login",
    "logout",
    "account_login",
    "account_logout",
    "openid_connect_login",
    "openid_connect_callback",
    "socialaccount_login_error",
    "socialaccount_login_cancelled",
    "mfa_authenticate",
}


@dataclass(frozen=True)
class Page:
    name: str
    roles: tuple
    args: tuple = field(default_factory=tuple)  # (kwarg name, object key, attribute)
    api: bool = False  # a JSON API route: anonymous callers get 401, not the login page
    method: str = "get"  # how the role tests ask (an API write answers GET with 405 first)
    # A figure of data the access world lacks: past the access check it answers 404 saying
    # why, as an empty figure is never offered.
    nothing_to_draw: bool = False
    # A page of something the person has not set up (their second factor): 404 past the check.
    needs_set_up: bool = False

    def kwargs(self, objects: dict) -> dict:
        return {kwarg: getattr(objects[key], attr) for kwarg, key, attr in self.args}


PAGES = [
    Page("home", EVERYONE),
    Page("people", ADMIN),
    Page("display_preferences", EVERYONE),
    Page("session_keepalive", EVERYONE),
    Page("person_new", ADMIN),
    Page("person_edit", ADMIN, (("pk", "person", "pk"),)),
    Page("notification_settings", EVERYONE),
    # Personal access tokens for the JSON API (staff make their own; annotators have none).
    Page("api_tokens", STAFF),
    Page("api_token_revoke", STAFF, (("pk", "api_token", "pk"),)),
    # Webhooks: the researcher's own (the access world's belongs to the researcher; an admin
    # sees everybody's). The actions are POSTs: the role test's GET is answered 405.
    Page("webhooks:hooks", STAFF),
    *(
        Page(f"webhooks:{name}", STAFF, (("pk", "webhook", "pk"),))
        for name in ("hook", "hook_test", "hook_enable", "hook_delete")
    ),
    # Two factors (django-allauth's pages): everyone may set up an authenticator app.
    Page("mfa_index", EVERYONE),
    Page("mfa_activate_totp", EVERYONE),
    Page("mfa_deactivate_totp", EVERYONE, needs_set_up=True),
    Page("mfa_view_recovery_codes", EVERYONE, needs_set_up=True),
    Page("mfa_generate_recovery_codes", EVERYONE),
    Page("mfa_download_recovery_codes", EVERYONE, needs_set_up=True),
    Page("mfa_reauthenticate", EVERYONE),
    Page("account_reauthenticate", EVERYONE),
]

PAGES += [
    Page("benchmark:distributions", STAFF),
    Page("benchmark:distribution_new", STAFF),
    Page("benchmark:distribution", STAFF, (("pk", "distribution", "pk"),)),
    Page("benchmark:sets", STAFF),
    Page("benchmark:set_new", STAFF),
    Page("benchmark:set", STAFF, (("pk", "set", "pk"),)),
    Page("benchmark:set_retry", STAFF, (("pk", "set", "pk"),)),
    Page("benchmark:set_resume", STAFF, (("pk", "set", "pk"),)),
    Page("benchmark:set_report", STAFF, (("pk", "set", "pk"),)),
    Page("benchmark:entry", STAFF, (("pk", "entry", "pk"),)),
    Page("benchmark:agents", STAFF),
    Page("benchmark:runs", STAFF),
    Page("benchmark:run_new", ADMIN),
    Page("benchmark:run_forecast", ADMIN),
    Page("benchmark:run_import", STAFF),
    Page("benchmark:run", STAFF, (("pk", "run", "pk"),)),
    Page("benchmark:run_export", STAFF, (("pk", "run", "pk"),)),
    Page("benchmark:run_export_parquet", STAFF, (("pk", "run", "pk"),)),
    Page("benchmark:run_manifest", STAFF, (("pk", "run", "pk"),)),
    Page("benchmark:run_control", ADMIN, (("pk", "run", "pk"), ("action", "run_action", "name"))),
    Page("benchmark:conversation", STAFF, (("public_id", "conversation", "public_id"),)),
    Page("benchmark:prices", STAFF),
    Page("benchmark:endpoints", ADMIN),
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
        "api_token": _api_token(),
    }


def _api_token():
    """A researcher's read token (the revoke page finds only the caller's own; the role test
    asks with GET, which the page answers 405 before looking)."""
    from accounts.models import Role, User
    from accounts.tokens import token_create

    owner = User.objects.create_user(username="token-owner", role=Role.RESEARCHER)
    return token_create(user=owner, name="Access", scope="read", days=7)[0]


# --- jury pages ---------------------------------------------------------------------------

_JOB = (("pk", "scoring_job", "pk"),)
_RUBRIC = (("pk", "clinical_rubric", "pk"),)

PAGES += [
    # Annotators read the rubrics of their track (the fixture annotator is clinical).
    Page("jury:rubrics", EVERYONE),
    Page("jury:rubric", EVERYONE, _RUBRIC),
    Page("jury:rubric_new_version", STAFF, _RUBRIC),
    Page("jury:juries", STAFF),
    Page("jury:jury", STAFF, (("pk", "jury", "pk"),)),
    Page("jury:reports", STAFF),
    Page("jury:leaderboard", STAFF),
    Page("jury:plan", STAFF),
    Page("jury:score_run", STAFF, (("run_id", "run", "pk"),)),
    Page("jury:score_forecast", STAFF, (("run_id", "run", "pk"),)),
    Page("jury:job", STAFF, _JOB),
    Page("jury:job_retry", STAFF, _JOB),
    Page("jury:job_resume", STAFF, _JOB),
    Page("jury:job_scores_export", STAFF, (*_JOB, ("fmt", "score_export", "fmt"))),
    Page("jury:report", STAFF, _JOB),
    Page(
        "jury:report_export",
        STAFF,
        (*_JOB, ("table", "export", "table"), ("suffix", "export", "suffix")),
    ),
    Page(
        "jury:report_figure",
        STAFF,
        (*_JOB, ("kind", "figure", "kind"), ("fmt", "figure", "fmt")),
        nothing_to_draw=True,
    ),
    Page("jury:sensitivity", STAFF, _JOB),
    Page(
        "jury:sensitivity_figure",
        STAFF,
        (*_JOB, ("attribute", "figure", "attribute"), ("fmt", "figure", "fmt")),
        nothing_to_draw=True,
    ),
    Page("jury:comparison", STAFF, _JOB),
    Page("jury:judges", STAFF, _JOB),
    Page("jury:failures", STAFF, _JOB),
]

_REVIEW = (("pk", "fidelity_review", "pk"),)
PAGES += [
    Page("fidelity:review_new", STAFF, (("run_id", "run", "pk"),)),
    Page("fidelity:review", STAFF, _REVIEW),
    Page("fidelity:review_retry", STAFF, _REVIEW),
    Page("fidelity:review_resume", STAFF, _REVIEW),
    Page("fidelity:review_replay", ADMIN, _REVIEW),
]


def access_world(django_db_blocker):
    """A module fixture's body: an annotator, a researcher and an admin with one object of each
    kind, committed for the module's tests and flushed afterwards."""
    from django.core.management import call_command

    from accounts.models import Track
    from tests.conftest import make_user

    with django_db_blocker.unblock():
        users = {
            Role.ANNOTATOR: make_user("annie", Role.ANNOTATOR, Track.CLINICAL),
            Role.RESEARCHER: make_user("rita", Role.RESEARCHER),
            Role.ADMIN: make_user("adam", Role.ADMIN),
        }
        objects = build_objects(users)
    yield users, objects
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


def build_objects(users_by_role) -> dict:
    """One object of each kind the URLs point at."""
    objects = benchmark_objects()
    objects = {
        **objects,
        **jury_objects(objects["run"]),
        **fidelity_objects(objects["run"]),
        **rubric_lab_objects(objects),
        **annotation_objects(objects, users_by_role),
    }
    return objects | alignment_objects(objects) | webhook_objects(users_by_role)


def webhook_objects(users_by_role) -> dict:
    """The researcher's webhook (never called: no job ends in the access world). A world
    without a researcher (the blinding crawl's) gives it an owner of its own."""
    from accounts.models import User
    from webhooks.services.hooks import webhook_create

    owner = users_by_role.get(Role.RESEARCHER) or User.objects.create_user(
        username="hook-owner", role=Role.RESEARCHER
    )
    return {"webhook": webhook_create(owner=owner, url="http://127.0.0.1:9/hook")[0]}


def fidelity_objects(run) -> dict:
    """An empty fidelity review (nothing reviewed yet)."""
    from fidelity.models import FidelityReview

    review = FidelityReview.objects.create(run=run, reviewer_model="offline/reviewer")
    return {"fidelity_review": review}


def jury_objects(run) -> dict:
    """An empty scoring job (nothing judged yet) with the current rubrics pinned."""
    from jury.models import RubricVersion, ScoringJob
    from jury.services import juries, rubrics

    job = ScoringJob.objects.create(run=run, jury=juries.jury_demo_ensure())
    job.rubric_versions.set(rubrics.current_versions(judged_only=True))
    return {
        "scoring_job": job,
        "jury": job.jury,
        "clinical_rubric": RubricVersion.objects.get(rubric_id="clinical_safety"),
        "export": SimpleNamespace(table="outcomes", suffix="csv"),
        "score_export": SimpleNamespace(fmt="parquet"),
        "figure": SimpleNamespace(kind="pass-rates", attribute="severity", fmt="png"),
    }


# --- rubric lab pages: knowledge base, pipeline, instance rubrics --------------------------

PAGES += [
    Page("rubric_lab:kb", STAFF),
    Page("rubric_lab:kb_upload", STAFF),
    Page("rubric_lab:import", STAFF),
    Page("rubric_lab:pipelines", STAFF),
    Page("rubric_lab:pipeline_new", STAFF),
    Page("rubric_lab:pipeline_forecast", STAFF),
    Page("rubric_lab:pipeline", STAFF, (("pk", "generation_job", "pk"),)),
    Page("rubric_lab:generation", STAFF, (("pk", "generation", "pk"),)),
    Page("rubric_lab:rubric", STAFF, (("pk", "instance_rubric", "pk"),)),
    Page("rubric_lab:rubric_score", STAFF, (("pk", "instance_rubric", "pk"),)),
    Page("rubric_lab:rubric_score_forecast", STAFF, (("pk", "instance_rubric", "pk"),)),
    Page("rubric_lab:score", STAFF, (("pk", "instance_score", "pk"),)),
]

# Rubric lab, evaluation side (sensitivity, near misses, coverage, refine, ablations).
PAGES += [
    Page("rubric_lab:sensitivity_list", STAFF),
    Page("rubric_lab:sensitivity_forecast", STAFF),
    Page("rubric_lab:sensitivity", STAFF, (("pk", "sensitivity_study", "pk"),)),
    Page("rubric_lab:sensitivity_retry", STAFF, (("pk", "sensitivity_study", "pk"),)),
    Page(
        "rubric_lab:sensitivity_export",
        STAFF,
        (("pk", "sensitivity_study", "pk"), ("suffix", "export", "suffix")),
    ),
    Page("rubric_lab:near_miss", STAFF, (("pk", "near_miss", "pk"),)),
    Page("rubric_lab:perturbation_preview", STAFF, (("public_id", "conversation", "public_id"),)),
    Page("rubric_lab:coverage_list", STAFF),
    Page("rubric_lab:coverage_forecast", STAFF),
    Page("rubric_lab:coverage", STAFF, (("pk", "coverage_run", "pk"),)),
    Page(
        "rubric_lab:coverage_export",
        STAFF,
        (("pk", "coverage_run", "pk"), ("suffix", "export", "suffix")),
    ),
    Page(
        "rubric_lab:coverage_compare_export",
        STAFF,
        (
            ("pk", "coverage_run", "pk"),
            ("other", "coverage_run", "pk"),
            ("suffix", "export", "suffix"),
        ),
    ),
    Page("rubric_lab:refine_list", STAFF),
    Page("rubric_lab:refine_forecast", STAFF),
    Page("rubric_lab:refine", STAFF, (("pk", "refine_study", "pk"),)),
    Page(
        "rubric_lab:refine_export",
        STAFF,
        (("pk", "refine_study", "pk"), ("suffix", "export", "suffix")),
    ),
    Page("rubric_lab:ablation_list", STAFF),
    Page("rubric_lab:ablation_forecast", STAFF),
    Page("rubric_lab:ablation", STAFF, (("pk", "ablation_study", "pk"),)),
    Page(
        "rubric_lab:job_resume",
        STAFF,
        (("kind", "lab_resume", "kind"), ("pk", "sensitivity_study", "pk")),
    ),
]


def rubric_lab_evaluation_objects(objects, job, rubric) -> dict:
    """An empty study of each kind on the access rubric (nothing executed)."""
    from rubric_lab.models import (
        AblationStudy,
        CoverageRun,
        ExpertCriteriaUpload,
        NearMiss,
        RefineStudy,
        SensitivityStudy,
    )

    models = {"perturber_model": "offline/surgical", "judge_model": "offline/standard"}
    study = SensitivityStudy.objects.create(
        name="Access", run=objects["run"], setup="pairwise", perturbations=["swap_dose"], **models
    )
    return {
        "sensitivity_study": study,
        "near_miss": NearMiss.objects.create(
            study=study, conversation=objects["conversation"], kind="swap_dose"
        ),
        "coverage_run": CoverageRun.objects.create(
            name="Access", generation_job=job, judge_model="offline/standard"
        ),
        "refine_study": RefineStudy.objects.create(
            name="Access",
            generation_job=job,
            evaluator_model="offline/standard",
            editor_model="offline/standard",
            judge_model="offline/standard",
        ),
        "ablation_study": AblationStudy.objects.create(
            name="Access", run=objects["run"], generator_model="offline/standard", **models
        ),
        "lab_resume": SimpleNamespace(kind="sensitivity"),
        "lab_units": SimpleNamespace(fmt="jsonl"),
        "criteria_import": ExpertCriteriaUpload.objects.create(
            benchmark_set=objects["run"].benchmark_set, filename="access.csv", criterion_count=0
        ),
    }


def rubric_lab_objects(objects) -> dict:
    """A finished generation with a one-criterion rubric and a pending score, stored directly
    (no pipeline run: the access test only opens the pages)."""
    from rubric_lab.models import (
        GenerationJob,
        InstanceRubric,
        InstanceScore,
        RubricCriterion,
        RubricGeneration,
    )

    conversation = objects["conversation"]
    job = GenerationJob.objects.create(
        name="Access", run=objects["run"], generator_model="offline/standard"
    )
    generation = RubricGeneration.objects.create(
        job=job, conversation=conversation, status="finished"
    )
    rubric = InstanceRubric.objects.create(generation=generation, conversation=conversation)
    RubricCriterion.objects.create(
        rubric=rubric,
        index=0,
        text="Asks about symptoms",
        axis="communication",
        weight=3,
        intent_basis=["missing_context"],
    )
    score = InstanceScore.objects.create(
        rubric=rubric, conversation=conversation, judge_model="offline/standard"
    )
    return {
        "generation_job": job,
        "generation": generation,
        "instance_rubric": rubric,
        "instance_score": score,
        **rubric_lab_evaluation_objects(objects, job, rubric),
    }


# --- annotation pages: researcher side ----------------------------------------------------

_STUDY = (("pk", "study", "pk"),)
_ASSIGNMENT = (("public_id", "assignment", "public_id"),)

PAGES += [
    Page("annotation:staff_studies", STAFF),
    Page("annotation:staff_study_new", STAFF),
    Page("annotation:staff_study", STAFF, _STUDY),
    Page("annotation:staff_study_lock", STAFF, _STUDY),
    Page("annotation:staff_study_guide_setting", STAFF, _STUDY),
    Page("annotation:staff_study_export", STAFF, (*_STUDY, ("fmt", "export", "suffix"))),
    Page("annotation:staff_study_import", STAFF, _STUDY),
    Page("annotation:staff_round_report", STAFF, _STUDY),
    Page("annotation:staff_guide_new", STAFF, _STUDY),
    Page("annotation:staff_guide", STAFF, (("pk", "guide", "pk"),)),
    Page("annotation:staff_guide_publish", STAFF, (("pk", "guide", "pk"),)),
    Page("annotation:staff_assignment", STAFF, _ASSIGNMENT),
    Page("annotation:staff_assignment_invalidate", STAFF, _ASSIGNMENT),
    # The study archive: export button (POST), job page, download, import upload. Its pages
    # moved to alignment; these old names redirect there.
    Page("annotation:staff_study_archive", STAFF, _STUDY),
    Page("annotation:staff_archive_import", STAFF),
    Page("annotation:staff_archive_job", STAFF, (("pk", "archive_job", "pk"),)),
    Page("annotation:staff_archive_download", STAFF, (("pk", "archive_job", "pk"),)),
    Page("alignment:study_archive", STAFF, _STUDY),
    Page("alignment:report_bundle", STAFF),
    Page("alignment:archive_import", STAFF),
    Page("alignment:archive_job", STAFF, (("pk", "archive_job", "pk"),)),
    Page("alignment:archive_download", STAFF, (("pk", "archive_job", "pk"),)),
    # Running a study: members, deadline, moving work, adjudication.
    Page("annotation:staff_members", STAFF, (("pk", "project", "pk"),)),
    Page("annotation:staff_member_quota", STAFF, (("pk", "member", "pk"),)),
    Page("annotation:staff_member_withdraw", STAFF, (("pk", "member", "pk"),)),
    Page("annotation:staff_study_deadline", STAFF, _STUDY),
    Page("annotation:staff_study_second_phase", STAFF, _STUDY),
    Page(
        "annotation:staff_study_reassign_all",
        STAFF,
        (*_STUDY, ("annotator", "person", "pk")),
    ),
    *(
        Page(f"annotation:staff_assignment_{name}", STAFF, _ASSIGNMENT)
        for name in ("release", "extend", "reassign", "reopen")
    ),
    Page("annotation:staff_adjudication", STAFF, _STUDY),
    Page("annotation:staff_adjudication_send", STAFF, _STUDY),
    Page("annotation:staff_adjudication_jury", STAFF, _STUDY),
]

# --- annotation pages: annotator side (the fixture annotator's own study and assignment) ----

ANNOTATOR_ONLY = (Role.ANNOTATOR,)
PAGES += [
    Page("annotation:queue", ANNOTATOR_ONLY, _STUDY),
    Page("annotation:next", ANNOTATOR_ONLY, _STUDY),
    *(
        Page(f"annotation:{name}", ANNOTATOR_ONLY, _ASSIGNMENT)
        for name in ("review", "autosave", "submit", "skip", "reopen", "heartbeat")
    ),
    # Senior clinicians (the fixture annotator is one) adjudicate.
    Page("annotation:adjudications", ANNOTATOR_ONLY),
    Page("annotation:adjudication", ANNOTATOR_ONLY, (("public_id", "adjudication", "public_id"),)),
]


def annotation_objects(objects, users) -> dict:
    """A one-item calibration round on the run's conversation, the fixture annotator (enrolled
    in its project, and a senior clinician) with an open assignment on it, a draft guide and,
    in a target study of the same conversation, an item sent to adjudication (stored directly:
    the access test only opens pages)."""
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import (
        Adjudication,
        Assignment,
        CalibrationGuide,
        Project,
        ProjectMember,
        Study,
        StudyItem,
    )

    project = Project.objects.create(name="Access project")
    study = Study.objects.create(
        project=project, name="Access round", kind="calibration", round_number=1, sample_size=1
    )
    item = StudyItem.objects.create(study=study, conversation=objects["conversation"], position=0)
    annotator = users[Role.ANNOTATOR]
    annotator.senior = True
    annotator.save(update_fields=["senior"])
    member = ProjectMember.objects.create(
        project=project, annotator=annotator, enrolled_at=timezone.now()
    )
    target = Study.objects.create(project=project, name="Access target", kind="target",
                                  sample_size=1)  # fmt: skip
    disputed = StudyItem.objects.create(study=target, conversation=objects["conversation"],
                                        position=0)  # fmt: skip
    adjudication = Adjudication.objects.create(
        item=disputed, rubric_id="clinical_safety", reason="clinicians", gap=2
    )
    assignment = Assignment.objects.create(
        item=item,
        annotator=annotator,
        track=annotator.track,
        slot=0,
        queue_key="access",
        reserved_until=timezone.now() + timedelta(hours=1),
    )
    guide = CalibrationGuide.objects.create(
        project=project, after_study=study, title="Access guide", body_markdown="Read *slowly*."
    )
    return {"study": study, "item": item, "assignment": assignment, "guide": guide,
            "archive_job": _finished_archive_export(study), "member": member,
            "report_bundle": _finished_archive_export(None, kind="bundle"),
            "adjudication": adjudication, "person": annotator}  # fmt: skip


def _finished_archive_export(study, kind: str = "export"):
    import tempfile

    from django.utils import timezone

    from alignment.models import ArchiveJob

    with tempfile.NamedTemporaryFile(suffix=".zip", delete=False) as stored:
        stored.write(b"PK\x05\x06" + bytes(18))  # an empty zip
    return ArchiveJob.objects.create(
        kind=kind, study=study, status="finished", file_name="access.zip",
        file_path=stored.name, finished_at=timezone.now(),
    )  # fmt: skip


# --- alignment reports (staff only) ----------------------------------------------------------

_PROJECT = (("pk", "project", "pk"),)
_RUBRIC_PAGE = (*_STUDY, ("rubric_id", "clinical_rubric", "rubric_id"))

PAGES += [
    Page("alignment:index", STAFF),
    Page("alignment:report", STAFF, _STUDY),
    Page("alignment:planner", STAFF, _STUDY),
    Page("alignment:export", STAFF, (*_STUDY, ("fmt", "export", "suffix"))),
    Page(
        "alignment:table_export",
        STAFF,
        (*_STUDY, ("table", "study_table", "name"), ("fmt", "export", "suffix")),
    ),
    Page("alignment:drift", STAFF, _STUDY),
    Page("alignment:drift_export", STAFF, (*_STUDY, ("fmt", "export", "suffix"))),
    Page("alignment:rubric", STAFF, _RUBRIC_PAGE),
    Page(
        "alignment:figure",
        STAFF,
        (*_RUBRIC_PAGE, ("kind", "alignment_figure", "kind"), ("fmt", "alignment_figure", "fmt")),
    ),
    Page("alignment:disagreements", STAFF, _STUDY),
    Page("alignment:tag", STAFF, (*_STUDY, ("item_pk", "item", "pk"))),
    Page("alignment:untag", STAFF, (("pk", "item_theme", "pk"),)),
    Page("alignment:trend", STAFF, _PROJECT),
    Page(
        "alignment:trend_figure",
        STAFF,
        (*_PROJECT, ("kind", "trend_figure", "kind"), ("fmt", "trend_figure", "fmt")),
        nothing_to_draw=True,
    ),
]

# Closing the loop: re-scoring a study and comparing its jury configurations (staff only).
PAGES += [
    Page("alignment:loop_rescore", STAFF, _STUDY),
    Page("alignment:loop_comparison", STAFF, _STUDY),
    Page("alignment:loop_comparison_csv", STAFF, _STUDY),
    Page("alignment:calibration", STAFF, _STUDY),
    Page("alignment:calibration_examples", STAFF, _STUDY),
    Page("alignment:calibration_promote", STAFF, _STUDY),
    Page("alignment:calibration_rescore", STAFF, _STUDY),
    Page("alignment:jury_history", STAFF, _STUDY),
    Page("alignment:jury_history_export", STAFF, (*_STUDY, ("fmt", "export", "suffix"))),
]


def alignment_objects(objects) -> dict:
    """The access study with the current rubrics (so a rubric page exists), its jury job and a
    theme tag on its item. Nothing is annotated: the pages and figures show their empty
    states."""
    from alignment.models import ItemTheme, Theme
    from jury.services.rubrics import current_versions

    study, item = objects["study"], objects["item"]
    study.rubric_versions.set(current_versions())
    study.scoring_jobs.add(objects["scoring_job"])
    theme = Theme.objects.create(name="Access theme", project=study.project)
    return {
        "project": study.project,
        "item_theme": ItemTheme.objects.create(item=item, rubric_id="clinical_safety", theme=theme),
        "alignment_figure": SimpleNamespace(kind="scatter", fmt="svg"),
        "study_table": SimpleNamespace(name="alt-test"),
        "trend_figure": SimpleNamespace(kind="rubrics", fmt="svg"),
    }


# --- the JSON API (/api/v1/): staff only, every route; the schema and docs are pages ----------

_API_SET, _API_RUN = (("set_id", "set", "pk"),), (("run_id", "run", "pk"),)
_API_JOB, _API_STUDY = (("job_id", "scoring_job", "pk"),), (("study_id", "study", "pk"),)
_API_ARCHIVE = (("job_id", "archive_job", "pk"),)
_API_HOOK = (("hook_id", "webhook", "pk"),)
_API_BUNDLE = (("job_id", "report_bundle", "pk"),)

PAGES += [
    Page("api:openapi-json", STAFF),
    Page("api:openapi-view", STAFF),
    Page("api:api-root", STAFF),
    *(
        Page(f"api:{name}", roles, args, api=True, method=method)
        for name, roles, args, method in [
            ("case_set_create", STAFF, (), "post"),
            ("case_sets", STAFF, (), "get"),
            ("case_set", STAFF, _API_SET, "get"),
            ("run_launch", ADMIN, (), "post"),
            ("runs", STAFF, (), "get"),
            ("run", STAFF, _API_RUN, "get"),
            ("conversations", STAFF, _API_RUN, "get"),
            ("run_export", STAFF, (*_API_RUN, ("fmt", "score_export", "fmt")), "get"),
            ("run_manifest", STAFF, _API_RUN, "get"),
            ("run_control", ADMIN, (*_API_RUN, ("action", "run_action", "name")), "post"),
            ("conversation_import", STAFF, (), "post"),
            ("conversation", STAFF, (("public_id", "conversation", "public_id"),), "get"),
            ("scoring_job_launch", STAFF, (), "post"),
            ("scoring_jobs", STAFF, (), "get"),
            ("scoring_job", STAFF, _API_JOB, "get"),
            ("judge_scores", STAFF, _API_JOB, "get"),
            ("judge_scores_export", STAFF, (*_API_JOB, ("fmt", "score_export", "fmt")), "get"),
            ("model_table", STAFF, _API_JOB, "get"),
            ("report_table", STAFF, (*_API_JOB, ("table", "export", "table")), "get"),
            (
                "report_table_export",
                STAFF,
                (*_API_JOB, ("table", "export", "table"), ("suffix", "export", "suffix")),
                "get",
            ),
            ("juries", STAFF, (), "get"),
            ("jury", STAFF, (("jury_id", "jury", "pk"),), "get"),
            ("jury_versions", STAFF, (("jury_id", "jury", "pk"),), "get"),
            ("rubrics", STAFF, (), "get"),
            ("rubric", STAFF, (("version_id", "clinical_rubric", "pk"),), "get"),
            ("distributions", STAFF, (), "get"),
            ("distribution", STAFF, (("distribution_id", "distribution", "pk"),), "get"),
            ("agent_configs", STAFF, (), "get"),
            ("prices", STAFF, (), "get"),
            ("price_set", STAFF, (), "post"),
            ("endpoints", ADMIN, (), "get"),
            ("endpoints_save", ADMIN, (), "put"),
            ("study_create", STAFF, (), "post"),
            ("studies", STAFF, (), "get"),
            ("study", STAFF, _API_STUDY, "get"),
            ("study_annotations", STAFF, (*_API_STUDY, ("fmt", "export", "suffix")), "get"),
            ("study_agreement", STAFF, _API_STUDY, "get"),
            (
                "study_table",
                STAFF,
                (*_API_STUDY, ("table", "study_table", "name"), ("fmt", "export", "suffix")),
                "get",
            ),
            ("archive_export", STAFF, (), "post"),
            ("archive_import", STAFF, (), "post"),
            ("archive_job", STAFF, _API_ARCHIVE, "get"),
            ("archive_download", STAFF, _API_ARCHIVE, "get"),
            ("webhooks", STAFF, (), "get"),
            ("webhook_create", STAFF, (), "post"),
            ("webhook", STAFF, _API_HOOK, "get"),
            ("webhook_delete", STAFF, _API_HOOK, "get"),  # the same path: GET reads it
            ("webhook_deliveries", STAFF, _API_HOOK, "get"),
            ("webhook_test", STAFF, _API_HOOK, "post"),  # records a ping (never sent here)
            ("leaderboard", STAFF, (), "get"),
            ("report_bundle", STAFF, (), "post"),
            ("report_bundle_job", STAFF, _API_BUNDLE, "get"),
            ("report_bundle_download", STAFF, _API_BUNDLE, "get"),
        ]
    ),
    Page(
        "api:report_figure",
        STAFF,
        (*_API_JOB, ("kind", "figure", "kind"), ("fmt", "figure", "fmt")),
        api=True,
        nothing_to_draw=True,
    ),
]

# The rubric lab's routes (api.routes.lab): staff, as the lab pages.
_LAB_GEN, _LAB_RUBRIC = (
    (("job_id", "generation_job", "pk"),),
    (("rubric_id", "instance_rubric", "pk"),),
)
_LAB_SENS, _LAB_COV = (
    (("study_id", "sensitivity_study", "pk"),),
    (("run_id", "coverage_run", "pk"),),
)
_LAB_REF, _LAB_ABL = (("study_id", "refine_study", "pk"),), (("study_id", "ablation_study", "pk"),)
_LAB_IMPORT, _LAB_OTHER = (
    (("import_id", "criteria_import", "pk"),),
    (("other_id", "coverage_run", "pk"),),
)
_SUFFIX, _UNITS = (("suffix", "export", "suffix"),), (("fmt", "lab_units", "fmt"),)

PAGES += [
    Page(f"api:{name}", STAFF, args, api=True, method=method)
    for name, args, method in [
        ("lab_healthbench_import", (), "post"),
        ("lab_criteria_import", (), "post"),
        ("lab_imports", (), "get"),
        ("lab_import", _LAB_IMPORT, "get"),
        ("lab_import_criteria", _LAB_IMPORT, "get"),
        ("lab_generation_launch", (), "post"),
        ("lab_generation_jobs", (), "get"),
        ("lab_generation_job", _LAB_GEN, "get"),
        ("lab_generation_rubrics", _LAB_GEN, "get"),
        ("lab_generation_rubrics_export", (*_LAB_GEN, *_UNITS), "get"),
        ("lab_rubric", _LAB_RUBRIC, "get"),
        ("lab_rubric_score", _LAB_RUBRIC, "post"),
        ("lab_instance_score", (("score_id", "instance_score", "pk"),), "get"),
        ("lab_knowledge", (), "get"),
        ("lab_knowledge_search", (), "get"),
        ("lab_knowledge_upload", (), "post"),
        ("lab_sensitivity_launch", (), "post"),
        ("lab_sensitivity_studies", (), "get"),
        ("lab_sensitivity_study", _LAB_SENS, "get"),
        ("lab_sensitivity_retry", _LAB_SENS, "post"),  # no failed pair: nothing sent again
        ("lab_sensitivity_results", _LAB_SENS, "get"),
        ("lab_sensitivity_export", (*_LAB_SENS, *_SUFFIX), "get"),
        ("lab_sensitivity_pairs_export", (*_LAB_SENS, *_UNITS), "get"),
        ("lab_coverage_launch", (), "post"),
        ("lab_coverage_runs", (), "get"),
        ("lab_coverage_run", _LAB_COV, "get"),
        ("lab_coverage_results", _LAB_COV, "get"),
        ("lab_coverage_export", (*_LAB_COV, *_SUFFIX), "get"),
        ("lab_coverage_cases_export", (*_LAB_COV, *_UNITS), "get"),
        ("lab_coverage_compare", (*_LAB_COV, *_LAB_OTHER), "get"),
        ("lab_coverage_compare_export", (*_LAB_COV, *_LAB_OTHER, *_SUFFIX), "get"),
        ("lab_refine_launch", (), "post"),
        ("lab_refine_studies", (), "get"),
        ("lab_refine_study", _LAB_REF, "get"),
        ("lab_refine_results", _LAB_REF, "get"),
        ("lab_refine_export", (*_LAB_REF, *_SUFFIX), "get"),
        ("lab_refinements_export", (*_LAB_REF, *_UNITS), "get"),
        ("lab_ablation_launch", (), "post"),
        ("lab_ablation_studies", (), "get"),
        ("lab_ablation_study", _LAB_ABL, "get"),
        # The access study is running, not paused: 400 past the access check.
        (
            "lab_job_resume",
            (("kind", "lab_resume", "kind"), ("job_id", "sensitivity_study", "pk")),
            "post",
        ),
    ]
]

# People, enrolment, moving work, adjudication and the study report's files through the API:
# the People page's accounts are admins'; the rest is a project's or a study's page (staff).
# The writes are asked with an empty body (a 400 past the access check); the member's quota
# and withdrawal share its address, which GET reads.
_API_PROJECT, _API_MEMBER = (("project_id", "project", "pk"),), (("member_id", "member", "pk"),)
_API_ASSIGNMENT = (("public_id", "assignment", "public_id"),)

PAGES += [
    *(
        Page(f"api:{name}", roles, args, api=True, method=method)
        for name, roles, args, method in [
            ("people", ADMIN, (), "get"),
            ("person", ADMIN, (("person_id", "person", "pk"),), "get"),
            ("projects", STAFF, (), "get"),
            ("project_members", STAFF, _API_PROJECT, "get"),
            ("project_candidates", STAFF, _API_PROJECT, "get"),
            ("project_enrol", STAFF, _API_PROJECT, "post"),
            ("member", STAFF, _API_MEMBER, "get"),
            ("member_quota", STAFF, _API_MEMBER, "get"),
            ("member_withdraw", STAFF, _API_MEMBER, "get"),
            ("study_assignments", STAFF, _API_STUDY, "get"),
            (
                "study_reassign_all",
                STAFF,
                (*_API_STUDY, ("annotator_id", "person", "pk")),
                "post",
            ),
            ("study_deadline", STAFF, _API_STUDY, "put"),
            ("assignment", STAFF, _API_ASSIGNMENT, "get"),
            ("assignment_release", STAFF, _API_ASSIGNMENT, "post"),
            ("assignment_extend", STAFF, _API_ASSIGNMENT, "post"),
            ("assignment_reassign", STAFF, _API_ASSIGNMENT, "post"),
            ("assignment_reopen", STAFF, _API_ASSIGNMENT, "post"),
            ("study_adjudication", STAFF, _API_STUDY, "get"),
            ("study_adjudications", STAFF, _API_STUDY, "get"),
            ("adjudication_send", STAFF, _API_STUDY, "post"),
            ("adjudication_jury", STAFF, _API_STUDY, "put"),
            ("study_report_files", STAFF, _API_STUDY, "get"),
            (
                "study_figure",
                STAFF,
                (
                    *_API_STUDY,
                    ("rubric_id", "clinical_rubric", "rubric_id"),
                    ("kind", "alignment_figure", "kind"),
                    ("fmt", "alignment_figure", "fmt"),
                ),
                "get",
            ),
            ("study_drift_table", STAFF, (*_API_STUDY, ("fmt", "export", "suffix")), "get"),
            (
                "study_jury_history_table",
                STAFF,
                (*_API_STUDY, ("fmt", "export", "suffix")),
                "get",
            ),
            (
                "study_jury_comparison_table",
                STAFF,
                (*_API_STUDY, ("fmt", "export", "suffix")),
                "get",
            ),
        ]
    ),
    Page(
        "api:project_trend_figure",
        STAFF,
        (*_API_PROJECT, ("kind", "trend_figure", "kind"), ("fmt", "trend_figure", "fmt")),
        api=True,
        nothing_to_draw=True,
    ),
]
