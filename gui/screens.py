"""The app's screens: each activity's screen, registered by activity id, then the tools.

An activity appears in the sidebar when a screen is registered for its id
(:func:`register_screen`); without one its runs still show in Results and its data sets in the
import dialog. Screens are imported when first shown.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Screen:
    """A screen of the sidebar: its key, label, ``module:Class`` and tooltip."""

    key: str
    label: str
    widget: str
    tip: str


#: activity id → its screen
ACTIVITY_SCREENS: dict[str, Screen] = {}


def register_screen(activity_id: str, widget: str, tip: str, label: str = "") -> None:
    """Show the activity ``activity_id`` with the screen ``widget`` (``module:Class``);
    ``label`` defaults to the activity's name."""
    from engine.activities import activity

    name = label or activity(activity_id).name
    ACTIVITY_SCREENS[activity_id] = Screen(activity_id, name, widget, tip)


register_screen(
    "exam",
    "gui.widgets.qt_exam:ExamScreen",
    "Pharmacist exam practice, timed exams and model evaluation",
)
register_screen(
    "consult",
    "gui.widgets.qt_consult:ConsultScreen",
    "Interview a simulated patient, then make your diagnosis",
)
register_screen(
    "french",
    "gui.widgets.qt_french:FrenchScreen",
    "French medical questions with retrieved passages (several answers may be right)",
)

#: The screens after the activities'.
TOOLS = (
    Screen(
        "review",
        "Review",
        "gui.widgets.qt_review:ReviewScreen",
        "Questions you missed, back when they are due; mastery by topic; Anki decks",
    ),
    Screen(
        "results",
        "Results",
        "gui.widgets.qt_results:ResultsScreen",
        "Every run: details, comparisons, charts and exports",
    ),
    Screen(
        "experiments",
        "Experiments",
        "gui.widgets.qt_experiments:ExperimentsScreen",
        "Grids of runs played as one job: their runs, progress, tables and figures",
    ),
    Screen(
        "train",
        "Train",
        "gui.widgets.qt_train:TrainScreen",
        "Train a French reader or a consultation doctor: loss curve, Stop, evaluate",
    ),
    Screen(
        "models",
        "Models",
        "gui.widgets.qt_models:ModelsScreen",
        "Local GGUF models: add, inspect, load and test",
    ),
)


def screens() -> list[Screen]:
    """The sidebar's screens in order: the registered activities' that have one, the tools."""
    from engine.registry import activities

    shown = [ACTIVITY_SCREENS[a] for a in activities() if a in ACTIVITY_SCREENS]
    return [*shown, *TOOLS]
