"""Rubric-lab forms by area, as the views: `generation` and `evaluation`."""

from rubric_lab.forms import evaluation, generation

__all__ = ["evaluation", "generation"]
