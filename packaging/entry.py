"""Entry point of the frozen medexam app (see ``medexam.spec``).

Models run in a child process started with multiprocessing's "spawn" method (on every
system). In a frozen app that child is this same executable, so ``freeze_support()`` must run
first: in the child it takes over and serves the model instead of starting the command line.

The executable is a console program (the command line). Started as a desktop app it opens the
window: macOS runs ``medexam.app`` with no arguments, and on Windows the Start menu shortcut
runs ``medexam.exe gui``, whose console window of its own is hidden.
"""

import multiprocessing
import sys


def desktop_start() -> None:
    """Turn a start from the desktop into ``medexam gui``."""
    if sys.platform == "darwin" and ".app/Contents/MacOS/" in sys.executable:
        if not [arg for arg in sys.argv[1:] if not arg.startswith("-psn_")]:
            sys.argv[1:] = ["gui"]  # double-clicked (older systems add a -psn_ argument)
    if sys.platform == "win32" and sys.argv[1:] == ["gui"]:
        import ctypes

        kernel32 = ctypes.windll.kernel32
        if kernel32.GetConsoleProcessList((ctypes.c_uint * 2)(), 2) == 1:
            window = kernel32.GetConsoleWindow()  # the console is ours alone, not a terminal's
            if window:
                ctypes.windll.user32.ShowWindow(window, 0)


if __name__ == "__main__":
    multiprocessing.freeze_support()
    desktop_start()

    from engine.entry import main

    main()
