"""Model fields: a JSON value stored zlib-compressed.

Sandbox snapshots are about 50 KB of highly repetitive slot data each, and every conversation
keeps two; compressed they take about a tenth of that (a 12,000-conversation run: ~120 MB
instead of ~1.2 GB) for a fraction of a millisecond. Nothing queries inside them.
"""

import json
import zlib

from django.db import models

from benchmark.engine.sandbox.state import EncodedJSON

COMPRESSION_LEVEL = 3


class CompressedJSONField(models.BinaryField):
    def from_db_value(self, value, expression, connection):
        return None if value is None else _decode(value)

    def to_python(self, value):
        return _decode(value) if isinstance(value, bytes | memoryview) else value

    def get_db_prep_value(self, value, connection, prepared=False):
        if value is None:
            return None
        if isinstance(value, EncodedJSON):  # a sandbox snapshot, encoded as this would
            text = str(value)
        else:
            text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        packed = zlib.compress(text.encode("utf-8"), COMPRESSION_LEVEL)
        return super().get_db_prep_value(packed, connection, prepared)

    def value_to_string(self, obj):
        return json.dumps(self.value_from_object(obj))


def _decode(value: bytes | memoryview):
    return json.loads(zlib.decompress(bytes(value)).decode("utf-8"))
