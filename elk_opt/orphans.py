"""Child processes that end with the process that started them, however it ends.

A study's pool workers and certify's solver worker may be mid-solve when elk-opt is killed by
SIGKILL, which runs no clean-up: without this they would finish their solve (minutes) as
orphans. On Linux the kernel sends the child SIGKILL when its parent dies
(prctl(PR_SET_PDEATHSIG)); elsewhere nothing is done (a parent that ends normally still ends
its children). Dask's workers need none of this: Dask ends them itself when their parent goes.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent dies


def die_with_parent(parent: int) -> None:
    """Called first thing in the child: be SIGKILLed when `parent` (the pid that started this
    process) dies; if it died already, exit now."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request was in place
        os._exit(1)
