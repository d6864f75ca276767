#!/bin/sh
# What a CareJury container runs, by its first argument:
#   web     the site, served by gunicorn on port 8000
#   worker  a Celery worker (threads; WORKER_CONCURRENCY of them)
#   setup   the one-off start of a release: migrate the database, collect the static files into
#           DATA_DIR and print the deployment check's findings; web and workers wait for it
# Anything else is run as given (`python manage.py createsuperuser`, a shell).
set -eu
case "${1:-web}" in
  web)
    # Threads beside processes: a page waiting on the database or Redis holds a thread, not a
    # process. Temporary heartbeat files in memory: a slow disk cannot get workers killed.
    # --preload: the code is imported once, before the processes fork, so they share it and
    # the first page does not wait for the imports (twenty seconds on a busy machine).
    exec gunicorn config.wsgi:application --bind 0.0.0.0:8000 --preload \
      --workers "${WEB_PROCESSES:-3}" --threads "${WEB_THREADS:-4}" \
      --timeout "${WEB_TIMEOUT_SECONDS:-60}" --worker-tmp-dir /dev/shm \
      --access-logfile - --error-logfile -
    ;;
  worker)
    exec celery -A config worker --pool threads --concurrency "${WORKER_CONCURRENCY:-16}" \
      --loglevel "${LOG_LEVEL:-INFO}" --hostname "worker@%h"
    ;;
  setup)
    # Static files first: every other command's system check refuses to run without them.
    python manage.py collectstatic --noinput -v0
    python manage.py migrate --noinput
    python manage.py check --deploy
    ;;
  *)
    exec "$@"
    ;;
esac
