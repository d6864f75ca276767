"""Clinicians at work, for locust: each user is one annotator with their own session.

An annotator logs in, opens the study, asks for the next item, loads the review screen (whose
htmx heartbeat fires on load and every HEARTBEAT seconds), scores a rubric with feedback every
2-5 s through the real autosave endpoint with the version it last saw (the same fields and
headers htmx sends), submits when every rubric is scored and goes on to the next item. Each
works for the plan's `work_seconds` from their own login (a slow login on a busy machine does
not eat into the work) and leaves between two steps, never mid-request; when the last one
leaves, locust stops.

The harness (bench/load/harness.py) writes the plan this file reads from $LOAD_PLAN: the
annotators' logins, the study's URLs and where to log. Two logs come back, one JSON object a
line: every request (name, status, milliseconds, error) and every annotation write (sent, then
acknowledged), from which the harness counts errors and lost autosaves.

Any answer other than the one the page expects is a locust failure, and so an error: a 409
conflict cannot happen with one tab per annotator, so it is one.
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
import time
from pathlib import Path

from locust import HttpUser, events, task
from locust.exception import StopUser

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.load.review_form import (  # noqa: E402
    PageError,
    ReviewForm,
    htmx_headers,
    review_form,
    saved_version,
)

PLAN = json.loads(Path(os.environ["LOAD_PLAN"]).read_text(encoding="utf-8"))
ANNOTATORS = iter(PLAN["annotators"])
URLS = PLAN["urls"]
WORK_SECONDS = PLAN["work_seconds"]
SAVE_WAIT = PLAN.get("autosave_wait_seconds", [2, 5])
HEARTBEAT = PLAN.get("heartbeat_seconds", 30)
REQUEST_TIMEOUT = 120
CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
WORDS = (
    "asked about red flags", "confirmed the slot first", "booked without asking",
    "missed the allergy", "clear next steps", "rushed the triage", "good safety netting",
    "checked the pharmacy", "vague about timing", "kind and concise",
)  # fmt: skip

_request_log = open(PLAN["request_log"], "a", buffering=1, encoding="utf-8")  # noqa: SIM115
_save_log = open(PLAN["save_log"], "a", buffering=1, encoding="utf-8")  # noqa: SIM115
_departed = []  # annotators who finished their work (or could not start it)


@events.request.add_listener
def _log_request(request_type, name, response_time, response, exception, **kwargs):
    status = getattr(response, "status_code", None)
    error = None if exception is None else str(exception)[:300]
    record = {"name": name, "ms": response_time, "status": status, "error": error}
    _request_log.write(json.dumps(record) + "\n")


class Annotator(HttpUser):
    def on_start(self) -> None:
        person = next(ANNOTATORS, None)
        if person is None:
            raise StopUser()  # more users than annotators: the extra ones stay idle
        self.username = person["username"]
        self.form: ReviewForm | None = None
        self.page_url = ""
        self.last_heartbeat = 0.0
        self.writes = 0
        self._login(person["password"])
        self.work_until = time.monotonic() + WORK_SECONDS
        self._get(URLS["home"], "home")
        self.queue_token = self._csrf_of(self._get(URLS["queue"], "queue page"))

    def wait_time(self) -> float:
        # Straight on to the item after a navigation; then a clinician's pace between saves.
        return 0 if self.form is None else random.uniform(*SAVE_WAIT)

    @task
    def step(self) -> None:
        if time.monotonic() >= self.work_until:
            self._leave()
        if self.form is None:
            self._open_next()
        elif time.monotonic() - self.last_heartbeat >= HEARTBEAT:
            self._heartbeat()
        elif self.form.complete:
            self._submit()
        else:
            self._autosave()

    # --- the pages ---------------------------------------------------------------------------

    def _login(self, password: str) -> None:
        token = self._csrf_of(self._get(URLS["login"], "login page"))
        data = {"username": self.username, "password": password, "csrfmiddlewaretoken": token}
        with self._post(URLS["login"], "login", data=data) as answer:
            if answer.status_code != 302:
                answer.failure(f"login of {self.username} answered {_answer_of(answer)}")
                self._leave()
            answer.success()

    def _open_next(self) -> None:
        data = {"csrfmiddlewaretoken": self.queue_token}
        with self._post(URLS["next"], "next item", data=data) as answer:
            location = answer.headers.get("Location", "")
            if answer.status_code != 302:
                answer.failure(f"next item answered {_answer_of(answer)}")
                self._leave()  # no way on to an item: asking again at once would only spin
            answer.success()
        self._follow(location)

    def _follow(self, location: str) -> None:
        """After "next item" or a submit: the next review screen, or the queue when done."""
        if "/items/" not in location:
            self._leave()  # nothing left for this annotator in the study
        self.page_url = location
        with self._get_checked(location, "review page") as answer:
            try:
                self.form = review_form(answer.text)
            except PageError as error:
                answer.failure(str(error))
                self._leave()
            answer.success()
        self._heartbeat()  # hx-trigger="load"

    def _heartbeat(self) -> None:
        self.last_heartbeat = time.monotonic()
        headers = htmx_headers(self.form, self.page_url, target="heartbeat", trigger="heartbeat")
        with self._post(self.form.heartbeat_url, "heartbeat", headers=headers) as answer:
            self._expect(answer, 204)

    def _autosave(self) -> None:
        form = self._changed(self.form)
        headers = htmx_headers(form, self.page_url, target="save-status", trigger="annotation-form")
        self._log_save("sent", form)
        with self._post(
            form.autosave_url, "autosave", data=form.post_data(), headers=headers
        ) as answer:
            if not self._expect(answer, 200):
                return
            try:
                self.form = form.with_version(saved_version(answer.text))
            except PageError as error:
                answer.failure(str(error))
                return
        self._log_save("ack", self.form)

    def _submit(self) -> None:
        form = self.form
        self._log_save("sent", form, submit=True)
        with self._post(form.submit_url, "submit", data=form.post_data()) as answer:
            location = answer.headers.get("Location", "")
            if answer.status_code != 302:
                answer.failure(f"submit answered {_answer_of(answer)}")
                return
            answer.success()
        self._log_save("ack", form, submit=True)
        self.form = None
        self._follow(location)

    # --- helpers -----------------------------------------------------------------------------

    def _leave(self) -> None:
        _departed.append(self.username)
        if len(_departed) == len(PLAN["annotators"]):
            self.environment.runner.quit()  # the last one out: the window is over
        raise StopUser()

    def _changed(self, form: ReviewForm) -> ReviewForm:
        """A clinician's next change: mostly a rubric still unscored, sometimes one to revise;
        a score and a feedback sentence, now and then the overall comment."""
        unscored = [r for r in form.rubric_ids if r not in form.scores]
        rubric_id = random.choice(
            unscored if unscored and random.random() < 0.75 else form.rubric_ids
        )
        self.writes += 1
        text = f"{random.choice(WORDS)} ({self.username} #{self.writes})"
        form = form.with_score(rubric_id, random.randint(1, 5), text)
        if random.random() < 0.15:
            form = form.with_comment(f"Overall: {random.choice(WORDS)} ({self.writes})")
        return form

    def _log_save(self, kind: str, form: ReviewForm, *, submit: bool = False) -> None:
        record = {
            "kind": kind,
            "assignment": form.autosave_url,
            "version": form.version,
            "submit": submit,
            "draft": form.draft(),
        }
        _save_log.write(json.dumps(record) + "\n")

    def _expect(self, answer, status: int) -> bool:
        if answer.status_code == status:
            answer.success()
            return True
        answer.failure(f"expected {status}, got {_answer_of(answer)}")
        return False

    def _csrf_of(self, text: str) -> str:
        match = CSRF_INPUT.search(text)
        return match.group(1) if match else ""

    def _get(self, url: str, name: str) -> str:
        with self._get_checked(url, name) as answer:
            self._expect(answer, 200)
            return answer.text

    def _get_checked(self, url: str, name: str):
        return self.client.get(
            url, name=name, catch_response=True, allow_redirects=False, timeout=REQUEST_TIMEOUT
        )

    def _post(self, url: str, name: str, *, data=None, headers=None):
        return self.client.post(
            url, name=name, data=data, headers=headers, catch_response=True,
            allow_redirects=False, timeout=REQUEST_TIMEOUT,
        )  # fmt: skip


def _answer_of(answer) -> str:
    """A status for the error list; no status (0) means the connection failed: say how."""
    if answer.status_code == 409:
        return "an edit conflict (409)"
    if not answer.status_code:
        return f"no answer ({getattr(answer, 'error', None)!r})"
    return str(answer.status_code)
