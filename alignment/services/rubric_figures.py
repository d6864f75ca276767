"""The figures of one rubric of a study report (scatter, bias, confusion), drawn in one place
for the rubric page (inline, its points linked to the disagreement report), the page's
downloads and the API's: a figure fetched either way is the same file, byte for byte."""

from __future__ import annotations

import zlib
from collections.abc import Callable

from matplotlib.figure import Figure

from alignment.services import figures
from alignment.services.reports import RubricSection
from annotation.models import Study

KINDS = ("scatter", "bias", "confusion")


def rubric_figure(
    study: Study, section: RubricSection, kind: str, *, link: Callable[[int], str] | None = None
) -> Figure:
    """Figure `kind` of the rubric. `link(item)` gives each scatter point its address (only
    the page's inline figure has one: a download holds no address of this site, so it is the
    same figure wherever the study's archive is imported)."""
    rubric_id = section.rubric.rubric_id
    title = f"{section.rubric.name} (n = {len(section.points)} conversations)"
    points = figures.in_study_order(
        section.points, study.items.values_list("conversation_id", flat=True)
    )
    if kind == "scatter":
        links = [link(item) for item in points["item"]] if link else None
        seed = zlib.crc32(rubric_id.encode())  # the rubric's, not an id an import renumbers
        return figures.scatter_figure(points, title=title, links=links, seed=seed)
    if kind == "bias":
        return figures.bias_figure(points, title=title)
    return figures.confusion_figure(section.agreement.confusion, title=title)


def figure_salt(section: RubricSection, kind: str) -> str:
    """The SVG's hash salt: nothing an import renumbers."""
    return f"{section.rubric.rubric_id}-{kind}"
