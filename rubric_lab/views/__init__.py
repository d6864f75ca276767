"""Rubric-lab pages by area: `generation` (knowledge base, imports, pipelines, instance
rubrics and their scores) and `evaluation` (near misses and sensitivity, coverage,
critique-then-refine, ablations) and `forecasts` (the evaluation launch forms' forecast
panels)."""

from rubric_lab.views import evaluation, forecasts, generation

__all__ = ["evaluation", "forecasts", "generation"]
