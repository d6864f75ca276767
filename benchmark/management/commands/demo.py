"""Build a ready-to-use demo site on the embedded default and optionally serve it."""

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from accounts.services import demo_people_ensure
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
            self._print_logins(addr, people)
            if serve:
                call_command("runserver", addr, use_reloader=False)
        finally:
            worker_stop(worker)

    def _print_logins(self, addr: str, people) -> None:
        self.stdout.write(self.style.SUCCESS(f"\nDemo site: http://{addr}/"))
        for username, password, role in people:
            self.stdout.write(f"  {role:<26} username {username:<12} password {password}")
        self.stdout.write("")
