"""The run manifest's pure builder and reader (benchmark.engine.manifest)."""

import json

import pytest

from benchmark.engine import manifest as fmt

RUN = {
    "benchmark_set": 3,
    "agents": [{"model": "openai/gpt-5.5", "agent": "baseline", "agent_fingerprint": "ab"}],
    "patient_model": "offline/patient",
    "roster_model": "offline/patient",
    "repetitions": 4,
    "max_turns": 15,
    "seed": 7,
    "clock": "2026-01-05T09:00:00+00:00",
}


def built(**changes):
    parts = {
        "run": RUN,
        "data_files": {"benchmark/data/personalities.yaml": "1" * 64},
        "stored": {},
        "models": {"openai/gpt-5.5": {"settings": {}}},
        "seeds": {"run": 7},
        "fingerprints": {"openai/gpt-5.5": ["fp_b", "fp_a", "fp_b"]},
        "environment": {"packages": {"django": "5.2"}},
        "recorded": "launch",
    }
    return fmt.build_manifest(**(parts | changes))


def test_the_text_is_canonical_so_two_manifests_diff_cleanly():
    one = fmt.manifest_text(built())
    reordered = fmt.manifest_text(dict(reversed(list(built().items()))))

    assert one == reordered
    assert one.endswith("\n")
    assert list(json.loads(one)) == sorted(json.loads(one))


def test_fingerprints_are_listed_once_each_in_order():
    assert built()["fingerprints"] == {"openai/gpt-5.5": ["fp_a", "fp_b"]}


def test_a_manifest_reads_back_as_it_was_written():
    manifest = built()

    assert fmt.parse_manifest(fmt.manifest_text(manifest)) == manifest


def test_the_builder_refuses_a_run_section_missing_a_field():
    run = {key: value for key, value in RUN.items() if key != "clock"}
    with pytest.raises(fmt.ManifestError, match="lacks clock"):
        built(run=run)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "not JSON"),
        ("[]", "not a run manifest"),
        ('{"format": "something else"}', "not a run manifest"),
        ('{"format": "carejury-run-manifest", "version": 9}', "manifest version 9"),
        ('{"format": "carejury-run-manifest", "version": 1, "run": {}}', "lacks its data_files"),
    ],
)
def test_a_malformed_manifest_is_named(text, problem):
    with pytest.raises(fmt.ManifestError, match=problem):
        fmt.parse_manifest(text)


def test_a_run_section_without_agents_is_refused():
    manifest = built()
    manifest["run"] = RUN | {"agents": []}

    with pytest.raises(fmt.ManifestError, match="names no agents"):
        fmt.parse_manifest(fmt.manifest_text(manifest))


def test_differences_name_each_file_with_both_hashes():
    expected = {"a.yaml": "1", "b.md": "2", "gone.md": "3"}
    found = {"a.yaml": "1", "b.md": "9", "new.md": "4"}

    described = [d.describe() for d in fmt.differences(expected, found)]

    assert described == [
        "b.md: expected 2, found 9",
        "gone.md: expected 3, found missing",
        "new.md: expected missing, found 4",
    ]


def test_file_hashes_are_keyed_by_path_from_the_root(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.yaml").write_text("a: 1\n")

    hashes = fmt.file_hashes(tmp_path, [tmp_path / "data" / "x.yaml"])

    assert hashes == {"data/x.yaml": fmt.sha256_text("a: 1\n")}


def test_the_seeds_digest_ignores_order_but_not_a_changed_seed():
    pairs = [("0/a/0", 5), ("0/a/1", 6)]

    assert fmt.seeds_digest(pairs) == fmt.seeds_digest(list(reversed(pairs)))
    assert fmt.seeds_digest(pairs) != fmt.seeds_digest([("0/a/0", 5), ("0/a/1", 7)])
