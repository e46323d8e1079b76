"""Entry point of the frozen medexam app (see ``medexam.spec``).

Models run in a child process started with multiprocessing's "spawn" method. In a frozen app
that child is this same executable, so ``freeze_support()`` must run first: in the child it
takes over and serves the model instead of starting the command line.
"""

import multiprocessing

if __name__ == "__main__":
    multiprocessing.freeze_support()

    from engine.entry import main

    main()
