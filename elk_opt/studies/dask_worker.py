"""Dask preload for the local cluster a study starts (`LocalCluster(preload=...)`).

Its worker processes leave the terminal's process group, so a Ctrl-C reaches elk-opt alone,
which then closes the cluster (the workers also exit when elk-opt does: Dask ties them to their
parent). Otherwise CP-SAT, solving in a worker's task thread, takes the SIGINT in a thread it
did not register its handler from and aborts the worker.
"""

from __future__ import annotations

import os
from typing import Any


def dask_setup(worker: Any) -> None:
    os.setpgrp()
