"""Build a ready-to-use demo site on the embedded default and optionally serve it."""

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from accounts.services import demo_people_ensure
from benchmark.services import demo
from benchmark.services.cli import wait_until
from benchmark.services.workers import worker_start, worker_stop


class Command(BaseCommand):
    help = "Create demo users and demo data through the real pipeline (offline scripted provider)."

    def add_arguments(self, parser):
        parser.add_argument("--serve", action="store_true", help="start the site afterwards")
        parser.add_argument("--addr", default="127.0.0.1:8000", help="address:port to serve on")

    def handle(self, *args, serve: bool, addr: str, **options):
        call_command("migrate", interactive=False, verbosity=0)
        people = demo_people_ensure()
        worker = worker_start()
        try:
            self.stdout.write(f"Task queue: {settings.QUEUE_MODE}; worker pid {worker.pid}")
            self._build_data()
            self._print_logins(addr, people)
            if serve:
                call_command("runserver", addr, use_reloader=False)
        finally:
            worker_stop(worker)

    def _build_data(self) -> None:
        from benchmark.tasks import enqueue_entries, run_dispatch_task

        def wait(count, total, label):
            wait_until(count, total=total, label=label, poll=0.5)

        from jury.tasks import enqueue_pending_scores

        benchmark_set = demo.demo_set_ensure(enqueue_entries, wait)
        run = demo.demo_run_ensure(benchmark_set, lambda r: run_dispatch_task.delay(r.pk), wait)
        demo.demo_scoring_ensure(run, enqueue_pending_scores, wait)

    def _print_logins(self, addr: str, people) -> None:
        self.stdout.write(self.style.SUCCESS(f"\nDemo site: http://{addr}/"))
        for username, password, role in people:
            self.stdout.write(f"  {role:<26} username {username:<12} password {password}")
        self.stdout.write("")
