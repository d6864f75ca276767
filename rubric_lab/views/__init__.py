"""Rubric-lab pages by area: `generation` (knowledge base, imports, pipelines, instance
rubrics and their scores) and `evaluation` (near misses and sensitivity, coverage,
critique-then-refine, ablations)."""

from rubric_lab.views import evaluation, generation

__all__ = ["evaluation", "generation"]
