"""BM25 and embedding retrieval on constructed corpora, and the shipped corpus."""

import pytest

from rubric_lab.engine.knowledge import Passage, load_shipped_corpus
from rubric_lab.engine.retrieval import (
    BM25Retriever,
    EmbeddingRetriever,
    build_retriever,
    search_all,
    tokenize,
)


def passage(passage_id, text):
    return Passage(passage_id, "topic", passage_id, text, "test source", "1")


CORPUS = [
    passage("cats", "Cats sleep most of the day and purr when content."),
    passage("chest-once", "Chest pain can come from muscles after exercise and heavy lifting."),
    passage(
        "chest-twice", "Chest pain with sweating, chest pressure: call 911 for chest pain now."
    ),
    passage("refills", "Refills are sent to the preferred pharmacy within two working days."),
]


def ids(hits):
    return [hit.passage.passage_id for hit in hits]


def test_bm25_ranks_the_passage_with_more_query_terms_first():
    hits = BM25Retriever(CORPUS).search("chest pain 911", k=3)
    assert ids(hits) == ["chest-twice", "chest-once"]
    assert hits[0].score > hits[1].score > 0


def test_bm25_prefers_a_rare_term_over_a_common_one():
    corpus = [
        passage("common", "pain pain relief for pain"),
        passage("rare", "warfarin and a nosebleed"),
        passage("other", "pain after a fall"),
    ]
    assert ids(BM25Retriever(corpus).search("pain warfarin", k=1)) == ["rare"]


def test_a_query_with_no_known_word_finds_nothing():
    assert BM25Retriever(CORPUS).search("zebra xylophone", k=3) == []
    assert EmbeddingRetriever(CORPUS).search("zebra xylophone", k=3) == []


def test_k_limits_the_results():
    assert len(BM25Retriever(CORPUS).search("chest pain pharmacy cats", k=2)) == 2


def test_the_embedding_retriever_ranks_the_closest_passage_first():
    assert ids(EmbeddingRetriever(CORPUS).search("refills pharmacy", k=1)) == ["refills"]


def test_the_tokenizer_folds_plurals_and_drops_stopwords():
    assert tokenize("The symptoms and refills of the patients") == ["symptom", "refill", "patient"]


def test_search_all_merges_queries_keeping_the_best_score_and_who_found_it():
    rows = search_all(BM25Retriever(CORPUS), ["chest pain", "911"], k=2)
    first = rows[0]
    assert first["passage"].passage_id == "chest-twice"
    assert first["queries"] == ["chest pain", "911"]


def test_an_unknown_retriever_is_refused():
    with pytest.raises(ValueError, match="bm25, embedding"):
        build_retriever("tfidf", CORPUS)


def test_the_shipped_corpus_covers_every_topic_the_issue_names():
    corpus = load_shipped_corpus()
    topics = {p.topic for p in corpus}
    assert {"red_flags", "triage", "medication_safety", "refills_controlled", "chronic_followup",
            "mental_health", "paediatrics", "pregnancy"} <= topics  # fmt: skip
    assert len(corpus) >= 30
    assert all(p.source and p.source_version for p in corpus)


@pytest.mark.parametrize("kind", ["bm25", "embedding"])
def test_the_shipped_corpus_answers_clinical_queries(kind):
    retriever = build_retriever(kind, load_shipped_corpus())
    assert ids(retriever.search("suicide crisis line 988", k=1)) == ["mh-crisis-resources"]
    assert ids(retriever.search("early refill of an opioid controlled substance", k=1)) == [
        "rx-controlled"
    ]
