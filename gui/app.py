"""Start the desktop app: ``gui.app.run()`` (what ``medexam gui`` calls).

Heavy libraries (llama_cpp, torch, sentence_transformers, jieba) are imported only when a
screen first needs them, so the window shows at once.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from PySide6.QtCore import QCoreApplication, QTimer
    from PySide6.QtWidgets import QApplication

    from gui.main_window import MainWindow

STYLE = Path(__file__).with_name("style.qss")


def create_app(argv: list[str] | None = None) -> QApplication:
    """The QApplication (created once), styled."""
    from PySide6.QtGui import QFont
    from PySide6.QtWidgets import QApplication

    app = cast("QApplication | None", QApplication.instance())  # one made here, if any
    if app is None:
        app = QApplication(argv if argv is not None else sys.argv[:1])
    app.setApplicationName("medexam")
    app.setOrganizationName("medexam")
    app.setApplicationDisplayName("medexam")
    app.setStyle("Fusion")
    font = app.font()
    if font.pointSizeF() < 10:
        font.setPointSizeF(10)
    # Chinese questions need a CJK font; Qt falls back to one when the system has it.
    font.setStyleHint(QFont.StyleHint.SansSerif)
    app.setFont(font)
    if STYLE.is_file():
        icons = (Path(__file__).parent / "icons").as_posix()
        app.setStyleSheet(STYLE.read_text(encoding="utf-8").replace("{icons}", icons))
    return app


def create_window(
    db_path: str | None = None, settings_path: str | None = None, ready: bool = True
) -> MainWindow:
    """The main window over the database ``db_path`` (default: the user data folder's).

    With ``ready=False`` the database is opened later, by ``window.ready()``: :func:`run`
    shows the window first.
    """
    from gui.main_window import MainWindow
    from gui.models import use_settings_file

    if settings_path is not None:
        use_settings_file(settings_path)
    window = MainWindow(db_path)
    # A default model that cannot be used: the sentence saying so stays in the status bar.
    window.host.notice.connect(window.statusBar().showMessage)
    if ready:
        window.ready()
    return window


def collect_in_main_thread(app: QCoreApplication) -> QTimer:
    """Run Python's garbage collector only in the main thread, from a timer.

    The collector runs in whichever thread happens to allocate; a Qt object it frees from a
    worker thread (a closed screen's widget caught in a reference cycle) can crash the app.
    Returns the timer.
    """
    import gc

    from PySide6.QtCore import QTimer

    def collect() -> None:
        for generation, (count, threshold) in enumerate(
            zip(gc.get_count(), gc.get_threshold(), strict=True)
        ):
            if count <= threshold:
                break
            gc.collect(generation)

    gc.disable()
    timer = QTimer(app)
    timer.timeout.connect(collect)
    timer.start(500)
    return timer


def launch(db_path: str | None = None) -> int:
    """Start the app over ``db_path`` (``None``: the default database); a path that cannot
    hold a medexam database, or a user data folder that cannot be written in, is refused
    first, in one line on stderr (exit code 1)."""
    from engine.errors import UserError
    from engine.paths import data_dir
    from engine.store.store import check_path

    try:
        data_dir()  # MEDEXAM_HOME's or the default one: said before any window opens
        check_path(db_path)
    except UserError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return run(db_path=db_path)


def run(db_path: str | None = None, argv: list[str] | None = None) -> int:
    """Show the window and run until it is closed; return the exit code.

    The window is painted before the database and the first screen are opened. With
    ``MEDEXAM_STARTUP_TIMING=1`` the seconds from process start to the painted window and to
    the ready screen are printed (``=quit`` then closes the app).
    """
    from PySide6.QtCore import QTimer

    app = create_app(argv)
    window = create_window(db_path, ready=False)
    window.show()
    app.processEvents()  # paint it now
    collect_in_main_thread(app)
    if os.environ.get("MEDEXAM_STARTUP_PROBE"):  # bench/startup.py: the wall clock at paint
        print(f"painted at {time.time():.6f}", file=sys.stderr, flush=True)
    shown = time.time() - _process_start()
    timing = os.environ.get("MEDEXAM_STARTUP_TIMING")

    def ready() -> None:
        window.ready()
        if timing:
            print(
                f"window shown {shown:.2f} s, ready {time.time() - _process_start():.2f} s "
                "after the process started",
                file=sys.stderr,
            )
            if timing == "quit":
                QTimer.singleShot(200, window.close)

    QTimer.singleShot(0, ready)
    return int(app.exec())


def _process_start() -> float:
    """When this process started (wall clock), from /proc where there is one."""
    try:
        with open("/proc/self/stat") as fh:
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return _IMPORTED


_IMPORTED = time.time()


if __name__ == "__main__":
    raise SystemExit(run())
