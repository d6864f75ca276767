"""The review screen as the load script's annotators see it: read from the page's HTML, changed
like a clinician would, and posted as the whole form (no Django imports).

The whole form in document order, as the browser submits `#annotation-form`: the CSRF field,
`version`, then per rubric the checked `score-<id>` radio (absent while unscored),
`feedback-<id>` and `links-<id>`, then `overall_comment`. The page's own autosave sends only the
fields it changed; the whole form at the current version is a save the server takes the same
way, and the heavier one. Every request also carries the CSRF token from `<body hx-headers>`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser

FORM_ID = "annotation-form"
SCORE, FEEDBACK, LINKS = "score-", "feedback-", "links-"


class PageError(ValueError):
    """The page is not the editable review screen the script expects."""


@dataclass(frozen=True)
class ReviewForm:
    """What one review page shows: where to post, and the annotation as it stands."""

    autosave_url: str
    submit_url: str
    heartbeat_url: str
    csrf_token: str
    version: int
    rubric_ids: tuple[str, ...]
    scores: dict[str, int] = field(default_factory=dict)
    feedback: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    overall_comment: str = ""

    @property
    def complete(self) -> bool:
        return all(rubric_id in self.scores for rubric_id in self.rubric_ids)

    def with_score(self, rubric_id: str, score: int, feedback: str) -> ReviewForm:
        return replace(
            self,
            scores={**self.scores, rubric_id: score},
            feedback={**self.feedback, rubric_id: feedback},
        )

    def with_comment(self, comment: str) -> ReviewForm:
        return replace(self, overall_comment=comment)

    def with_version(self, version: int) -> ReviewForm:
        return replace(self, version=version)

    def post_data(self) -> list[tuple[str, str]]:
        """The form fields in the order the browser sends them."""
        data = [("csrfmiddlewaretoken", self.csrf_token), ("version", str(self.version))]
        for rubric_id in self.rubric_ids:
            if rubric_id in self.scores:
                data.append((SCORE + rubric_id, str(self.scores[rubric_id])))
            data.append((FEEDBACK + rubric_id, self.feedback.get(rubric_id, "")))
            data.append((LINKS + rubric_id, self.links.get(rubric_id, "")))
        data.append(("overall_comment", self.overall_comment))
        return data

    def draft(self) -> dict:
        """What the server should store from this form (its `draft_from_post` reading)."""
        return {
            "scores": dict(self.scores),
            "feedback": {r: text.strip() for r, text in self.feedback.items() if text.strip()},
            "event_links": {
                r: list(dict.fromkeys(v.split())) for r, v in self.links.items() if v.split()
            },
            "overall_comment": self.overall_comment.strip(),
        }


def htmx_headers(form: ReviewForm, page_url: str, *, target: str, trigger: str) -> dict:
    return {
        "HX-Request": "true",
        "HX-Current-URL": page_url,
        "HX-Target": target,
        "HX-Trigger": trigger,
        "X-CSRFToken": form.csrf_token,
    }


def review_form(html: str) -> ReviewForm:
    """Read the editable review screen; PageError when the page is anything else."""
    parser = _FormParser()
    parser.feed(html)
    parser.close()
    fields, attributes = parser.fields, parser.attributes
    urls = ("autosave_url", "submit_url", "heartbeat_url")
    missing = [name for name in urls if not attributes.get(name)]
    if missing or "version" not in dict(fields):
        raise PageError(f"not an editable review page (missing {', '.join(missing) or 'version'})")
    values = dict(fields)
    rubric_ids = tuple(name[len(FEEDBACK) :] for name, _ in fields if name.startswith(FEEDBACK))
    return ReviewForm(
        autosave_url=attributes["autosave_url"],
        submit_url=attributes["submit_url"],
        heartbeat_url=attributes["heartbeat_url"],
        csrf_token=attributes.get("csrf_header") or values.get("csrfmiddlewaretoken", ""),
        version=int(values["version"]),
        rubric_ids=rubric_ids,
        scores={r: int(values[SCORE + r]) for r in rubric_ids if SCORE + r in values},
        feedback={r: values[FEEDBACK + r] for r in rubric_ids if values[FEEDBACK + r]},
        links={r: values[LINKS + r] for r in rubric_ids if values.get(LINKS + r)},
        overall_comment=values.get("overall_comment", ""),
    )


VERSION_INPUT = re.compile(r'<input[^>]*\bid="version"[^>]*\bvalue="(\d+)"')


def saved_version(autosave_answer: str) -> int:
    """The version an autosave answer swaps into the page (its out-of-band `#version`)."""
    match = VERSION_INPUT.search(autosave_answer)
    if match is None:
        raise PageError("the autosave answer holds no new version")
    return int(match.group(1))


class _FormParser(HTMLParser):
    """Collects #annotation-form's fields in document order, as the browser serialises them,
    plus the URLs and the CSRF header the page's attributes name."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.fields: list[tuple[str, str]] = []
        self.attributes: dict[str, str] = {}
        self._depth = 0  # open <form> elements inside #annotation-form (0: outside)
        self._textarea: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {name: value or "" for name, value in attrs}
        if tag == "body" and "hx-headers" in attr:
            self.attributes["csrf_header"] = json.loads(attr["hx-headers"]).get("X-CSRFToken", "")
        elif tag == "div" and attr.get("id") == "heartbeat":
            self.attributes["heartbeat_url"] = attr.get("hx-post", "")
        elif tag == "form" and (self._depth or attr.get("id") == FORM_ID):
            if self._depth == 0:
                self.attributes["autosave_url"] = attr.get("data-autosave", "")
                self.attributes["submit_url"] = attr.get("action", "")
            self._depth += 1
        elif self._depth and tag == "input":
            self._input(attr)
        elif self._depth and tag == "textarea":
            self._textarea, self._text = attr.get("name", ""), []

    def _input(self, attr: dict) -> None:
        kind, name = attr.get("type", "text"), attr.get("name")
        if not name or "disabled" in attr:
            return
        if kind in ("radio", "checkbox") and "checked" not in attr:
            return
        self.fields.append((name, attr.get("value", "")))

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea" and self._textarea is not None:
            # The HTML parser drops the newline right after <textarea>, as browsers do.
            text = "".join(self._text)
            self.fields.append((self._textarea, text[1:] if text.startswith("\n") else text))
            self._textarea = None
        elif tag == "form" and self._depth:
            self._depth -= 1
