"""The processes a test started, read from /proc (Linux): a test collects a command's
descendants BEFORE killing it, since the orphans are re-parented and no longer traceable."""

from __future__ import annotations

import time
from pathlib import Path

Process = tuple[int, str]  # (pid, start time): a pid reused by another process is not ours


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()  # after the command name, which may hold spaces


def descendants(root: int) -> set[Process]:
    """Every living process below `root`."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[Process] = set()
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if (fields := _stat(pid)) is not None:
            found.add((pid, fields[19]))
            todo.extend(children.get(pid, []))
    return found


def alive(processes: set[Process]) -> set[Process]:
    """Those still running (a zombie has ended: it waits only to be reaped)."""
    return {(pid, start) for pid, start in processes
            if (fields := _stat(pid)) is not None and fields[19] == start and fields[0] != "Z"}


def wait_gone(processes: set[Process], seconds: float) -> set[Process]:
    """Wait up to `seconds` for every process to end; those still alive then."""
    deadline = time.monotonic() + seconds
    while (left := alive(processes)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left
