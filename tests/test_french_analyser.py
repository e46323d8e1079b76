"""The French analyser: lower case, accent folding, stop words, Snowball stemming."""

from __future__ import annotations

from engine.french.analyser import (
    STOP_WORDS,
    analyse,
    analyse_spans,
    fold_accents,
    mark,
    match_spans,
)


def test_lowercase_stopwords_and_elision():
    assert analyse("Le PARACÉTAMOL et l'acide") == ["paracetamol", "acid"]
    assert analyse("de la des du les une qu'il") == []
    assert {"de", "la", "les", "et", "est", "a", "cette"} <= STOP_WORDS


def test_accent_folding():
    assert fold_accents("hépatique aiguë œdème") == "hepatique aigue oedeme"
    assert analyse("hépatique") == analyse("hepatique") == analyse("HÉPATIQUE")


def test_stemming_joins_inflections():
    assert len({*analyse("hépatique hépatiques")}) == 1
    assert len({*analyse("médicament médicaments")}) == 1
    assert analyse("ionisantes ionisant") == ["ionis", "ionis"]
    assert analyse("rein reins") == ["rein", "rein"]


def test_repeats_are_kept_for_term_frequency():
    assert analyse("vitamine K, vitamine K1, vitamine") == [
        "vitamin",
        "k",
        "vitamin",
        "k1",
        "vitamin",
    ]


def test_spans_locate_words_in_the_original_text():
    text = "L'hépatite B n'est pas transmise."
    spans = analyse_spans(text)
    assert [text[s:e] for _, s, e in spans] == ["hépatite", "B", "transmise"]


def test_match_spans_is_accent_and_stem_aware():
    text = "Les Hepatites virales et l'atteinte HÉPATIQUE sévère."
    spans = match_spans(text, "hépatite hépatique")
    assert [text[s:e] for s, e in spans] == ["Hepatites", "HÉPATIQUE"]
    assert match_spans(text, "de la les") == []
    assert mark(text, spans, "<b>", "</b>") == (
        "Les <b>Hepatites</b> virales et l'atteinte <b>HÉPATIQUE</b> sévère."
    )
