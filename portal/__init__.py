"""The site above the apps: the pieces that bring several apps together and that no app
builds on. The home page (an annotator's studies, a researcher's runs and scoring jobs) and the
demo (a benchmark run, its jury scores, clinician studies, the rubric lab) live here, so that
every app imports only the apps below it."""
