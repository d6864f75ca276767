"""Keys out of the log and the database, once for the whole process.

Every log record is redacted where it is made (benchmark.engine.providers.redaction): a record
factory, installed with the logging configuration in every process Django sets up (web
server, workers, management commands), sees every record of every logger. A filter would not:
on a logger it misses the records of its child loggers, and on a handler it is dropped when
Celery replaces the root logger's handlers in a worker.
"""

from __future__ import annotations

import logging
import logging.config

from benchmark.engine.providers.redaction import redact_record
from benchmark.redaction import configured_secrets


def configure_logging(logging_settings: dict) -> None:
    """settings.LOGGING_CONFIG: the dictConfig Django would apply, then redaction of every
    record."""
    logging.config.dictConfig(logging_settings)
    previous = logging.getLogRecordFactory()
    if getattr(previous, "redacts", False):  # set up twice in one process
        return

    def redacted_record(*args, **kwargs) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        redact_record(record, configured_secrets())
        return record

    redacted_record.redacts = True
    logging.setLogRecordFactory(redacted_record)
