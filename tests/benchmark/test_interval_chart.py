"""The interval chart (jury subgroup sensitivity, rubric-lab sensitivity): intervals stay
inside the axis, an interval cut at the axis is marked there, and nothing drawn runs into the
value labels."""

import xml.etree.ElementTree as ET

from benchmark.charts import BAR_WIDTH, LABEL_WIDTH, Interval, interval_rows

SVG = "{http://www.w3.org/2000/svg}"
AXIS = (LABEL_WIDTH, LABEL_WIDTH + BAR_WIDTH)


def drawn(svg: str) -> dict:
    root = ET.fromstring(svg)
    lines = [(float(e.get("x1")), float(e.get("x2"))) for e in root.iter(f"{SVG}line")]
    dots = [(float(e.get("cx")), float(e.get("r"))) for e in root.iter(f"{SVG}circle")]
    marks = [
        [float(point.split(",")[0]) for point in e.get("points").split()]
        for e in root.iter(f"{SVG}polygon")
    ]
    notes = [float(e.get("x")) for e in root.iter(f"{SVG}text") if "(n=" in (e.text or "")]
    return {"lines": lines, "dots": dots, "marks": marks, "notes": notes}


def chart() -> str:
    rows = [
        Interval("two cases", 4.6, 3.1, 7.8, note="4.60 (n=2)"),  # past 5
        Interval("three cases", 1.4, -0.9, 2.6, flagged=True, note="1.40 (n=3)"),  # below 1
        Interval("many cases", 3.0, 2.8, 3.2, note="3.00 (n=40)"),
    ]
    return interval_rows(rows, band=(2.5, 3.5), domain=(1.0, 5.0), title="Severity")


def test_intervals_and_means_stay_inside_the_axis():
    shapes = drawn(chart())
    ends = [x for line in shapes["lines"] for x in line]
    assert ends and all(AXIS[0] <= x <= AXIS[1] for x in ends)
    assert all(AXIS[0] <= x <= AXIS[1] for x, _ in shapes["dots"])


def test_an_interval_cut_at_the_axis_is_marked_at_that_end_only():
    marks = drawn(chart())["marks"]
    assert len(marks) == 2
    right, left = marks
    assert max(right) == AXIS[1] and min(right) >= AXIS[0]  # points right, tip on the axis end
    assert min(left) == AXIS[0] and max(left) <= AXIS[1]


def test_value_labels_start_well_clear_of_everything_drawn():
    shapes = drawn(chart())
    furthest = max(
        [x2 + 1 for _, x2 in shapes["lines"]]  # half the stroke
        + [x + r for x, r in shapes["dots"]]
        + [max(points) for points in shapes["marks"]]
    )
    assert len(shapes["notes"]) == 3 and min(shapes["notes"]) - furthest >= 12
