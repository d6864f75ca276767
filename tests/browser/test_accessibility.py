"""axe-core (axe-playwright-python's bundled copy, injected through Playwright's evaluate, which
the site's script policy does not govern) over every page an annotator works in - login, home,
queue, the review screen open, submitted, after a calibration round's reveal and showing a
conflict - the researcher's study pages, the run page's controls, a scoring job's pages, the
rubric lab's launch forms and the two import pages with a refused upload, in the light theme
and in the dark one: no serious or critical violation (colour contrast among them). The review
screen again at the sizes the clinicians work at (1366x768 and a 768x1024 tablet at the
largest text, 1920x1080), open, with the keys help, with a conflict and while the server does
not answer. The rules the issue found broken (a page without a level-one heading, empty table
headers) are asserted gone at any impact."""

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Role, Track, User
from accounts.tokens import token_create
from annotation.models import Assignment, CalibrationGuide
from annotation.services import queue
from annotation.services.annotations import Draft, annotation_autosave, annotation_submit
from tests.annotation.test_annotation_writes import full_draft
from tests.browser.review_support import new_study, saved, scored_job
from tests.conftest import PASSWORD, make_user
from tests.support.builders import enriched_set, launched_run
from webhooks.models import Webhook

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BLOCKING = {"serious", "critical"}
ALWAYS = {"page-has-heading-one", "empty-table-header"}
AXE = Axe()


@pytest.fixture
def work(transactional_db):
    """Nora's target study (one item open, one submitted), a calibration round she submitted
    (its reveal shows), the project's published guide, and a researcher."""
    nora = make_user("nora", Role.ANNOTATOR, Track.CLINICAL)
    make_user("rita", Role.RESEARCHER)
    job = scored_job(size=4)
    calibration = new_study(job, name="Round 1", kind="calibration", size=1)
    target = new_study(job, name="Target study", size=3)
    target.guide_in_target = True
    target.save(update_fields=["guide_in_target"])
    practice = queue.next_assignment(study=calibration, annotator=nora)
    annotation_submit(practice, draft=full_draft(practice), version=0, actor=nora)
    CalibrationGuide.objects.create(
        project=calibration.project, after_study=calibration, title="Round 1 lessons",
        body_markdown="Score what was **done**, not what was said.", published_at=timezone.now(),
        examples=[{"item": practice.item_id, "note": "Booked before asking."}],
    )  # fmt: skip
    submitted = queue.next_assignment(study=target, annotator=nora)
    annotation_submit(submitted, draft=full_draft(submitted), version=0, actor=nora)
    open_item = queue.next_assignment(study=target, annotator=nora)
    annotation_autosave(
        open_item, draft=Draft(scores={"clinical_safety": 3}), version=0, actor=nora
    )
    return {"target": target, "calibration": calibration, "practice": practice,
            "submitted": submitted, "open": open_item}  # fmt: skip


def violations(page, *, blocking_only=True) -> list[str]:
    found = AXE.run(page).response["violations"]
    return [
        f"{v['id']} ({v['impact']}): {', '.join(str(n['target']) for n in v['nodes'][:3])}"
        for v in found
        if not blocking_only or v["impact"] in BLOCKING or v["id"] in ALWAYS
    ]


def themed_violations(page, theme: str) -> list[str]:
    """violations(page), once the page shows the theme the test set on the account."""
    expect(page.locator("html")).to_have_attribute(
        "data-theme", {"light": "system"}.get(theme, theme)
    )
    return violations(page)


def themed_page(browser, theme: str):
    """A page in a light system scheme, every account on `theme` ("light": follow the system;
    "dark": the person's own choice, which must win over the system's light scheme)."""
    User.objects.update(theme="system" if theme == "light" else "dark")
    context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme="light")
    return context.new_page()


def log_in(page, url, username):
    page.goto(f"{url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.press("input[name=password]", "Enter")
    page.wait_for_url(f"{url}/")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_no_serious_accessibility_violation_on_annotator_and_study_pages(
    browser, live_server, work, theme
):
    page = themed_page(browser, theme)
    url = live_server.url
    found = {}

    def check(name):
        found[name] = themed_violations(page, theme)

    page.goto(f"{url}/accounts/login/")
    found["login"] = violations(page)
    log_in(page, url, "nora")
    check("home")
    page.goto(f"{url}/annotation/studies/{work['target'].pk}/queue/")
    check("queue")
    for name in ("open", "submitted", "practice"):
        page.goto(f"{url}/annotation/items/{work[name].public_id}/")
        check(f"review, {name}")
    assert page.locator("[data-reveal]").count() > 0  # the calibration reveal was checked
    page.goto(f"{url}/annotation/items/{work['open'].public_id}/")
    annotation_autosave(
        work["open"],
        draft=Draft(scores={"triage_quality": 2}),
        version=1,
        actor=work["open"].annotator,
    )  # saved from elsewhere: this page is stale now
    page.keyboard.press("4")
    expect(page.locator("#save-status.conflict")).to_be_visible()
    check("review, conflict")
    page.keyboard.press("?")
    check("review, shortcut help")

    page.context.clear_cookies()
    log_in(page, url, "rita")
    page.goto(f"{url}/annotation/staff/studies/")
    check("study list")
    page.goto(f"{url}/annotation/staff/studies/{work['target'].pk}/")
    check("study dashboard")
    page.goto(f"{url}/annotation/staff/assignments/{work['submitted'].public_id}/")
    check("assignment page")
    page.context.close()
    assert {name: problems for name, problems in found.items() if problems} == {}


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize(
    ("width", "height", "text_size"),
    [(1366, 768, "largest"), (768, 1024, "largest"), (1920, 1080, "medium")],
)
def test_no_serious_accessibility_violation_on_the_review_screen_at_each_size_and_text(
    browser, live_server, work, theme, width, height, text_size, settings
):
    settings.REVIEW_SAVE_RETRY_SECONDS = (1,)  # the failed save is sent again every second
    User.objects.update(theme="system" if theme == "light" else "dark", text_size=text_size)
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme="light")
    page = context.new_page()
    url = live_server.url
    log_in(page, url, "nora")
    page.goto(f"{url}/annotation/items/{work['open'].public_id}/")
    saved(page)
    found = {"open": themed_violations(page, theme)}
    page.keyboard.press("?")
    expect(page.locator("#shortcut-help")).to_be_focused()
    found["shortcut help"] = themed_violations(page, theme)
    page.keyboard.press("Escape")
    expect(page.locator("#shortcut-help")).to_be_hidden()
    context.set_offline(True)
    page.keyboard.press("4")
    expect(page.locator("#save-status.unsent")).to_be_visible(timeout=25_000)  # a shared machine
    found["not saved"] = themed_violations(page, theme)
    context.set_offline(False)  # the next retry (within a second) saves it
    expect(page.locator("#save-status")).to_contain_text("✓ Saved", timeout=40_000)
    annotation_autosave(
        work["open"],
        draft=Draft(scores={"triage_quality": 2}),
        version=Assignment.objects.get(pk=work["open"].pk).version,
        actor=work["open"].annotator,
    )  # saved from elsewhere: this page is stale now, on the same field
    page.keyboard.press("5")
    expect(page.locator("#save-status.conflict")).to_be_visible()
    found["conflict"] = themed_violations(page, theme)
    context.close()
    assert {name: problems for name, problems in found.items() if problems} == {}


# A refused upload of each import page: the problems it lists (templates/_import_problems.html).
REFUSED_UPLOADS = {
    "conversation import": ("benchmark:run_import", b'{"id": "x"}\n'),
    "HealthBench import": ("rubric_lab:import", b"nope\n"),
}


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_no_serious_accessibility_violation_on_run_and_jury_pages_and_refused_imports(
    browser, live_server, theme
):
    adam = make_user("adam", Role.ADMIN)
    run = launched_run(enriched_set(size=2), name="Run under test")
    job = scored_job(size=2)
    hook = Webhook.objects.create(owner=adam, url="https://receiver.example/hook", secret="s")
    token_create(user=adam, name="notebook", scope="read", days=30)
    page = themed_page(browser, theme)
    url = live_server.url
    found = {}
    log_in(page, url, "adam")
    page.goto(url + reverse("benchmark:run", args=[run.pk]))
    page.get_by_role("button", name="Pause").click()
    expect(page.get_by_text("Paused: no new conversations start")).to_be_visible()
    found["run page, paused"] = themed_violations(page, theme)
    page.fill("input[name=cost_limit]", "lots")
    page.get_by_role("button", name="Resume").click()
    expect(page.get_by_text("not an amount")).to_be_visible()
    found["run page, resume refused"] = themed_violations(page, theme)
    for name, url_name, key in (
        ("scoring job", "jury:job", job.pk),
        ("jury report", "jury:report", job.pk),
        ("score a run", "jury:score_run", job.run.pk),
        ("case set", "benchmark:set", job.run.benchmark_set.pk),
        ("jury version", "jury:jury", job.jury.pk),
        ("juries", "jury:juries", None),
        ("leaderboard", "jury:leaderboard", None),
        ("webhooks", "webhooks:hooks", None),
        ("webhook", "webhooks:hook", hook.pk),
        ("API tokens", "api_tokens", None),
        ("two factors", "mfa_index", None),
        ("authenticator set-up", "mfa_activate_totp", None),
        # The rubric lab's launch forms, with their Batch boxes and forecast panels.
        ("rubric generation launch", "rubric_lab:pipeline_new", None),
        ("sensitivity studies", "rubric_lab:sensitivity_list", None),
        ("coverage runs", "rubric_lab:coverage_list", None),
        ("refine studies", "rubric_lab:refine_list", None),
        ("ablations", "rubric_lab:ablation_list", None),
    ):
        response = page.goto(url + reverse(url_name, args=[key] if key else None))
        assert response.ok, name  # an error page would pass axe too
        found[name] = themed_violations(page, theme)
    for name, (url_name, content) in REFUSED_UPLOADS.items():
        page.goto(url + reverse(url_name))
        upload = {"name": "bad.jsonl", "mimeType": "application/jsonl", "buffer": content}
        page.set_input_files("input[type=file]", files=[upload])
        page.get_by_role("button", name="Import").click()
        expect(page.locator("#import-problems")).to_contain_text("line 1")
        found[name] = themed_violations(page, theme)
    page.context.close()
    assert {name: problems for name, problems in found.items() if problems} == {}


def test_the_dark_theme_follows_the_system_setting(browser, live_server, work):
    context = browser.new_context(viewport={"width": 1024, "height": 768}, color_scheme="dark")
    page = context.new_page()
    log_in(page, live_server.url, "nora")
    page.goto(f"{live_server.url}/annotation/items/{work['open'].public_id}/")
    saved(page)
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(13, 17, 23)"
    assert violations(page) == []
    context.close()
