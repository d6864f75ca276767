# CareJury's application image: the web site (gunicorn) and the workers (Celery) run from it.
# Its base is built from Debian's packages by scripts/container_base.sh (no image registry is
# needed); see docs/deploying/containers.md. Build with the classic builder and the host's
# network (the steps below fetch Python packages):
#
#   DOCKER_BUILDKIT=0 docker build --network host -t carejury:latest .
ARG BASE_IMAGE=carejury-base:bookworm-v1

# --- build: a virtual environment with the dependencies, and the code ------------------------
FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python3 -m venv /opt/venv
# Only pyproject.toml first: the dependencies' layer is rebuilt when they change, not when the
# code does. The production extra adds gunicorn. A build machine that reaches the package index
# through a TLS-inspecting proxy puts that proxy's CA bundle in deploy/build-ca/ca.crt: pip
# trusts it here, in this stage only; the image the site runs from never holds it.
COPY pyproject.toml /tmp/pyproject.toml
COPY deploy/build-ca/ /tmp/build-ca/
RUN if [ -s /tmp/build-ca/ca.crt ]; then export PIP_CERT=/tmp/build-ca/ca.crt; fi \
    && python3 -c 'import tomllib; project = tomllib.load(open("/tmp/pyproject.toml", "rb"))["project"]; print("\n".join(project["dependencies"] + project["optional-dependencies"]["production"]))' > /tmp/requirements.txt \
    && /opt/venv/bin/pip install --requirement /tmp/requirements.txt \
    && find /opt/venv -name __pycache__ -prune -exec rm -rf {} +
COPY . /src
# The site's user cannot write next to the code, so its bytecode is compiled here, once.
RUN rm -rf /src/deploy/build-ca && /opt/venv/bin/python -m compileall -q -j 0 /src

# --- runtime: the environment, the code and an unprivileged user -----------------------------
FROM ${BASE_IMAGE} AS runtime
# The same uid in every container that shares the data volume (web, workers, the set-up job).
RUN groupadd --gid 10001 carejury \
    && useradd --uid 10001 --gid carejury --no-create-home --home-dir /data \
        --shell /usr/sbin/nologin carejury \
    && mkdir /data && chown carejury:carejury /data
COPY --from=build /opt/venv /opt/venv
# The code belongs to root: the site's user can read it, not change it.
COPY --from=build /src /app
WORKDIR /app
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    APP_ENV=production \
    DATA_DIR=/data
USER carejury
VOLUME ["/data"]
EXPOSE 8000
ENTRYPOINT ["/usr/bin/tini", "--", "/app/deploy/entrypoint.sh"]
CMD ["web"]
HEALTHCHECK --interval=30s --timeout=25s --start-period=60s --retries=3 \
    CMD ["python", "/app/deploy/healthcheck.py"]
