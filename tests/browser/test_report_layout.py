"""Report pages stay readable in a real browser: intervals on one line, charts across the width."""

import pytest

from jury.services import juries
from tests.jury.services.builders import scored
from tests.support.builders import enriched_set, launched_run, played

# Counts the visual lines a cell's content occupies: rects that do not overlap vertically.
CELL_LINES = """cell => {
  const range = document.createRange();
  range.selectNodeContents(cell);
  const rects = [...range.getClientRects()].filter(r => r.width > 0).sort((a, b) => a.top - b.top);
  let lines = 0, bottom = -Infinity;
  for (const r of rects) {
    if (r.top >= bottom - 1) { lines += 1; bottom = r.bottom; }
    else { bottom = Math.max(bottom, r.bottom); }
  }
  return lines;
}"""

CHART_GRID = """() => {
  const grid = document.querySelector('.chart-grid');
  const [first, second] = grid.querySelectorAll('svg.chart');
  const a = first.getBoundingClientRect(), b = second.getBoundingClientRect();
  const scale = a.width / first.viewBox.baseVal.width;
  const label = first.querySelector('text[text-anchor=end]');
  return {
    sameRow: Math.abs(a.top - b.top) < 1,
    widthUsed: (b.right - a.left) / grid.getBoundingClientRect().width,
    labelPixels: parseFloat(getComputedStyle(label).fontSize) * scale,
  };
}"""


@pytest.fixture
def scored_job(transactional_db):
    run = played(
        launched_run(
            enriched_set(name="Layout set"),
            name="Layout run",
            models=("offline/careful", "offline/careless"),
        )
    )
    return scored(run, juries.jury_demo_ensure())


def test_the_model_table_keeps_intervals_on_one_line_and_toggles_pass_rates_in_place(
    page, login, people, scored_job, live_server
):
    login("rita")
    page.goto(f"{live_server.url}/jury/jobs/{scored_job.pk}/report/")
    page.evaluate("window.notReloaded = true")
    page.click("text=Show pass-rate columns")
    page.wait_for_selector("#model-table >> text=Hide pass-rate columns")
    assert page.evaluate("window.notReloaded") and page.url.endswith("?pass_rates=show")
    assert page.locator("#model-table th", has_text="pass % [95% CI]").count() == 6
    cells = page.locator("#model-table td.num")
    lines = [cells.nth(i).evaluate(CELL_LINES) for i in range(cells.count())]
    assert len(lines) == 2 * (2 + 6 * 2) and set(lines) == {1}
    assert page.console_errors == []


def test_sensitivity_charts_sit_side_by_side_with_legible_labels(
    page, login, people, scored_job, live_server
):
    login("rita")
    page.goto(f"{live_server.url}/jury/jobs/{scored_job.pk}/sensitivity/")
    layout = page.evaluate(CHART_GRID)
    assert layout["sameRow"] and layout["widthUsed"] > 0.9
    assert layout["labelPixels"] >= 11.5
