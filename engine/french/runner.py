"""Model runs over a FrenchMedMCQA data set: retrieve → prompt → answer → parse → score → store.

Each answer is stored as soon as it is produced (``chosen`` and ``gold`` as "A + D"; the
letters, the passages used and what retrieval did in ``extra``; the Hamming score, exact match
and retrieval hit as the scores of :mod:`engine.french.scorers`), so an interrupted run can be
resumed with ``resume=RUN_ID`` and a stored run scored again. The summary holds the
Hamming score, the EMR, both by number of correct answers, and retrieval recall@k over the
questions whose own passage is in the corpus (corpora built ``--from-dataset``).

Evaluation integrity: a passage made from a question (its source names the question's data
set and id, or it holds near-identical question text) is never given to the reader for that
same question; the next best passage takes its place, and the summary counts the questions
that had their own passage excluded (``own_passages_excluded``). Retrieval recall of the own
passage is still measured on the unfiltered ranking, as a diagnostic of the retriever. The
``oracle`` setting gives the own passage on purpose: the run is then labelled "oracle" (its
model column, so in every list, report and export, and ``oracle`` in the summary).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from engine.core.chance import multi_answer_chance
from engine.core.runs import Job, Spec
from engine.core.scoring import failed, percent_mean
from engine.french.activity import FRENCH
from engine.french.context import answer_fields, reader_context
from engine.french.dataset import LETTERS
from engine.french.reader import Reader
from engine.french.settings import FrenchSettings, french_settings
from engine.store.store import Store

if TYPE_CHECKING:
    from collections.abc import Sequence

    from engine.french.dataset import FrenchQuestion
    from engine.french.index import Index
    from engine.models.pool import ModelPool
    from engine.types import Row


def _options_block(answers: Sequence[Row]) -> dict[str, Any]:
    """``n``, and the Hamming score and EMR in percent over ``answers`` (None for none)."""
    return {
        "n": len(answers),
        "hamming": percent_mean(a["scores"].get("hamming") for a in answers),
        "emr": percent_mean(a["scores"].get("exact") for a in answers),
    }


def french_sections(store: Store, run_id: int) -> dict[str, Any]:
    """The French QA's own entries of a run's summary, laid over its counts and its scorers'
    metrics (:func:`engine.core.scoring.summarize`: Hamming and EMR over the answered questions,
    accuracy, the exact matches, over all): the Hamming score and EMR by number of right
    options, the retrieval's recall at k, the chance scores, the questions whose own
    passages were left out, whether the run was an oracle, its settings."""
    run = store.run(run_id)
    answers = store.answers(run_id)
    out: dict[str, Any] = {"run_id": run_id, "dataset": run["dataset"], "model": run["model"]}
    groups: dict[int, list[Row]] = {}
    for a in answers:
        groups.setdefault(len((a["extra"] or {}).get("gold", [])), []).append(a)
    out["by_n_answers"] = {str(n): _options_block(groups[n]) for n in sorted(groups)}
    hits = [a["scores"]["retrieved"] for a in answers if a["scores"].get("retrieved") is not None]
    settings = run["settings"] or {}
    k = settings.get("k")
    out["recall_at_k"] = {"k": k, "n": len(hits), "recall": percent_mean(hits)} if hits else None
    replied = [a for a in answers if not failed(a)]
    golds = [(a["extra"] or {}).get("gold") or [] for a in replied]
    chance = multi_answer_chance(golds, "".join(LETTERS))  # uniform guessing (engine.core.chance)
    # accuracy (exact matches over all questions) is at chance the EMR
    out["chance"] = (
        {"hamming": chance[0], "emr": chance[1], "accuracy": chance[1]} if chance else {}
    )
    out["own_passages_excluded"] = sum(bool(a["scores"].get("own_excluded")) for a in answers)
    out["oracle"] = bool(settings.get("oracle"))
    out["settings"] = settings
    return out


#: Label added to the model of an oracle run (it sees each question's own passage).
ORACLE_LABEL = " (oracle)"


def _trained_reader(name: str | None) -> Any:
    """The trained reader ``name`` (:mod:`engine.train`: an encoder classifier or a seq2seq
    writer, loaded by its kind's answerer); None for a chat model."""
    if not name:
        return None
    from engine.train.kinds import trained_answerer

    return trained_answerer(name, "reader")


class FrenchJob(Job):
    """One model's run over a FrenchMedMCQA data set."""

    def __init__(self, store: Store, dataset: str, settings: dict[str, Any], pool: ModelPool):
        from engine.french.index import load_index

        super().__init__()
        self.dataset = dataset
        self.items = store.items(dataset, settings["limit"])
        trained = _trained_reader(settings.get("reader"))
        if trained is not None and not settings["index"] and trained.index:
            settings = {**settings, "index": trained.index, "k": 1}  # as it was trained
        self.index: Index | None = load_index(settings["index"]) if settings["index"] else None
        self.k = settings["k"]
        # Recall is known when the passages were made from this very data set's questions.
        self.recall_known = self.index is not None and self.index.corpus_dataset == dataset
        self.oracle = bool(settings.get("oracle"))
        self.reader: Reader | Any
        if trained is not None:
            self.reader, name = trained, None
            self.model_label = trained.name + (ORACLE_LABEL if self.oracle else "")
            settings = {**settings, "encoder": trained.manifest.get("encoder_label")}
        else:
            self.model = self.lease(pool, settings["model"])
            self.model_label = self.model.name + (ORACLE_LABEL if self.oracle else "")
            self.reader = Reader(
                self.model,
                settings["method"],
                settings["threshold"],
                temperature=settings.get("temperature") or 0.0,
                seed=settings.get("seed") or 0,
            )
            name = self.model.name
        index = self.index
        self.settings = {
            **settings,
            "model": name,
            "retriever": index.retriever if index is not None else None,
            "corpus": index.corpus if index is not None else None,
        }

    def answer(self, item: FrenchQuestion, position: int) -> dict[str, Any]:
        started = time.perf_counter()
        context = reader_context(self.index, self.dataset, item, self.k, self.oracle)
        answer = self.reader.answer(item, [h.text for h in context.passages])
        fields = answer_fields(context, self.dataset, answer.letters, self.recall_known)
        fields["extra"]["probabilities"] = answer.probabilities
        fields["extra"].update(answer.extra)  # how its letters were read (parsed_from)…
        return {
            "response": answer.response,
            **fields,
            "latency_s": round(time.perf_counter() - started, 3),
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
        }


#: French QA for :func:`engine.core.runs.run`: the settings are :class:`FrenchSettings`' (``index``
#: names a built index, or none for no passage; ``oracle`` gives each question its own
#: passage, see the module docstring).
SPEC = Spec(FRENCH, french_settings, FrenchJob, french_sections, derived=("retriever", "corpus"))


def run_french(
    store: Store,
    dataset: str,
    model: str | None = None,
    *,
    settings: FrenchSettings | None = None,
    **given: Any,
) -> dict[str, Any]:
    """Answer the questions of ``dataset`` with the model called ``model`` and store the run.

    The settings are ``settings`` with the :class:`~engine.french.settings.FrenchSettings`
    fields given as keywords over them: with ``index`` (a built index's name) the ``k`` best
    passages for "question + its five options" are given to the reader, a question's own
    passage left out unless ``oracle``; without, none. The other keywords are
    :func:`engine.core.runs.run`'s (``resume`` continues a stored run with its own settings,
    ``pool``, ``progress``, ``cancel``…): a shorthand for it.
    """
    from engine.core.runs import run_settings

    chosen = {**given, "settings": settings} | ({"model": model} if model is not None else {})
    return run_settings(store, FRENCH.id, dataset, chosen)
