"""Run every bench/bench_*.py and print one table of measured figures against their targets.

Usage, from the repository root: `.venv/bin/python bench/run_all.py`.

Each bench runs in its own Python process, so benches that set up Django (each with its own
throwaway DATA_DIR) cannot collide; a bench that crashes becomes a FAIL row and the others
still run. The exit code is always 0: benchmarks report, they do not gate.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
CHILD_FLAG = "--one"
TIMEOUT_SECONDS = 600


def bench_files() -> list[Path]:
    return sorted(BENCH_DIR.glob("bench_*.py"))


def run_one_here(bench_file: Path, results_file: Path) -> None:
    """In the child process: import the bench by file, call run(), write its rows as JSON."""
    sys.path.insert(0, str(REPO_ROOT))
    spec = importlib.util.spec_from_file_location(bench_file.stem, bench_file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look the module up by name
    spec.loader.exec_module(module)
    results_file.write_text(json.dumps(module.run()), encoding="utf-8")


def timeout_of(bench_file: Path) -> int:
    """A bench may set its own TIMEOUT_SECONDS = <number> at the top level (the paper-scale
    rehearsal runs for hours), a plain number; read without importing the bench, so nothing of
    it runs here."""
    for node in ast.parse(bench_file.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            getattr(target, "id", "") == "TIMEOUT_SECONDS" for target in node.targets
        ):
            return int(ast.literal_eval(node.value))
    return TIMEOUT_SECONDS


def run_one(bench_file: Path) -> list[dict]:
    """Run one bench in a fresh process; its own output streams through to the terminal."""
    print(f"== {bench_file.name}", flush=True)
    timeout = timeout_of(bench_file)
    with tempfile.TemporaryDirectory(prefix="bench-results-") as folder:
        results_file = Path(folder) / "results.json"
        command = [sys.executable, __file__, CHILD_FLAG, str(bench_file), str(results_file)]
        try:
            finished = subprocess.run(command, cwd=REPO_ROOT, timeout=timeout)
        except subprocess.TimeoutExpired:
            return [_crash_row(bench_file, f"timed out after {timeout} s")]
        if finished.returncode != 0 or not results_file.exists():
            return [_crash_row(bench_file, f"crashed with exit code {finished.returncode}")]
        return json.loads(results_file.read_text(encoding="utf-8"))


def _crash_row(bench_file: Path, reason: str) -> dict:
    return {
        "name": f"{bench_file.stem}: {reason}",
        "measured": None,
        "target": None,
        "unit": "",
        "ok": False,
    }


def _figure(value, unit: str, goal: str = "") -> str:
    if value is None:
        return "-"
    number = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return f"{goal} {number} {unit}".strip()


def print_table(rows: list[dict]) -> None:
    lines = [
        (
            row["name"],
            _figure(row["measured"], row["unit"]),
            _figure(row["target"], row["unit"], row.get("goal", "")),
            _verdict(row),
        )
        for row in rows
    ]
    header = ("benchmark", "measured", "target", "result")
    widths = [max(len(line[column]) for line in [header, *lines]) for column in range(3)]
    print()
    for name, measured, target, verdict in [header, *lines]:
        print(f"{name:<{widths[0]}}  {measured:>{widths[1]}}  {target:>{widths[2]}}  {verdict}")
    targeted = [row for row in rows if row["target"] is not None or not row["ok"]]
    passed = sum(row["ok"] for row in targeted)
    print(f"\n{passed} of {len(targeted)} figures meet their targets.")


def _verdict(row: dict) -> str:
    """A figure without a target (throughput, sizes) is reported, neither passed nor failed."""
    if row["target"] is None and row["ok"]:
        return "-"
    return "PASS" if row["ok"] else "FAIL"


def report(rows: list[dict]) -> int:
    """For a bench run on its own: print its table; exit 1 if a figure misses its target."""
    print_table(rows)
    return 0 if all(row["ok"] for row in rows) else 1


def main(arguments: list[str]) -> int:
    if arguments[:1] == [CHILD_FLAG]:
        run_one_here(Path(arguments[1]), Path(arguments[2]))
        return 0
    rows = [row for bench_file in bench_files() for row in run_one(bench_file)]
    if rows:
        print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
