"""Figures render in every format; inline SVG links points to their conversations."""

import pandas as pd
import pytest
from django.core.cache import cache
from django.urls import reverse

from alignment.services import figures

POINTS = pd.DataFrame(
    {"clinician_mean": [1.0, 2.5, 4.0, 5.0], "jury": [1.5, 4.5, 4.0, 3.0], "model": list("aabb")}
)


def test_each_figure_renders_as_svg_png_and_pdf():
    made = [
        figures.scatter_figure(POINTS, title="Clinical Safety", links=list("wxyz")),
        figures.bias_figure(POINTS, title="Clinical Safety"),
        figures.confusion_figure([[1, 0, 0, 0, 0]] * 5, title="Clinical Safety"),
        figures.trend_figure(
            ["Round 1", "Target"],
            {"CS": [(0.5, 0.3, 0.7), (None,) * 3]},
            {"CS": [2, 0]},
            title="trend",
        ),  # fmt: skip
    ]
    for figure in made:
        assert figures.render(figure, "svg", salt="s").startswith(b"<svg")
        assert figures.render(figure, "pdf", salt="s").startswith(b"%PDF")
        assert figures.render(figure, "png", salt="s").startswith(b"\x89PNG")


def test_an_unknown_format_is_refused():
    with pytest.raises(ValueError, match="svg, png, pdf"):
        figures.render(figures.bias_figure(POINTS, title="x"), "jpg", salt="s")


def test_the_inline_scatter_links_every_point_and_scales():
    markup = figures.inline_svg(
        figures.scatter_figure(POINTS, title="t", links=[f"/item/{i}" for i in range(4)]), salt="a"
    )
    assert all(f'xlink:href="/item/{i}"' in markup for i in range(4))
    assert 'style="width:100%' in markup
    assert "<script" not in markup


def test_two_figures_on_one_page_do_not_share_element_ids():
    import re

    def ids(salt):
        markup = figures.inline_svg(figures.bias_figure(POINTS, title="t"), salt=salt)
        return set(re.findall(r'id="(p[0-9a-f]+)"', markup))

    assert ids("one") and not ids("one") & ids("two")


def test_an_empty_rubric_still_draws_a_figure_that_says_so():
    empty = POINTS.iloc[0:0]
    markup = figures.render(figures.scatter_figure(empty, title="t", links=[]), "svg", salt="e")
    assert figures.NO_DATA.encode() in markup


@pytest.mark.django_db
def test_the_figure_downloads_answer_with_their_content_types(researcher_client, annotated_study):
    cache.clear()
    for kind in ("scatter", "bias", "confusion"):
        for fmt, start in (("svg", b"<svg"), ("pdf", b"%PDF"), ("png", b"\x89PNG")):
            url = reverse(
                "alignment:figure", args=[annotated_study.pk, "triage_quality", kind, fmt]
            )
            response = researcher_client.get(url)
            assert response.status_code == 200, (kind, fmt)
            assert response["Content-Type"] == figures.FORMATS[fmt]
            assert response.content.startswith(start)
    bad = reverse("alignment:figure", args=[annotated_study.pk, "triage_quality", "pie", "svg"])
    assert researcher_client.get(bad).status_code == 404
