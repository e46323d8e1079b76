"""The app's screens: each registered activity's screen, then the tools.

An activity appears in the sidebar when its descriptor names a screen
(:attr:`engine.activities.Activity.screen`, an activity from another installed package
included); without one its runs still show in Results and its data sets in the import dialog.
Screens are imported when first shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.activities import activities
from engine.registry import CLASS, Lazy
from gui.navigator import Practising


@dataclass(frozen=True)
class Screen:
    """A screen of the sidebar: its key, label, widget class (made with the app's context,
    imported when first shown) and tooltip."""

    key: str
    label: str
    widget: Lazy[type]
    tip: str


#: The screens after the activities'.
TOOLS = (
    Screen(
        "review",
        "Review",
        Lazy("gui.widgets.qt_review", "ReviewScreen", CLASS),
        "Questions you missed, back when they are due; mastery by topic; Anki decks",
    ),
    Screen(
        "results",
        "Results",
        Lazy("gui.widgets.qt_results", "ResultsScreen", CLASS),
        "Every run: details, comparisons, charts and exports",
    ),
    Screen(
        "experiments",
        "Experiments",
        Lazy("gui.widgets.qt_experiments", "ExperimentsScreen", CLASS),
        "Grids of runs played as one job: their runs, progress, tables and figures",
    ),
    Screen(
        "compare",
        "Compare",
        Lazy("gui.widgets.qt_compare", "CompareScreen", CLASS),
        "The same items through several models: scores, paired tests, speed and memory",
    ),
    Screen(
        "train",
        "Train",
        Lazy("gui.widgets.qt_train", "TrainScreen", CLASS),
        "Train a French reader or a consultation doctor: loss curve, Stop, evaluate",
    ),
    Screen(
        "models",
        "Models",
        Lazy("gui.widgets.qt_models", "ModelsScreen", CLASS),
        "Local GGUF models: add, inspect, load and test",
    ),
)


def screens() -> list[Screen]:
    """The sidebar's screens in order: the registered activities' that have one, the tools."""
    found = activities().values()
    shown = [Screen(a.id, a.name, a.screen, a.description) for a in found if a.screen]
    return [*shown, *TOOLS]


def practising(activity_id: str) -> bool:
    """Whether the activity's screen starts practice sessions of given questions
    (:class:`gui.navigator.Practising`: the Exam screen); its module is imported."""
    found = activities().get(activity_id)
    if found is None or found.screen is None:
        return False
    return issubclass(found.screen.load(), Practising)
