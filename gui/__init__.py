"""medexam's desktop app (PySide6): a thin shell over :mod:`engine`.

``gui.app.run()`` starts it. Every screen lives in ``gui/widgets/qt_<screen>.py``; model work
runs off the UI thread (:mod:`gui.workers`) through the engine's model process.
"""
