"""YAML from users, read safely.

`yaml.safe_load` builds no Python objects, but it does follow aliases: a few lines of anchors
and aliases ("billion laughs") expand into a structure that exhausts memory the moment anything
walks it. The files users edit here (distributions, rubrics, agent configurations, knowledge
passages) never need aliases, so a text with more than a handful is refused before loading;
so is a text nested deeper than common.json_text.MAX_DEPTH levels, as JSON is.
"""

from __future__ import annotations

from typing import Any

import yaml

from common.json_text import MAX_DEPTH

MAX_ALIASES = 20
OPENS = (
    yaml.BlockMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.FlowSequenceStartToken,
)
CLOSES = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


class YamlTooComplex(yaml.YAMLError):
    """Refused before loading; `problem` reads like PyYAML's own syntax errors."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = None


def safe_load(text: str) -> Any:
    aliases = depth = 0
    for token in yaml.scan(text, Loader=yaml.SafeLoader):
        if isinstance(token, yaml.AliasToken):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise YamlTooComplex(
                    f"the YAML uses more than {MAX_ALIASES} aliases (*name); aliases that "
                    "expand into each other can exhaust memory, so write the values out"
                )
        # PyYAML recurses once per level (as json does): a deep enough text exhausts the stack.
        depth += isinstance(token, OPENS) - isinstance(token, CLOSES)
        if depth > MAX_DEPTH:
            raise YamlTooComplex(
                f"line {token.start_mark.line + 1}: the YAML nests lists and mappings more "
                f"than {MAX_DEPTH} levels deep"
            )
    return yaml.safe_load(text)
