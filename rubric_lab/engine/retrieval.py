"""Pluggable retrieval over knowledge passages: lexical BM25 (default) or a dense embedding.

Both retrievers take the passages once, build their index, and answer `search(query, k)` with
the best passages first. They share one tokenizer so a query means the same to both.

- BM25Retriever: Okapi BM25 from the `bm25s` library (sparse-matrix scoring, fast enough for a
  10,000-passage corpus in a few milliseconds per query).
- EmbeddingRetriever: latent semantic analysis - TF-IDF vectors reduced by truncated SVD to a
  small dense space fitted on the corpus itself, ranked by cosine similarity. It needs no
  downloaded model weights, and it finds passages that share related vocabulary rather than
  the query's exact words. A corpus too small to reduce (fewer than 3 passages) is ranked on
  the TF-IDF vectors directly.

Pure Python (numpy, scikit-learn): no Django.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rubric_lab.engine.knowledge import Passage

# bm25s (with numba) and scikit-learn take about two seconds to import: they are imported by
# the retrievers that use them, not by every process that imports the rubric lab's tasks.

WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    re.findall(
        r"[a-z]+",
        """a an and are as at be been but by can could do does for from had has have he her his
    i if in into is it its may me might my no not of on or our she should so than that the
    their them then there these they this those to too was we were what when where which who
    will with would you your""",
    )
)


def tokenize(text: str) -> list[str]:
    """Lowercase words without stopwords, plurals folded ("symptoms" -> "symptom")."""
    return [_fold(word) for word in WORD.findall(text.lower()) if word not in STOPWORDS]


def _fold(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@dataclass(frozen=True)
class Hit:
    passage: Passage
    score: float


class Retriever(Protocol):
    def search(self, query: str, k: int) -> list[Hit]: ...


class BM25Retriever:
    def __init__(self, passages: Sequence[Passage], *, k1: float = 1.5, b: float = 0.75):
        if not passages:
            raise ValueError("the knowledge base has no passages to search")
        bm25s = _bm25s()
        self.passages = list(passages)
        self._index = bm25s.BM25(k1=k1, b=b)
        corpus = [tokenize(passage.searchable_text) or ["_"] for passage in self.passages]
        self._index.index(corpus, show_progress=False)
        self._vocabulary = set(self._index.vocab_dict)

    def search(self, query: str, k: int) -> list[Hit]:
        terms = [term for term in tokenize(query) if term in self._vocabulary]
        if not terms or k <= 0:
            return []
        scores = np.asarray(self._index.get_scores(terms))
        return _top(self.passages, scores, k)


class EmbeddingRetriever:
    def __init__(self, passages: Sequence[Passage], *, dimensions: int = 96):
        if not passages:
            raise ValueError("the knowledge base has no passages to search")
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.passages = list(passages)
        self._tfidf = TfidfVectorizer(
            tokenizer=tokenize, lowercase=False, token_pattern=None, sublinear_tf=True
        )
        matrix = self._tfidf.fit_transform(passage.searchable_text for passage in self.passages)
        components = min(dimensions, matrix.shape[0] - 1, matrix.shape[1] - 1)
        self._svd = (
            TruncatedSVD(n_components=components, random_state=0) if components >= 2 else None
        )
        dense = self._svd.fit_transform(matrix) if self._svd else matrix.toarray()
        self._vectors = _normalised(dense)

    def embed(self, text: str) -> np.ndarray:
        vector = self._tfidf.transform([text])
        dense = self._svd.transform(vector) if self._svd else vector.toarray()
        return _normalised(dense)[0]

    def search(self, query: str, k: int) -> list[Hit]:
        query_vector = self.embed(query)
        if not query_vector.any() or k <= 0:
            return []
        return _top(self.passages, self._vectors @ query_vector, k)


RETRIEVERS = {"bm25": BM25Retriever, "embedding": EmbeddingRetriever}


def build_retriever(kind: str, passages: Sequence[Passage]) -> Retriever:
    if kind not in RETRIEVERS:
        raise ValueError(f"unknown retriever {kind!r}; use one of {', '.join(RETRIEVERS)}")
    return RETRIEVERS[kind](passages)


def _top(passages: list[Passage], scores: np.ndarray, k: int) -> list[Hit]:
    """The k best positive scores, best first (equal scores in corpus order)."""
    # A stable sort, not argpartition: among equal scores at the cut, the earlier passage
    # must win every time, or the same query could cite different evidence run to run.
    ranked = np.argsort(-scores, kind="stable")[:k]
    return [Hit(passages[index], float(scores[index])) for index in ranked if scores[index] > 0]


def search_all(retriever: Retriever, queries: Sequence[str], k: int) -> list[dict]:
    """Each query's top k, merged: one row per passage with its best score and the queries
    that found it, best first."""
    merged: dict[str, dict] = {}
    for query in queries:
        for hit in retriever.search(query, k):
            row = merged.setdefault(
                hit.passage.passage_id, {"passage": hit.passage, "score": 0.0, "queries": []}
            )
            row["score"] = max(row["score"], hit.score)
            row["queries"].append(query)
    return sorted(merged.values(), key=lambda row: -row["score"])


def _normalised(rows):
    from sklearn.preprocessing import normalize

    return normalize(rows)


def _bm25s():
    import bm25s

    # bm25s sets its own logger to DEBUG when imported (after Django configured logging) and
    # would print a line for every index it builds.
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s
