"""The documentation's walk-through of the rubric lab's commands (docs/reference/rubric-lab/
reproduce.md) runs as the dry run it describes: its commands in its order, with
the models it names for a dry run, each job played in the command's own process (--inline).

The walk-through names objects by the ids its text gives them (run 7, jobs 11 to 13, coverage
run 1, study 1); here each id stands for the object the matching command made."""

import re
import shlex
from pathlib import Path

import pytest
from django.core.management import call_command

from benchmark.models import Run
from rubric_lab.models import CoverageRun, GenerationJob, SensitivityStudy
from tests.rubric_lab.healthbench_rows import IDEAL_ONLY, MULTI_TURN, SINGLE_TURN, jsonl

pytestmark = pytest.mark.django_db(transaction=True)

WALKTHROUGH = Path(__file__).resolve().parents[2] / "docs/reference/rubric-lab/reproduce.md"
# What each command made, in the order the walk-through's text numbers them.
MADE = {
    "lab_import": ("run", Run, [7]),
    "lab_generate": ("job", GenerationJob, [11, 12, 13]),
    "lab_coverage": ("coverage", CoverageRun, [1]),
    "lab_sensitivity": ("study", SensitivityStudy, [1]),
}
# Which kind of object an argument names.
POSITIONAL = {"lab_generate": "run", "lab_sensitivity": "run", "lab_coverage": "job"}
OPTIONS = {"--generation-job": "job", "--compare": "coverage"}
EXPORTED = {"coverage": "coverage", "sensitivity": "study"}


def walkthrough() -> tuple[dict[str, str], list[list[str]]]:
    """The dry run's variables and each command's arguments (after `manage.py`)."""
    section = WALKTHROUGH.read_text(encoding="utf-8")
    dry_run = re.search(r"For a dry run.*?set `([^`]+)`", section, re.DOTALL).group(1)
    variables = dict(pair.split("=", 1) for pair in dry_run.split())
    block = section.split("```", 2)[1]
    lines = [line for line in block.splitlines() if line.strip()]
    assert set(dict(p.split("=", 1) for p in lines[0].split())) == set(variables)
    commands = [shlex.split(line, comments=True)[2:] for line in lines[1:]]
    return variables, commands


def test_the_docs_walkthrough_runs_as_a_dry_run(tmp_path):
    variables, commands = walkthrough()
    subset = tmp_path / "subset.jsonl"
    subset.write_text(jsonl(IDEAL_ONLY, SINGLE_TURN, MULTI_TURN), encoding="utf-8")
    ids: dict[tuple[str, int], int] = {}
    made = {name: iter(numbers) for name, (_, _, numbers) in MADE.items()}

    for words in commands:
        name = words[0]
        arguments = [variables.get(word.removeprefix("$"), word) for word in words[1:]]
        arguments = [str(subset) if word == "subset.jsonl" else word for word in arguments]
        arguments = _with_ids(name, arguments, ids)
        if "--out" in arguments:
            at = arguments.index("--out") + 1
            arguments[at] = str(tmp_path / arguments[at])
        if name in POSITIONAL:
            arguments.append("--inline")
        call_command(name, *arguments)
        if name in MADE:
            kind, model, _ = MADE[name]
            number = next(made[name], None)
            if number is not None:
                ids[(kind, number)] = model.objects.order_by("-pk").first().pk

    assert SensitivityStudy.objects.get().status == "finished"
    assert CoverageRun.objects.count() == 3 and GenerationJob.objects.count() == 3
    assert (tmp_path / "coverage.tex").exists() and (tmp_path / "sensitivity.csv").exists()


def _with_ids(name: str, arguments: list[str], ids: dict) -> list[str]:
    """The walk-through's ids replaced by those of the objects made here."""
    out = list(arguments)
    if name in POSITIONAL:
        out[0] = str(ids[(POSITIONAL[name], int(out[0]))])
    if name == "lab_export":
        out[1] = str(ids[(EXPORTED[out[0]], int(out[1]))])
    for option, kind in OPTIONS.items():
        if option in out:
            at = out.index(option) + 1
            out[at] = str(ids[(kind, int(out[at]))])
    return out
