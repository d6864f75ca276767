"""Alignment figures and tables for a paper: every PNG download is 300 dpi (read back from the
file), and the agreement table in LaTeX has its caption, label and package note."""

import io

import pytest
from django.core.cache import cache
from django.urls import reverse
from PIL import Image

from tests.support.latex import latex_floats

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()


def png_of(response) -> Image.Image:
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    return Image.open(io.BytesIO(response.content))


@pytest.mark.parametrize(("kind", "inches"), [("scatter", (5.0, 4.4)), ("bias", (5.0, 3.6)),
                                              ("confusion", (4.2, 3.9))])  # fmt: skip
def test_every_rubric_figure_downloads_as_a_300_dpi_png(
    researcher_client, annotated_study, kind, inches
):
    url = reverse("alignment:figure", args=[annotated_study.pk, "clinical_safety", kind, "png"])
    image = png_of(researcher_client.get(url))
    assert image.info["dpi"] == pytest.approx((300, 300), abs=0.01)
    assert image.size == (round(inches[0] * 300), round(inches[1] * 300))


@pytest.mark.parametrize("kind", ["rubrics", "annotators"])
def test_the_calibration_trend_downloads_as_a_300_dpi_png(researcher_client, annotated_study, kind):
    url = reverse("alignment:trend_figure", args=[annotated_study.project.pk, kind, "png"])
    image = png_of(researcher_client.get(url))
    assert image.info["dpi"] == pytest.approx((300, 300), abs=0.01)
    assert image.size == (round(8.4 * 300), round(3.6 * 300))


def test_the_agreement_table_in_latex_is_captioned_labelled_and_fits_the_page(
    researcher_client, annotated_study
):
    url = reverse("alignment:export", args=[annotated_study.pk, "tex"])
    (table,) = latex_floats(researcher_client.get(url).content.decode())
    assert annotated_study.name in table.caption and "95\\% bootstrap" in table.caption
    assert table.label == f"tab:study-{annotated_study.pk}-agreement"
    assert table.environment == "sidewaystable" and table.columns == 14 and table.rows == 6
