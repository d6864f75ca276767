"""Every judge score of a scoring job as CSV, JSONL or Parquet, streamed: rows are read in
batches of ids and written as they come, so a job of 144,000 scores is never held in memory
(as text, rows or a table)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from benchmark.engine.parquet_export import CONTENT_TYPE as PARQUET
from benchmark.engine.parquet_export import Column, parquet_chunks
from common.csv_export import rows_csv_stream
from jury.models import ScoringJob

BATCH = 5000
COLUMNS = (
    Column("score_id", "int"),
    Column("jury"),  # the version that scored it ("... · v2"): calibrated versions differ
    Column("conversation"),
    Column("model"),
    Column("case", "int"),
    Column("repetition", "int"),
    Column("rubric_id"),
    Column("rubric_version", "int"),
    Column("judge_index", "int"),
    Column("judge_model"),
    Column("status"),
    Column("score", "int"),
    Column("explanation"),
    Column("invalid_reason"),
    Column("input_tokens", "int"),
    Column("output_tokens", "int"),
    Column("cost_usd", "float"),
    Column("cached", "bool"),
)
NAMES = tuple(column.name for column in COLUMNS)
FIELDS = {  # column -> JudgeScore value path, in column order (the jury is the job's)
    "score_id": "pk",
    "conversation": "conversation__public_id",
    "model": "conversation__run_agent__label",
    "case": "conversation__entry__index",
    "repetition": "conversation__repetition",
    "rubric_id": "rubric_version__rubric_id",
    "rubric_version": "rubric_version__version",
    "judge_index": "judge_index",
    "judge_model": "judge_model",
    "status": "status",
    "score": "score",
    "explanation": "explanation",
    "invalid_reason": "invalid_reason",
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cost_usd": "cost_usd",
    "cached": "cached",
}
FORMATS = {  # suffix -> content type
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson",
    "parquet": PARQUET,
}


def judge_score_rows(job: ScoringJob) -> Iterator[dict]:
    """The job's scores in id order, a batch of ids at a time."""
    scores = job.scores.order_by("pk").values_list(*FIELDS.values())
    jury = job.jury.name  # one job, one jury: read once, written on every row
    last = 0
    while batch := list(scores.filter(pk__gt=last)[:BATCH]):
        for values in batch:
            read = dict(zip(FIELDS, values, strict=True))
            read["conversation"] = str(read["conversation"])
            yield {name: jury if name == "jury" else read[name] for name in NAMES}
        last = batch[-1][0]


def judge_scores_export(job: ScoringJob, fmt: str) -> Iterator[str] | Iterator[bytes]:
    rows = judge_score_rows(job)
    if fmt == "csv":
        return rows_csv_stream(([row[name] for name in NAMES] for row in rows), header=NAMES)
    if fmt == "jsonl":
        return (json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows)
    if fmt == "parquet":
        return parquet_chunks(rows, COLUMNS)
    raise ValueError(f"export format must be one of {', '.join(FORMATS)}, not {fmt!r}")
