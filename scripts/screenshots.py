"""Take the documentation's screenshots from the demo, so they show the site as it is now.

    .venv/bin/python scripts/screenshots.py [--cases N]

Builds the demo (`manage.py demo --serve`) in a throwaway DATA_DIR (its own SQLite database and
queue), serves it on a free local port, logs in as the demo people in Debian's Chromium through
Playwright (as tests/browser/ do: never a downloaded browser) and writes every image of SHOTS
into docs/screenshots/. tests/foundation/test_docs.py checks that SHOTS and the
images the docs show are the same."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from common.chromium import CHROMIUM, CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
SERVE_DEADLINE_SECONDS = 1800  # installing and building the demo data: minutes on a busy machine


@dataclass(frozen=True)
class Shot:
    file: str  # under docs/screenshots/
    who: str  # a demo login
    view: str  # a key of VIEWS: how to reach the page
    width: int
    height: int
    dark: bool = False


SHOTS: tuple[Shot, ...] = (
    Shot("review-1440x900.png", "clinician", "review", 1440, 900),
    Shot("review-1024x768.png", "clinician", "review", 1024, 768),
    Shot("review-768x1024.png", "clinician", "review", 768, 1024),
    Shot("review-1440x900-dark.png", "clinician", "review", 1440, 900, dark=True),
    Shot("run-1440x900.png", "admin", "run", 1440, 900),
    Shot("agreement-report-1440x900.png", "researcher", "agreement_report", 1440, 900),
)

# The demo's objects the staff pages show, found in its database once it is built.
IDS_QUERY = """
import json
from annotation.models import Study
from benchmark.models import Run
print(json.dumps({
    "run": Run.objects.order_by("pk").first().pk,
    "target_study": Study.objects.get(name="Target study").pk,
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=None, help="demo set size (demo's default)")
    arguments = parser.parse_args()
    if not os.path.exists(CHROMIUM):
        sys.exit(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium).")
    with tempfile.TemporaryDirectory(prefix="carejury-screenshots-") as data_dir:
        environment = _demo_environment(data_dir)
        port = _free_port()
        demo, output = _demo_start(environment, port, arguments.cases, Path(data_dir))
        try:
            site = f"http://127.0.0.1:{port}"
            _wait_serving(demo, output, f"{site}/accounts/login/")
            passwords = _passwords(output.read_text())
            ids = json.loads(_manage(environment, "shell", "-c", IDS_QUERY).splitlines()[-1])
            _take(SHOTS, site, passwords, ids)
        except (SystemExit, Exception):
            print(f"The demo's output, last lines:\n{_tail(output)}", file=sys.stderr)
            raise
        finally:
            _demo_stop(demo)
    print(f"Wrote {len(SHOTS)} screenshots into {OUT.relative_to(ROOT)}/")


def _demo_environment(data_dir: str) -> dict[str, str]:
    # The embedded default whatever this shell points at: the screenshots show the demo.
    skipped = {"REDIS_URL", "DATABASE_URL", "SITE_URL", "APP_ENV"}
    environment = {k: v for k, v in os.environ.items() if k not in skipped}
    environment.update(DATA_DIR=data_dir, PYTHONUNBUFFERED="1")
    return environment


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _demo_start(environment: dict, port: int, cases: int | None, data_dir: Path):
    command = [sys.executable, "manage.py", "demo", "--serve", "--addr", f"127.0.0.1:{port}"]
    if cases is not None:
        command += ["--cases", str(cases)]
    output = data_dir / "demo.out"
    with open(output, "w") as out:
        demo = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=out, stderr=out)
    print(f"Building the demo in {data_dir} (log {output})...")
    return demo, output


def _wait_serving(demo: subprocess.Popen, output: Path, url: str) -> None:
    deadline = time.monotonic() + SERVE_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        if demo.poll() is not None:
            sys.exit(f"The demo stopped:\n{output.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    sys.exit(f"The demo did not serve {url} within {SERVE_DEADLINE_SECONDS} s.")


def _tail(output: Path, lines: int = 60) -> str:
    return "\n".join(output.read_text().splitlines()[-lines:])


def _passwords(demo_output: str) -> dict[str, str]:
    """The demo's logins as it prints them: `username clinician  password ...`."""
    rows = re.findall(r"username (\S+)\s+password (\S+)", demo_output)
    return dict(rows)


def _manage(environment: dict, *arguments: str) -> str:
    command = [sys.executable, "manage.py", *arguments]
    result = subprocess.run(
        command, cwd=ROOT, env=environment, capture_output=True, text=True, check=True
    )
    return result.stdout


def _demo_stop(demo: subprocess.Popen) -> None:
    if demo.poll() is None:
        demo.send_signal(signal.SIGTERM)  # the demo stops its worker too
        try:
            demo.wait(timeout=60)
        except subprocess.TimeoutExpired:
            demo.kill()


def _take(shots: tuple[Shot, ...], site: str, passwords: dict, ids: dict) -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for shot in shots:
                context = browser.new_context(
                    viewport={"width": shot.width, "height": shot.height},
                    color_scheme="dark" if shot.dark else "light",  # the theme follows it
                )
                page = context.new_page()
                _log_in(page, site, shot.who, passwords[shot.who])
                VIEWS[shot.view](page, site, ids)
                page.screenshot(path=str(OUT / shot.file))
                print(f"  {shot.file}")
                context.close()
        finally:
            browser.close()


def _log_in(page, site: str, username: str, password: str) -> None:
    page.goto(f"{site}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{site}/")


def _review(page, site: str, ids: dict) -> None:
    """The clinician's item in the target study, a tool call and the third rubric in focus."""
    row = page.locator("table.studies tr", has_text="Target study")
    row.locator("button").click()
    page.wait_for_url("**/annotation/items/**")
    page.wait_for_load_state("networkidle")
    for key in ("n", "n", "j", "j"):
        page.keyboard.press(key)
    page.evaluate("window.scrollTo(0, 0)")


def _run(page, site: str, ids: dict) -> None:
    _open(page, f"{site}/benchmark/runs/{ids['run']}/")


def _agreement_report(page, site: str, ids: dict) -> None:
    """The agreement table; the demo's clinicians are simulated, so their work is included."""
    _open(page, f"{site}/alignment/studies/{ids['target_study']}/?synthetic=1")
    heading = page.get_by_role("heading", name="Jury-clinician agreement")
    heading.evaluate("element => element.scrollIntoView()")


def _open(page, url: str) -> None:
    """Open a page, refusing to photograph an error page."""
    response = page.goto(url)
    if not response.ok:
        raise SystemExit(f"{url} answered {response.status}: no screenshot of an error page.")
    page.wait_for_load_state("networkidle")


VIEWS: dict[str, Callable] = {
    "review": _review,
    "run": _run,
    "agreement_report": _agreement_report,
}


if __name__ == "__main__":
    main()
