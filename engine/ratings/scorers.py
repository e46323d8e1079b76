"""The two scorers of explanations, for every activity whose answers carry one
(``Activity.explained``): ``explanation-rating``, given by a person
(:mod:`engine.ratings.people`; stored as ``explanation-rating@RATER``), and
``explanation-judge``, computed by a judge model (:mod:`engine.ratings.judge`; stored as
``explanation-judge@MODEL``). Both store the five perspectives' ratings (1 to 5) under their
keys; a person's also ``rated`` (0 for a skipped answer) with the comment as its
explanation, a judge's ``parsed`` (0 when its reply gave no five ratings) with the reply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.activities import activities
from engine.core.scoring import Context, ScoreValue, Value
from engine.errors import UserError
from engine.ratings import judge as judging
from engine.ratings.perspectives import KEYS, explained
from engine.registry import register

if TYPE_CHECKING:
    from engine.types import Row

#: The activities whose answers carry an explanation to rate (``Activity.explained``).
ACTIVITIES = tuple(a.id for a in activities().values() if a.explained)
PERSON = "explanation-rating"
JUDGE = "explanation-judge"
REPLY_CHARS = 2000  # of a judge's reply kept with its scores


@register(
    "scorer", name=PERSON, activities=ACTIVITIES, keys=(*KEYS, "rated"), by="rater", person=True
)
def rating(answer: Row, item: Row, context: Context) -> dict[str, ScoreValue | Value]:
    """A person's ratings of the explanation, 1 to 5 on the five perspectives of the
    ExplainCPE paper (given with `medexam rate` or the app's Rate explanations)."""
    raise UserError("explanations are rated by people: use `medexam rate RUN`")


def _rateable(context: Context) -> bool:
    settings = context.settings
    return settings.get("method", "generate") == "generate"


@register(
    "scorer",
    name=JUDGE,
    activities=ACTIVITIES,
    keys=(*KEYS, "parsed"),
    version=judging.PROMPT_VERSION,
    needs_model=True,
    by="judge",
    applies=_rateable,
)
def judged(answer: Row, item: Row, context: Context) -> dict[str, ScoreValue | Value]:
    """A judge model's ratings of the explanation, 1 to 5 on the five perspectives of the
    ExplainCPE paper (a reply without them is stored as not parsed)."""
    seen = explained(context.run, item, answer)
    if seen is None:
        return {}
    model = context.models[str(context.options["judge"])]
    found, reply = judging.judge(model, seen)
    values: dict[str, ScoreValue | Value] = {k: (found or {}).get(k) for k in KEYS}
    values["parsed"] = Value(found is not None, reply[:REPLY_CHARS])
    return values
