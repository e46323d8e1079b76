"""The trained French reader's heads (:mod:`engine.french.train.reader_heads`): a yes/no per option
(the default) whose threshold is picked on the dev set and kept with the reader, or a class
per combination of right letters; the dev loss beside the loss of the training set's
frequencies alone; lower layers kept frozen. On a tiny encoder made from a config and the
shipped sample (15 questions)."""

from __future__ import annotations

import math
from pathlib import Path

import train_fixtures
from safetensors.torch import load_file

from engine.french.dataset import SAMPLE_DATASET, ensure_sample
from engine.french.train.reader_heads import best_threshold, kept_threshold, prior_loss, targets
from engine.french.train.reader_task import TrainedReader
from engine.store.store import Store
from engine.train.artefacts import artefact_dir, find
from engine.train.loop import train

tiny_encoder = train_fixtures.tiny_encoder


def trained(store: Store, encoder: Path, name: str, **given: object) -> dict:
    ensure_sample(store)
    settings = {**train_fixtures.settings(encoder), "epochs": 2, "dev_fraction": 0.2,
                "learning_rate": 1e-3, **given}  # fmt: skip
    row = train(store, "french-reader", SAMPLE_DATASET, settings, name=name)
    assert row["status"] == "finished", row["error"]
    return row


def test_the_threshold_is_picked_on_the_dev_measure() -> None:
    chances = [
        {"a": 0.9, "b": 0.6, "c": 0.3, "d": 0.2, "e": 0.1},
        {"a": 0.2, "b": 0.7, "c": 0.1, "d": 0.1, "e": 0.1},
        {"a": 0.8, "b": 0.55, "c": 0.1, "d": 0.1, "e": 0.1},
        {"a": 0.8, "b": 0.4, "c": 0.45, "d": 0.42, "e": 0.1},
    ]
    golds = [{"a"}, {"b"}, {"a"}, {"a", "b", "c", "d"}]
    # 0.65 to 0.95 all leave one letter to each (three right): the one nearest 0.5 is kept
    threshold, scores = best_threshold(chances, golds, "emr")
    assert threshold == 0.65 and scores["emr"] == 75.0
    # a question with three right letters, two of them at 0.3: Hamming wants them
    threshold, scores = best_threshold([{"a": 0.8, "b": 0.3, "c": 0.3, "d": 0.1, "e": 0.1}],
                                       [{"a", "b", "c"}], "hamming")  # fmt: skip
    assert threshold == 0.3 and scores["hamming"] == 100.0
    assert kept_threshold({"best_epoch": 2, "evals": [{"epoch": 1, "threshold": 0.3},
                           {"epoch": 2, "threshold": 0.7}]}) == 0.7  # fmt: skip
    assert kept_threshold({"best_epoch": 1, "evals": []}) == 0.5


def test_targets_and_the_loss_of_frequencies_alone() -> None:
    train_items = [{"correct_answers": ["a"]}, {"correct_answers": ["a", "b"]}]
    dev = [{"correct_answers": ["a"]}]
    letters = list("abcde")
    assert targets("options", letters, dev[0]) == [1.0, 0.0, 0.0, 0.0, 0.0]
    # a is always right (clipped to 1 - 1e-6), b half the time, c, d, e never (clipped)
    expected = (-math.log(1 - 1e-6) - math.log(0.5) - 3 * math.log(1 - 1e-6)) / 5
    assert prior_loss("options", letters, train_items, dev) == round(expected, 4)
    # combinations "a" and "ab", each once: the dev question's "a" costs ln 2
    assert prior_loss("combinations", ["a", "ab"], train_items, dev) == round(math.log(2), 4)
    assert prior_loss("options", letters, train_items, []) is None


def test_an_options_reader_answers_with_its_dev_threshold(store: Store, tiny_encoder: Path) -> None:  # fmt: skip
    row = trained(store, tiny_encoder, "tiny-options")
    data = row["data"]
    assert data["head"] == "options" and data["classes"] == list("abcde")
    assert data["dev_prior_loss"] > 0 and data["n_dev"] == 3
    evals = row["evals"]
    assert [e["epoch"] for e in evals] == [1, 2]
    assert all(0.05 <= e["threshold"] <= 0.95 and e["loss"] > 0 for e in evals)
    assert all(e["score"] == e["emr"] for e in evals)  # --pick-on emr by default
    manifest = find("tiny-options", "reader")
    best = next(e for e in evals if e["epoch"] == manifest["best_epoch"])
    reader = TrainedReader("tiny-options")
    assert reader.head == "options" and reader.threshold == best["threshold"]
    item = store.items(SAMPLE_DATASET)[0]
    answer = reader.answer(item)
    assert answer.extra == {"head": "options", "threshold": best["threshold"]}
    chances = answer.probabilities
    assert set(chances) == set("abcde") and all(0 < p < 1 for p in chances.values())
    above = [c for c in "abcde" if chances[c] >= best["threshold"]]
    assert answer.letters == (above or [max(chances, key=chances.get)])


def test_a_combinations_reader_and_picking_on_hamming(store: Store, tiny_encoder: Path) -> None:
    row = trained(store, tiny_encoder, "tiny-combinations", head="combinations", pick_on="hamming")  # fmt: skip
    assert row["data"]["head"] == "combinations" and len(row["data"]["classes"]) > 5
    assert all(e["score"] == e["hamming"] and "threshold" not in e for e in row["evals"])
    reader = TrainedReader("tiny-combinations")
    answer = reader.answer(store.items(SAMPLE_DATASET)[0])
    assert "".join(answer.letters) == answer.extra["combination"]
    # each option's chance: the sum over the combinations holding it
    assert sum(answer.probabilities.values()) >= max(answer.probabilities.values())


def test_frozen_layers_keep_their_weights(store: Store, tiny_encoder: Path) -> None:
    before = load_file(str(tiny_encoder / "model.safetensors"))
    row = trained(store, tiny_encoder, "tiny-frozen", freeze=5)
    assert row["data"]["frozen_layers"] == 1  # the tiny encoder has one
    after = load_file(str(artefact_dir("tiny-frozen") / "model.safetensors"))
    kept = [k for k in before if k.startswith(("embeddings.", "encoder."))]
    assert kept and all((after[f"bert.{k}"] == before[k]).all() for k in kept)
    assert not (after["bert.pooler.dense.weight"] == before["pooler.dense.weight"]).all()
