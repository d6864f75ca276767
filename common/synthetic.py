"""How an export says it holds synthetic clinicians' scores (the demo's scripted simulated
clinicians, README "synthetic"): a file holding any says so three times, so the mark survives
whatever a reader does with it - in its file name (`synthetic_file_name`), in a line or the
metadata at its top (`NOTE`: a CSV comment line, a Markdown quote, the LaTeX caption, Parquet
key-value metadata), and in a column of every row (`COLUMN`, "yes" / "no")."""

from __future__ import annotations

from pathlib import PurePosixPath

FILE_MARK = "-synthetic"
COLUMN = "Synthetic clinicians"
NOTE = (
    "Includes scores of synthetic clinicians (scripted simulated clinicians, not people); "
    f"the column '{COLUMN}' marks the rows they are in."
)


def synthetic_file_name(name: str) -> str:
    """`study-3-agreement.csv` -> `study-3-agreement-synthetic.csv` (every suffix kept)."""
    path = PurePosixPath(name)
    stem = path.name.removesuffix("".join(path.suffixes))
    return f"{stem}{FILE_MARK}{''.join(path.suffixes)}"


def yes_no(value: bool) -> str:
    return "yes" if value else "no"
