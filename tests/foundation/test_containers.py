"""The container deployment (Dockerfile, deploy/, scripts/container_*.sh): the promises the
production compose file makes, read from the files, and the smoke test that builds the images
and starts the stack (CONTAINER_SMOKE=1: it needs root and minutes, see
docs/deploying/containers.md)."""

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose.yaml"
SECRETS = ("SECRET_KEY", "POSTGRES_PASSWORD", "REDIS_PASSWORD")


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def environment(service: dict) -> dict[str, str | None]:
    pairs = (entry.partition("=") for entry in service.get("environment", []))
    return {name: (value if sep else None) for name, sep, value in pairs}


def dockerfile_stages(path: Path) -> list[list[str]]:
    """The instructions of each stage (continuation lines joined), from FROM to the next."""
    text = re.sub(r"\\\n", " ", path.read_text())
    lines = [line.strip() for line in text.splitlines()]
    stages: list[list[str]] = []
    for line in lines:
        if line.startswith("FROM "):
            stages.append([])
        if stages and line and not line.startswith("#"):
            stages[-1].append(line)
    return stages


def base_tag() -> str:
    script = (ROOT / "scripts" / "container_base.sh").read_text()
    suite = re.search(r'SUITE="\$\{DEBIAN_SUITE:-(\w+)\}"', script)[1]
    version = re.search(r"^BASE_VERSION=(\d+)", script, re.MULTILINE)[1]
    return f"carejury-base:{suite}-v{version}"


def test_the_stack_has_the_site_workers_queue_database_and_a_setup_step():
    services = compose()["services"]
    assert set(services) == {"setup", "web", "worker", "postgres", "redis"}
    assert services["web"]["command"] == ["web"] and services["worker"]["command"] == ["worker"]
    for name in ("web", "worker"):
        condition = services[name]["depends_on"]["setup"]["condition"]
        assert condition == "service_completed_successfully"
    for name in ("postgres", "redis"):
        assert services["setup"]["depends_on"][name]["condition"] == "service_healthy"


def test_secrets_come_from_the_environment_and_are_required():
    services = compose()["services"]
    for name, service in services.items():
        for variable, value in environment(service).items():
            if any(secret in variable for secret in ("KEY", "PASSWORD")) and value is not None:
                assert value.startswith("${") and ":?" in value, (name, variable, value)
    web = environment(services["web"])
    assert ":?" in web["SECRET_KEY"] and ":?" in web["ALLOWED_HOSTS"]
    assert "${POSTGRES_PASSWORD:?" in web["DATABASE_URL"]
    assert "${REDIS_PASSWORD:?" in web["REDIS_URL"]
    assert web["APP_ENV"] == "production" and web["BEHIND_TLS_PROXY"] == "1"
    assert web["OPENAI_API_KEY"] is None  # passed through when set, never written here


def test_the_site_and_the_workers_share_the_data_volume_and_every_service_is_health_checked():
    document = compose()
    services = document["services"]
    for name in ("setup", "web", "worker"):
        assert "carejury-data:/data" in services[name]["volumes"]
        assert environment(services[name])["DATA_DIR"] == "/data"
    assert set(document["volumes"]) == {"carejury-data", "postgres-data", "redis-data"}
    assert "celery -A config inspect ping" in services["worker"]["healthcheck"]["test"][1]
    for image in ("Dockerfile", "deploy/postgres/Dockerfile", "deploy/redis/Dockerfile"):
        assert "HEALTHCHECK" in (ROOT / image).read_text(), image
    # Published on the loopback unless told otherwise: a TLS proxy stands in front.
    assert services["web"]["ports"] == ["${CAREJURY_BIND:-127.0.0.1}:${CAREJURY_PORT:-8000}:8000"]


def test_the_image_is_multi_stage_runs_unprivileged_and_starts_from_the_pinned_base():
    stages = dockerfile_stages(ROOT / "Dockerfile")
    assert len(stages) >= 2
    runtime = stages[-1]
    users = [line.split()[1] for line in runtime if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    assert not any(line.startswith("COPY . ") for line in runtime)  # only the build's output
    dockerfiles = [ROOT / "Dockerfile", ROOT / "deploy/postgres/Dockerfile"]
    dockerfiles.append(ROOT / "deploy/redis/Dockerfile")
    for dockerfile in dockerfiles:
        text = dockerfile.read_text()
        assert f"ARG BASE_IMAGE={base_tag()}" in text, dockerfile
        assert all(line.startswith("FROM ${BASE_IMAGE}") for line in text.splitlines()
                   if line.startswith("FROM "))  # fmt: skip
    assert f"BASE_IMAGE:-{base_tag()}" in COMPOSE.read_text()
    for name in ("postgres", "redis"):
        stage = dockerfile_stages(ROOT / f"deploy/{name}/Dockerfile")[-1]
        assert f"USER {name}" in stage


def test_the_setup_role_migrates_collects_static_files_and_runs_the_deployment_check():
    entrypoint = (ROOT / "deploy" / "entrypoint.sh").read_text()
    setup = entrypoint.split("setup)")[1].split(";;")[0]
    assert "migrate --noinput" in setup and "collectstatic --noinput" in setup
    assert "check --deploy" in setup
    assert os.access(ROOT / "deploy" / "entrypoint.sh", os.X_OK)


def load_healthcheck():
    spec = importlib.util.spec_from_file_location("healthcheck", ROOT / "deploy/healthcheck.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("allowed", "host"),
    [("lab.example.org,other.org", "lab.example.org"), (".example.org", "example.org"),
     ("*", "localhost"), ("", "localhost")],
)  # fmt: skip
def test_the_health_check_asks_for_a_host_the_site_accepts(monkeypatch, allowed, host):
    monkeypatch.setenv("ALLOWED_HOSTS", allowed)
    assert load_healthcheck().first_allowed_host() == host


@pytest.mark.skipif(not shutil.which("docker-compose"), reason="Debian's docker-compose missing")
def test_docker_compose_accepts_the_file_and_refuses_it_without_secrets(tmp_path):
    command = ["docker-compose", "--file", str(COMPOSE), "--env-file"]
    env_file = tmp_path / "site.env"
    env_file.write_text(
        "SECRET_KEY=s\nALLOWED_HOSTS=lab.example.org\nPOSTGRES_PASSWORD=p\nREDIS_PASSWORD=r\n"
    )
    unset = {k: v for k, v in os.environ.items() if k not in SECRETS + ("ALLOWED_HOSTS",)}
    valid = subprocess.run([*command, str(env_file), "config", "--quiet"], env=unset,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert valid.returncode == 0, valid.stderr
    env_file.write_text("ALLOWED_HOSTS=lab.example.org\n")
    refused = subprocess.run([*command, str(env_file), "config", "--quiet"], env=unset,
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert refused.returncode != 0 and "SECRET_KEY" in refused.stderr


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("CONTAINER_SMOKE") != "1", reason="CONTAINER_SMOKE=1 runs it")
def test_the_stack_builds_starts_and_finishes_an_offline_run():
    result = subprocess.run(["bash", str(ROOT / "scripts/container_smoke.sh")],
                            capture_output=True, text=True, timeout=3600)  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "container smoke test passed" in result.stdout
    assert re.search(r"run \d+ finished: 2 conversations", result.stdout)
    print(result.stdout.split("=== timings ===")[-1])  # shown with -s (the CI step)
