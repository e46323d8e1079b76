"""The French QA activity registered: its descriptor (labels, headline, parts), its importer
and the importers of the retrieval corpora its readers search."""

from __future__ import annotations

from engine.activities import RUN_SPEC, Activity
from engine.core.no_answer import SUMMARY_LABELS
from engine.importers import Format, Request
from engine.registry import CLASS, COMMAND, FUNCTION, Lazy, register
from engine.store.store import Store
from engine.types import Row

FRENCH = register(
    "activity",
    Activity(
        "french",
        "French QA",
        "hamming",
        "question",
        {
            "recall_at_k": "Recall at k",
            "recall_at_k.k": "Passages per question (k)",
            "recall_at_k.recall": "Own passage retrieved (%)",
            "recall_at_k.n": "Questions with their own passage",
            "by_n_answers": "By number of right answers",
            "own_passages_excluded": "Questions with their own passage left out",
            "oracle": "Oracle run (own passages given)",
            **SUMMARY_LABELS,
        },
        (
            "hamming",
            "emr",
            "answered",
            "recall_at_k.recall",
            "cut_off",
            "chance.hamming",
            "chance.emr",
        ),
        spec=Lazy("engine.french.runner", "SPEC", RUN_SPEC),
        settings=Lazy("engine.french.settings", "FrenchSettings", CLASS),
        scorers=("french.options", "french.retrieval"),
        scorers_from=("engine.french.scorers", "engine.ratings.scorers"),
        presets_from=("engine.french.presets",),
        trainings_from=(
            "engine.french.train.reader",
            "engine.french.train.writer",
            "engine.french.train.seq2seq",
        ),
        explained=Lazy("engine.french.items", "explained", FUNCTION),
        cli=Lazy("engine.french.cli", "french", COMMAND),
        import_commands={
            "frenchmedmcqa": Lazy("engine.french.cli", "import_frenchmedmcqa", COMMAND)
        },
        import_title="French questions",
        report=Lazy("engine.french.section", "french_section", FUNCTION),
        run_label=Lazy("engine.french.label", "french_parts", FUNCTION),
        card=Lazy("engine.french.card", "french_face", FUNCTION),
        breakdown=Lazy("engine.french.section", "by_answers_scores", FUNCTION),
        sample=Lazy("engine.french.dataset", "ensure_sample", FUNCTION),
        sample_dataset="frenchmedmcqa-sample",
        screen=Lazy("gui.french.screen", "FrenchScreen", CLASS),
        item_widget=Lazy("gui.french.item", "FrenchItem", CLASS),
        description="French medical questions with retrieved passages (several answers may be "
        "right)",
        topic_fields=("type", "category", "subject_name"),
        mastery_fields=("type", "subject_name"),
    ),
)


def _frenchmedmcqa(store: Store, req: Request) -> Row:
    from engine.french.dataset import import_frenchmedmcqa

    info = import_frenchmedmcqa(store, req.source, req.name, req.replace)
    return {**store.dataset(info["name"]), **info}


register(
    "format",
    Format(
        "french",
        "frenchmedmcqa",
        "FrenchMedMCQA (JSON list)",
        _frenchmedmcqa,
        "JSON (*.json);;All files (*)",
        marks=("answers", "correct_answers", "nbr_correct_answers"),
    ),
)


# Retrieval corpora are no activity of their own: French QA brings their importers.
_CORPUS = "French corpus"
_PASSAGES = "Stored {n_passages} passages as corpus “{name}”."


def _corpus_from_path(store: Store, req: Request) -> Row:
    from engine.french.corpus import add_corpus_from_path

    name = req.name or req.stem
    info = add_corpus_from_path(
        store, req.source, name, req.replace, progress=req.progress, cancel=req.cancel
    )
    return {**store.corpus(name), **info}


def _corpus_from_dataset(store: Store, req: Request) -> Row:
    from engine.french.corpus import add_corpus_from_dataset

    name = req.name or f"{req.source}-passages"
    info = add_corpus_from_dataset(store, req.source, name, req.replace)
    return {**store.corpus(name), **info}


register(
    "format",
    Format(
        "corpus",
        "file",
        "A text, Markdown or JSON Lines file",
        _corpus_from_path,
        "Documents (*.txt *.md *.jsonl);;All files (*)",
        message=_PASSAGES,
        kind_title=_CORPUS,
    ),
)
register(
    "format",
    Format(
        "corpus",
        "folder",
        "A folder of .txt and .md files",
        _corpus_from_path,
        source="folder",
        message=_PASSAGES,
        kind_title=_CORPUS,
    ),
)
register(
    "format",
    Format(
        "corpus",
        "dataset",
        "The questions of an imported French set (one passage each)",
        _corpus_from_dataset,
        source="dataset",
        message=_PASSAGES,
        kind_title=_CORPUS,
        datasets="french",
    ),
)
