from benchmark.models import BenchmarkSet, Conversation, Run


def dashboard_summary() -> dict:
    return {
        "sets": BenchmarkSet.objects.count(),
        "runs": Run.objects.count(),
        "conversations": Conversation.objects.count(),
        "recent_runs": list(Run.objects.select_related("benchmark_set")[:5]),
    }
