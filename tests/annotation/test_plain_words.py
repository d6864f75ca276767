"""Codes in plain words: the data file, the fallback for codes it does not list, the readable
layout of tool calls and results, and the annotator's pages, where no snake_case code is left
for a clinician to read."""

import re
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from annotation.engine.plain_words import (
    PLAIN_WORDS_FILE,
    field_name,
    load_plain_words,
    plain,
    readable,
    value_words,
)
from annotation.services import queue
from annotation.templatetags.annotation_review import readable as readable_html
from benchmark.engine.distribution import default_distribution
from benchmark.engine.sandbox.specs import tool_specs

CODE = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")


def test_the_codes_the_issue_named_read_as_words():
    assert plain("young_adult") == "young adult"
    assert plain("under_renewal") == "under renewal (waiting for a provider)"
    assert plain("urgent_call") == "urgent call (phone or video today)"
    assert plain("non_binary") == "non-binary"
    assert plain("cis_female") == "cisgender woman"


def test_a_code_the_file_does_not_list_is_still_put_in_words():
    assert plain("symptom_assessment") == "symptom assessment"
    assert field_name("message_id") == "message ID"  # word by word
    assert plain("severe") == "severe" and plain(None) is None and plain(3) == 3


def test_only_codes_change_in_a_record_names_dates_and_ids_stay_as_they_are():
    assert value_words("under_renewal") == "under renewal (waiting for a provider)"
    for kept in ("slot-dr-02-20261202-0900", "2026-12-02", "Samuel Whitaker", "in-person"):
        assert value_words(kept) == kept
    assert value_words("provider") == "provider"  # a word, not a code: never replaced


def test_every_value_of_the_shipped_distribution_and_every_tool_reads_as_words():
    distribution = default_distribution()
    codes = {value for _, weights in distribution.weights for value in dict(weights)}
    codes |= {value for _, weights in distribution.subcategories for value in dict(weights)}
    codes |= {identity for _, _, identity in distribution.gender_identities}
    codes |= {spec.name for spec in tool_specs()}
    assert codes  # the check below covers something
    assert [code for code in codes if CODE.search(plain(code))] == []


def test_the_data_file_is_checked_when_loaded():
    assert load_plain_words(PLAIN_WORDS_FILE.read_text()).codes["young_adult"] == "young adult"
    with pytest.raises(ValueError, match="codes needs words for young_adult"):
        load_plain_words("codes:\n  young_adult: ''\n")
    with pytest.raises(ValueError, match="sections codes, fields, words only"):
        load_plain_words("labels:\n  a_b: c\n")


def test_a_tool_result_is_laid_out_with_plain_field_names():
    result = {
        "start_date": "2026-12-02",
        "slots": [
            {"slot_id": "slot-1", "appointment_type": "in-person", "refills_remaining": 2},
            {"slot_id": "slot-2", "appointment_type": "phone", "refills_remaining": 0},
        ],
        "status": "under_renewal",
    }
    node = readable(result)
    assert [name for name, _ in node.pairs] == ["start date", "slots", "status"]
    table = node.pairs[1][1]
    assert table.kind == "table"
    assert table.columns == ("slot ID", "appointment type", "refills left")
    assert table.rows[1] == ("slot-2", "phone", "0")
    assert node.pairs[2][1].text == "under renewal (waiting for a provider)"


def test_the_layout_escapes_what_the_model_wrote():
    html = readable_html('{"reason": "<script>alert(1)</script>"}')
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert readable_html("not JSON <b>") == '<div class="event-text">not JSON &lt;b&gt;</div>'


class VisibleText(HTMLParser):
    """The text a reader sees: no attributes, scripts or the conversation's own words (those
    elements hold text only, no tags)."""

    SKIPPED = {"script", "style", "title"}

    def __init__(self):
        super().__init__()
        self.parts, self.skipping = [], False

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        self.skipping = tag in self.SKIPPED or "event-text" in classes

    def handle_endtag(self, tag):
        self.skipping = False

    def handle_data(self, data):
        if not self.skipping:
            self.parts.append(data)


def visible_codes(html: str) -> set[str]:
    parser = VisibleText()
    parser.feed(html)
    return set(CODE.findall(" ".join(parser.parts)))


@pytest.mark.django_db
def test_an_annotator_reads_no_code_on_the_review_screen_or_the_queue(client, study, clinicians):
    me = clinicians[0]
    client.force_login(me)
    pages = {}
    for _ in range(3):  # a few items: different requests, care preferences, tools
        assignment = queue.next_assignment(study=study, annotator=me)
        pages[assignment.public_id] = client.get(
            reverse("annotation:review", args=[assignment.public_id])
        ).content.decode()
        queue.assignment_skip(assignment, reason="next", actor=me)
    pages["queue"] = client.get(reverse("annotation:queue", args=[study.pk])).content.decode()
    review = next(iter(pages.values()))
    assert 'class="event tool_call' in review and "<table" in review  # tools were laid out
    assert {name: visible_codes(html) for name, html in pages.items() if visible_codes(html)} == {}
