"""medexam's desktop app (PySide6): a thin shell over :mod:`engine`.

``gui.app.run()`` starts it. An activity's screen lives in its package (``gui/<activity>/``,
named by the activity's descriptor), the other screens in ``gui/widgets/qt_<screen>.py``; model
work runs off the UI thread (:mod:`gui.workers`) through the engine's model process.
"""
