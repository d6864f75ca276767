"""What the database does to answer the queries some code made, on SQLite and PostgreSQL.

A dispatch runs after every finished unit of work, so its queries must read only the rows
they are about (a range of an index, in the index's order), never a job's finished rows: that
is what keeps a job's cost flat as it progresses. A timed test cannot show it on a small test
database; the plan can. SQLite plans by rules, so its plan names the index range. PostgreSQL
plans by cost, and on tables of a few rows any index is as cheap as another, so there only a
full scan or a sort is refused (both priced out first, see OFF_IN_PLANS: the question is what
the indexes allow); bench/bench_dispatch.py measures both databases at the paper's size.
"""

from __future__ import annotations

import re

from django.db import connection

# PostgreSQL plans by cost from its statistics, which the tests before this one leave behind:
# with a table believed to hold one row, a sort is as cheap as an ordered index. Full scans and
# sorts are priced out so the plan shows what the indexes allow; a sort still appears where
# no index gives the order.
OFF_IN_PLANS = ("enable_seqscan", "enable_bitmapscan", "enable_sort")


def selects_of(captured, *, table: str, containing: str) -> list[str]:
    """The SELECTs of a CaptureQueriesContext that read `table` and contain `containing`."""
    return [
        query["sql"]
        for query in captured.captured_queries
        if query["sql"].startswith("SELECT") and f'FROM "{table}"' in query["sql"]
        and containing in query["sql"]
    ]  # fmt: skip


def plan_of(sql: str) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
            return "\n".join(str(row[-1]) for row in cursor.fetchall())
        for switch in OFF_IN_PLANS:
            cursor.execute(f"SET {switch} = off")
        try:
            cursor.execute(f"EXPLAIN {sql}")
            return "\n".join(row[0] for row in cursor.fetchall())
        finally:
            for switch in OFF_IN_PLANS:
                cursor.execute(f"RESET {switch}")


def index_range_problem(sql: str, *, table: str, column: str = "status") -> str:
    """Why the query is not answered from one range of an index ("" when it is): a full scan,
    a sort, or (SQLite) an index whose condition lacks `column`."""
    plan = plan_of(sql)
    if "TEMP B-TREE FOR ORDER BY" in plan or re.search(r"\bSort\b", plan):
        return f"it sorts:\n{plan}"
    if connection.vendor == "sqlite":
        reads = [line for line in plan.splitlines() if re.search(rf"\b{table}\b", line)]
        ranged = [line for line in reads if re.search(rf"INDEX \w+ \(.*\b{column}=", line)]
    else:
        reads = [line for line in plan.splitlines() if re.search(rf"\bon {table}\b", line)]
        ranged = [line for line in reads if "Index" in line]
    if not reads or len(ranged) != len(reads):
        return f"it does not read a range of an index on {column}:\n{plan}"
    return ""
