"""Uploading passages: every bad row is named and nothing is saved; good rows are searchable."""

import json

import pytest

from rubric_lab.engine.knowledge import CorpusError, parse_upload
from rubric_lab.models import KnowledgePassage, KnowledgeUpload
from rubric_lab.services import knowledge

GOOD_CSV = (
    "passage_id,topic,title,text,source,source_version,tags\n"
    "lab-gout,chronic_followup,Gout flares,A gout flare with fever or a hot swollen joint "
    "needs a same-day review to rule out infection.,Local protocol,3,gout;joint\n"
)
BAD_CSV = (
    "passage_id,topic,title,text,source,source_version\n"
    "lab-ok,triage,Fine,This row is perfectly fine and long enough to be a passage.,Src,1\n"
    "Bad Id,triage,Title,Too short,Src,1\n"
    "lab-ok,triage,Dup,This row repeats the first id and is otherwise long enough.,Src,1\n"
    "lab-empty,triage,,This row has no title but the text is long enough to pass.,,1\n"
)


def test_parse_names_every_bad_row_and_field():
    with pytest.raises(CorpusError) as error:
        parse_upload("bad.csv", BAD_CSV.encode())
    problems = error.value.problems
    assert any(p.startswith("row 2: passage_id 'Bad Id'") for p in problems)
    assert any(p.startswith("row 2: text must hold") for p in problems)
    assert any(p.startswith("row 3: passage_id 'lab-ok' repeats row 1") for p in problems)
    assert "row 4: title is missing or empty" in problems
    assert "row 4: source is missing or empty" in problems
    assert not any(p.startswith("row 1") for p in problems)


def test_json_and_yaml_uploads_are_read_too():
    text = "A passage long enough to be accepted as one."
    rows = [{"passage_id": "lab-x", "topic": "triage", "title": "X", "source": "S",
             "source_version": "2", "text": text}]  # fmt: skip
    assert parse_upload("x.json", json.dumps(rows).encode())[0].passage_id == "lab-x"
    yaml_text = "passages:\n  - " + json.dumps(rows[0])
    assert parse_upload("x.yaml", yaml_text.encode())[0].source_version == "2"


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("x.txt", b"a", "use a .csv"),
        ("x.json", b"{not json", "cannot be read"),
        ("x.json", b'{"a": 1}', "expected a list"),
        ("x.csv", b"passage_id,topic\n", "no passages"),
        ("x.csv", b"\xff\xfe\x00", "not UTF-8"),
        ("x.json", b'[{"passage_id": "a", "colour": "red"}]', "unknown column"),
    ],
)
def test_unreadable_files_are_refused_with_a_reason(name, content, message):
    with pytest.raises(CorpusError, match=message):
        parse_upload(name, content)


@pytest.mark.django_db
def test_a_bad_upload_saves_nothing():
    knowledge.knowledge_ensure_shipped()
    before = KnowledgePassage.objects.count()
    with pytest.raises(CorpusError):
        knowledge.knowledge_upload(filename="bad.csv", content=BAD_CSV.encode())
    assert KnowledgePassage.objects.count() == before
    assert not KnowledgeUpload.objects.exists()


@pytest.mark.django_db
def test_an_id_already_in_the_base_is_refused():
    with pytest.raises(CorpusError, match="row 1: passage_id 'rf-chest-pain' is already"):
        knowledge.knowledge_upload(
            filename="dup.csv", content=GOOD_CSV.replace("lab-gout", "rf-chest-pain").encode()
        )


@pytest.mark.django_db
def test_a_good_upload_is_saved_and_found_by_search():
    upload = knowledge.knowledge_upload(filename="good.csv", content=GOOD_CSV.encode())
    assert upload.passage_count == 1
    saved = KnowledgePassage.objects.get(passage_id="lab-gout")
    assert saved.origin == "uploaded" and saved.tags == ["gout", "joint"]
    hits = knowledge.knowledge_search("hot swollen joint gout", kind="bm25", k=1)
    assert hits[0].passage.passage_id == "lab-gout"


def test_fields_longer_than_their_columns_are_named_before_anything_is_saved():
    long_title = "T" * 201
    content = (
        "passage_id,topic,title,text,source,source_version\n"
        f"lab-long,triage,{long_title},A passage long enough to be read as guidance text.,"
        f"Src,{'9' * 41}\n"
    )
    with pytest.raises(CorpusError) as error:
        parse_upload("long.csv", content.encode())
    assert error.value.problems == [
        "row 1: title must hold at most 200 characters, not 201",
        "row 1: source_version must hold at most 40 characters, not 41",
    ]
