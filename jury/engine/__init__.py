"""Pure jury engine (no Django): rubric files, judge prompts, answer parsing, aggregation,
report statistics and the offline scripted judge."""
