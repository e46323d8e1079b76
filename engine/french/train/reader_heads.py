"""The French reader's two heads on its encoder, and what each makes of the encoder's output.

* ``options`` (the default): five outputs, one per option, each trained as a yes/no on
  whether that option is right (transformers' ``multi_label_classification``: a sigmoid and a
  binary cross-entropy per option). An option is chosen when its probability reaches the
  reader's threshold; when none does, the most probable one (every question has one right
  option at least: :func:`engine.french.reader.select_options`). The threshold is the one of
  :data:`THRESHOLDS` that scores best on the dev set after each epoch, kept with the best
  epoch: FrenchMedMCQA's training set has a single right answer in 27% of its questions, its
  dev and test sets in 52%, so the training set's own balance would choose too many.
* ``combinations``: one class per combination of right letters seen in the training set
  (31 in FrenchMedMCQA's), a softmax over them, the most probable chosen.

Why options by default: over FrenchMedMCQA's 31 combinations the training set's own
distribution already has an entropy of 3.36 nats against ln 31 ≈ 3.43 for none, so a
combinations head that has learnt nothing beyond the prior sits at its starting loss, and
each combination is seen some 70 times; the options head learns from every question about
every option (which of its five are right, and how many a wording asks for: "laquelle" or
"lesquelles").

>>> targets("options", list("abcde"), {"correct_answers": ["a", "d"]})
[1.0, 0.0, 0.0, 1.0, 0.0]
>>> targets("combinations", ["a", "b", "ad"], {"correct_answers": ["d", "a"]})
2
>>> best_threshold([{"a": 0.9, "b": 0.6, "c": 0.1, "d": 0.1, "e": 0.1}], [{"a"}], "emr")[0]
0.65
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.french.items import LETTERS, gold
from engine.french.reader import THRESHOLD, select_options
from engine.french.scoring import summarise
from engine.french.train.reader_data import ReaderError, combination, labels

if TYPE_CHECKING:
    import torch

    from engine.types import JSONDict

HEADS = ("options", "combinations")
#: The options head's thresholds tried on the dev set.
THRESHOLDS = tuple(round(0.05 * k, 2) for k in range(1, 20))
#: The dev measures that can pick the best epoch (and the options head's threshold).
MEASURES = ("hamming", "emr")


def classes_for(head: str, items: Sequence[JSONDict]) -> list[str]:
    """The head's outputs: the five letters, or the combinations present in ``items``."""
    if head == "options":
        return list(LETTERS)
    return labels(items)


def head_config(head: str, classes: list[str]) -> JSONDict:
    """What transformers' ``AutoModelForSequenceClassification`` is given for a new head."""
    problem = "multi_label_classification" if head == "options" else "single_label_classification"
    return {
        "num_labels": len(classes),
        "id2label": dict(enumerate(classes)),
        "label2id": {c: i for i, c in enumerate(classes)},
        "problem_type": problem,
    }


def targets(head: str, classes: list[str], item: JSONDict) -> int | list[float]:
    """An item's training target: a 0/1 per option, or the index of its combination."""
    right = gold(item)
    if head == "options":
        return [1.0 if c in right else 0.0 for c in classes]
    return classes.index(combination(right))


def option_chances(head: str, classes: list[str], logits: torch.Tensor) -> list[dict[str, float]]:
    """Each row's probability that each option is right: the option's sigmoid, or the sum
    of the probabilities of the combinations that hold it."""
    import torch

    if head == "options":
        rows = torch.sigmoid(logits.float()).tolist()
        return [dict(zip(classes, row, strict=True)) for row in rows]
    rows = torch.softmax(logits.float(), dim=-1).tolist()
    return [
        {c: sum(p for k, p in zip(classes, row, strict=True) if c in k) for c in LETTERS}
        for row in rows
    ]


def choose(head: str, classes: list[str], logits: torch.Tensor, threshold: float) -> list[list[str]]:  # fmt: skip
    """The letters chosen for each row of ``logits``."""
    if head == "options":
        return [select_options(p, threshold) for p in option_chances(head, classes, logits)]
    return [sorted(classes[i]) for i in logits.argmax(dim=-1).tolist()]


def best_threshold(
    chances: Sequence[dict[str, float]], golds: Sequence[frozenset[str] | set[str]], measure: str
) -> tuple[float, JSONDict]:
    """The threshold of :data:`THRESHOLDS` whose choices score best on ``measure`` (ties: the
    one nearest 0.5), and the scores it gives."""
    found: list[tuple[float, float, float, JSONDict]] = []
    for t in THRESHOLDS:
        scores: JSONDict = dict(
            summarise((select_options(p, t), g) for p, g in zip(chances, golds, strict=True))
        )
        found.append((scores[measure], -abs(t - THRESHOLD), t, scores))
    _, _, threshold, scores = max(found, key=lambda row: row[:3])
    return threshold, scores


def kept_threshold(manifest: JSONDict) -> float:
    """The threshold a trained options reader answers with: its best epoch's on the dev set
    (0.5 when it was trained without one)."""
    best = manifest.get("best_epoch")
    for row in manifest.get("evals") or []:
        if row.get("epoch") == best and row.get("threshold") is not None:
            return float(row["threshold"])
    return THRESHOLD


def dev_loss(head: str, classes: list[str], logits: torch.Tensor, items: Sequence[JSONDict]) -> float | None:  # fmt: skip
    """The head's loss on the dev set (its training loss, measured on questions it never
    learnt from; a combinations head leaves out the dev questions whose combination it has
    no class for). None when there is nothing to measure."""
    import torch
    from torch.nn import functional

    if head == "options":
        wanted = torch.tensor([targets(head, classes, i) for i in items], dtype=torch.float32)
        return round(float(functional.binary_cross_entropy_with_logits(logits, wanted)), 4)
    known = [(row, classes.index(c)) for row, c in enumerate(combination(gold(i)) for i in items) if c in classes]  # fmt: skip
    if not known:
        return None
    rows, right = zip(*known, strict=True)
    return round(float(functional.cross_entropy(logits[list(rows)], torch.tensor(right))), 4)


def prior_loss(
    head: str, classes: list[str], train: Sequence[JSONDict], dev: Sequence[JSONDict]
) -> float | None:
    """The dev loss of a head that learnt only the training set's frequencies (each
    option's share of right answers, or each combination's share): the loss a reader must
    go below to have learnt anything from the questions themselves."""
    import math

    if not dev or not train:
        return None
    if head == "options":
        share = {c: sum(c in gold(i) for i in train) / len(train) for c in classes}
        share = {c: min(max(p, 1e-6), 1 - 1e-6) for c, p in share.items()}
        losses = [-math.log(share[c] if c in gold(i) else 1 - share[c]) for i in dev for c in classes]  # fmt: skip
    else:
        counts = {c: 0 for c in classes}
        for i in train:
            counts[combination(gold(i))] += 1
        losses = [-math.log(counts[k] / len(train)) for k in (combination(gold(i)) for i in dev) if k in counts]  # fmt: skip
    return round(sum(losses) / len(losses), 4) if losses else None


def freeze(model: Any, layers: int) -> int:
    """Keep the embeddings and the lowest ``layers`` layers of ``model``'s encoder as they
    are (all of them when ``layers`` is more than it has); the number frozen."""
    if layers <= 0:
        return 0
    base = getattr(model, "base_model", model)
    blocks = getattr(getattr(base, "encoder", None), "layer", None)
    embeddings = getattr(base, "embeddings", None)
    if blocks is None or embeddings is None:
        raise ReaderError(
            "--freeze: this encoder's layers are not where BERT-like encoders keep them "
            "(embeddings, encoder.layer); train it whole (--freeze 0)"
        )
    frozen = min(layers, len(blocks))
    for part in [embeddings, *blocks[:frozen]]:
        for p in part.parameters():
            p.requires_grad_(False)
    return frozen
