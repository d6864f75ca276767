"""The README.txt every archive carries: what each member holds, for a reader without the site."""

from __future__ import annotations

from alignment.engine import archive as fmt

TEXT = """\
CareJury study archive (format {name}, version {version})

One clinician study, whole: what the annotators saw, what they scored, what the jury said,
and the agreement tables the site computed when the archive was written. Re-open it on any
CareJury site with `manage.py import_study <this file>` or the staff page "Import a
study archive"; the imported study is locked and reproduces these tables.{synthetic}

manifest.json        format, version, when and by which site version this was written, the
                     study and its settings, rows per member and the sha256 of every member
README.txt           this file
data/*.jsonl         one JSON object per line; `id` is the row's number in this archive and
                     a field naming another table holds that table's `id`; people are
                     pseudonyms (A1, A2, ... annotators; S1, S2, ... staff){usernames}
  people               pseudonym, role, track, licensed, active at export{username_field}
  rubric_versions      every rubric version in force or scored against, with its YAML
  distributions        the seed distribution(s) the cases were drawn from (YAML)
  agent_configs        assistant configurations (YAML)
  benchmark_sets       the benchmark set(s); `entries` holds only the study's cases
  entries              cases: seed attributes, profile, story, complexity
  runs, run_agents     run configuration (patient model, prompt version, seed, ...) and the
                       models and configurations under test
  conversations        the study's conversations (status, termination, usage, cost)
  events               every trace event of those conversations, in order
  sandboxes            each conversation's sandbox state before and after
  juries               jury configurations: judges, weights, threshold, pass rule
  scoring_jobs         the jobs the study was drawn from and re-scores restricted to it
  judge_scores         every judge answer: score, explanation, status, rubric version,
                       judge seat and model, raw output
  rubric_results,      the jury's merged results per conversation and rubric, and per
  conversation_results conversation
  projects, studies    the study, its settings and sample coverage (with the sampling
                       design: each stratum's size N and draws n)
  study_items          the sampled conversations with their stratum and inclusion
                       probability (n / N of the stratum; either phase's after a second
                       phase; approximate for studies of the earlier greedy sampler)
  assignments          annotations: scores, feedback, linked trace events, comment,
                       realism, time on task, practice / synthetic, skips, invalidation
  assignment_history   every change of every annotation (old and new values)
  calibration_guides   the guides the annotators saw (the project's guide in force when
                       the study opened, and every one published while it was open: title,
                       markdown, publication time) and the guides written after this study;
                       an example from a round not in this archive keeps what annotators read
                       (round, condition, request, note) with `item` null
  themes, item_themes  disagreement themes and the (item, rubric) tags
rubrics/*.yaml       the same rubric versions as plain YAML files, to read
runs/run-N-manifest.json
                     each run's manifest (N: the run's id in this archive): sha256 of every
                     data file and stored input it used, models with their generation
                     settings, seeds, package versions and the code's commit; a site holding
                     the run replays it with `manage.py run_benchmark --replay <file>`
tables/              the agreement tables as computed at export, default filters (synthetic
                     work left out): agreement.csv / .md (the paper's table), report.json
                     (every figure with its interval and counts, judges, realism, each
                     annotator against the jury, and everything below), disagreements.csv /
                     .json (conversations ranked by |jury - clinician mean|; `conversation`
                     is the archive id), and as CSV and Markdown:
  weighted             every agreement figure on the sample and weighted back to the
                       population of scored conversations (weights from study_items'
                       inclusion_probability), with intervals, n, whether they differ and
                       which single-conversation strata the intervals pooled
  alt-test             the alternative annotator test per rubric (advantage probabilities per
                       clinician, p, Benjamini-Yekutieli p, winning rate, verdict, needs)
  corrected            clinician-corrected model scores (prediction-powered inference; the
                       population's jury scores are in the study's coverage)
  judge-bias           each judge's difference from the clinicians against conversation
                       length, tool calls and same-family agents
  annotators           each clinician against the other clinicians and the jury, over the
                       study and per week (their drift over a project's rounds needs the
                       project's other studies, so it is not here)
"""


SYNTHETIC = (
    "This study holds work of synthetic clinicians (scripted simulated clinicians, not people):\n"
    "their annotations say `synthetic: true` in data/assignments.jsonl."
)


def text(*, with_usernames: bool, synthetic: bool = False) -> str:
    return TEXT.format(
        synthetic=f"\n\n{SYNTHETIC}" if synthetic else "",
        name=fmt.FORMAT_NAME,
        version=fmt.FORMAT_VERSION,
        usernames="; this archive also holds usernames" if with_usernames else "",
        username_field=", username" if with_usernames else "",
    )
