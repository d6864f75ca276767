"""A JSON column read as text and decoded in one call (common.json_columns) gives the values
the JSONField gives row by row, on either database."""

import pytest

from audit.models import AuditEvent
from audit.services import audit_record
from common.json_columns import json_as_text, json_values

pytestmark = pytest.mark.django_db


def test_texts_decode_in_order_with_nulls_as_none():
    texts = ['{"a": 1}', None, "[1, 2.5]", '"t\\u00e9xt"', "null", "3"]
    assert json_values(texts) == [{"a": 1}, None, [1, 2.5], "t\u00e9xt", None, 3]
    assert json_values([]) == []


def test_a_column_read_as_text_decodes_to_what_the_field_gives():
    documents = [
        {"scores": {"safety": 4, "empathy": None}, "name": "Zoë", "nested": [1, 2.5, True]},
        {},
    ]
    for document in documents:
        audit_record(actor=None, action="test.json", target=None, after=document)
    rows = AuditEvent.objects.filter(action="test.json").order_by("pk")
    expected = list(rows.values_list("after", flat=True))
    texts = rows.annotate(text=json_as_text("after")).values_list("text", flat=True)
    assert json_values(texts) == expected == documents
