"""Text redacted on its way into the database (llm.redaction)."""

from django.db import models

from llm.redaction import redact_configured


class RedactedTextField(models.TextField):
    """Text that may quote a provider (failure reasons, unusable raw answers): anything
    key-like and the configured keys are removed on every way into the database - save(),
    update() and bulk_create() - behind `failure_text`, which already made it plain.

    The column is a plain TextField (see deconstruct): redaction is a rule of the code, not of
    the schema, so no migration follows from using it.
    """

    def get_db_prep_save(self, value, connection):
        if isinstance(value, str) and value:
            value = redact_configured(value)
        return super().get_db_prep_save(value, connection)

    def deconstruct(self):
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.TextField", args, kwargs
