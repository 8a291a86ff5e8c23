"""Files in and out: inputs read whole with a cap, outputs written whole or not at all.

Reading stops at a size cap (an endless file such as /dev/zero included) and takes gzip,
told by its first bytes; writing goes to a temporary file beside the target that is renamed
into place, so an interrupted run leaves no half-written output (elk_opt.io turns documents
into these files and back). Every failure is an InputError that names the path.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import gzip
import io
import json
import os
import re
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from elk_opt.errors import InputError

MAX_JSON_BYTES = 2**30  # an input file's size cap: a 100,000-op instance is about 100 MB
STDIN = "-"  # an input path that would mean standard input, which elk-opt does not read
_READ_CHUNK = 2**24  # read in pieces: a signal is handled between two, and the cap checked


def read_bytes(path: str | Path, limit: int) -> bytes:
    """A file's bytes, at most `limit` of them: a larger file (or an endless one such as
    /dev/zero) is an InputError once `limit` bytes are read. Other failures raise OSError."""
    if str(path) == STDIN:
        raise InputError(f"{path}: standard input is not supported: give a file name")
    chunks: list[bytes] = []
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(min(_READ_CHUNK, limit + 1 - size)):
            size += len(chunk)
            if size > limit:
                raise InputError(f"{path}: larger than {limit:,} bytes, the most elk-opt reads")
            chunks.append(chunk)
    return b"".join(chunks)


def read_text(path: str | Path) -> str:
    """A file's text, plain or gzipped (told by its first bytes, not its name), at most
    MAX_JSON_BYTES of it; any failure becomes an InputError naming the file."""
    data = b""
    try:
        data = read_bytes(path, MAX_JSON_BYTES)
        if data[:2] == GZIP_MAGIC:
            data = gunzip(data)
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except GzipTooLarge:
        raise InputError(f"{path}: gzip data decompresses to more than "
                         f"{MAX_GUNZIPPED_BYTES:,} B") from None
    except (OSError, EOFError, zlib.error) as e:  # gzip's errors are OSError and EOFError
        if data[:2] == GZIP_MAGIC:
            raise InputError(f"{path}: not a readable gzip file ({e})") from None
        raise InputError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    return text


GZIP_MAGIC = b"\x1f\x8b"
MAX_GUNZIPPED_BYTES = 2**30  # a 100,000-op plan is far smaller; a gzip bomb is refused


class GzipTooLarge(Exception):
    """The data inflates past MAX_GUNZIPPED_BYTES."""


def gunzip(data: bytes) -> bytes:
    """Every member of a gzip stream, refusing to inflate past MAX_GUNZIPPED_BYTES."""
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
        out = f.read(MAX_GUNZIPPED_BYTES + 1)
    if len(out) > MAX_GUNZIPPED_BYTES:
        raise GzipTooLarge
    return out


STDOUT = "-"  # an output path meaning standard output
NAME_MAX = 255  # bytes in one file name (every Linux file system elk-opt writes to)
_TEMP_STEM_MAX = NAME_MAX - 40  # room for `.`, `.PID.XXXXXXXX.tmp` around a temporary's stem
_data_out: list[TextIO | None] = []  # where `-` writes while messages go to stderr (data_on_stdout)


def write_atomic(path: str | Path, write: Callable[[Any], None], mode: str = "w") -> None:
    """Write through `write(file)` into a temporary file beside `path`, then rename it.

    The temporary file, `.NAME.PID.XXXXXXXX.tmp`, is removed on any exception (an interrupt
    included: see elk_opt.interrupts); one left behind by a killed process is removed by the
    next write of the same file. Every failure is an InputError naming the path.
    `-` is standard output. A path that exists and is not a regular file is written through,
    not replaced: a character device (`/dev/null`) or a FIFO gets the bytes, a symbolic link's
    target is written (atomically when it is a regular file); a block device or a socket is
    refused. Outputs that are not renamed into place are first rendered in memory, so a
    failing `write` never reaches them.
    """
    if str(path) == STDOUT:
        _write_stdout(write, mode)
        return
    target = _output_target(path)
    kind = _existing_kind(target, str(path))
    if kind == "special":
        _write_through(target, write, mode, str(path))
        return
    _remove_stale_temps(target)
    umask = os.umask(0)
    os.umask(umask)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, mode, **_text_options(mode)) as f:
            os.fchmod(f.fileno(), 0o666 & ~umask)  # mkstemp makes 0600; outputs get the usual
            write(f)
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        raise InputError(f"{path}: cannot write in {target.parent} ({e.strerror or e})") \
            from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _text_options(mode: str) -> dict[str, str]:
    # A lone surrogate (a JSON `\ud800` escape in a name) is written escaped, never a crash.
    return {} if "b" in mode else {"encoding": "utf-8", "errors": "backslashreplace"}


def _render(write: Callable[[Any], None], mode: str) -> bytes:
    """What `write` would put in a file, in memory."""
    if "b" in mode:
        buffer = io.BytesIO()
        write(buffer)
        return buffer.getvalue()
    text = io.StringIO()
    write(text)
    return text.getvalue().encode("utf-8", "backslashreplace")


def _write_stdout(write: Callable[[Any], None], mode: str) -> None:
    data = _render(write, mode)
    out = _data_out[-1] if _data_out else sys.stdout
    if out is None:  # started with stdout closed (`>&-`)
        raise InputError("-: standard output is closed")
    try:
        out.flush()
        out.buffer.write(data)
        out.buffer.flush()
    except OSError as e:
        if e.errno == errno.EPIPE:
            raise BrokenPipeError(e.errno, e.strerror) from None
        raise InputError(f"-: cannot write standard output ({e.strerror or e})") from None


@contextlib.contextmanager
def data_on_stdout() -> Iterator[None]:
    """While a command writes an output to `-`, its messages go to stderr, the data alone to
    stdout."""
    _data_out.append(sys.stdout)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _data_out.pop()


def _existing_kind(target: Path, shown: str) -> str:
    """"absent", "regular" or "special" (a character device or a FIFO) for `target`, a path
    whose symbolic links are resolved; a block device or a socket is an InputError."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return "absent"
    except OSError as e:
        raise InputError(f"{shown}: cannot write ({e.strerror or e})") from None
    if stat.S_ISREG(mode):
        return "regular"
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "special"
    what = "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) \
        else "not a regular file"
    raise InputError(f"{shown}: is {what}; name a regular file, a character device or a FIFO")


def _write_through(target: Path, write: Callable[[Any], None], mode: str, shown: str) -> None:
    """Write into a device or FIFO as it is (opened for writing, never created or renamed)."""
    data = _render(write, mode)
    try:
        fd = os.open(target, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    except OSError as e:
        raise InputError(f"{shown}: cannot write ({e.strerror or e})") from None


def check_writable(path: str | Path) -> None:
    """Fail now rather than after a long solve: `path` names a file that can be written."""
    if str(path) == STDOUT:
        return
    target = _output_target(path)
    if _existing_kind(target, str(path)) == "special":
        if not os.access(target, os.W_OK):
            raise InputError(f"{path}: cannot write (permission denied)")
        return
    try:
        fd, probe = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".tmp",
                                     dir=target.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise InputError(f"{path}: cannot write in {target.parent} ({e.strerror or e})") from None


def ensure_dir(path: str | Path) -> Path:
    """An output folder, created if needed; failure is an InputError naming it."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError(f"{path}: exists and is not a directory") from None
    except OSError as e:
        raise InputError(f"{path}: cannot create directory ({e.strerror or e})") from None
    return folder


def _output_target(path: str | Path) -> Path:
    """The file a write lands in: `path` with its symbolic links resolved (writing through a
    link writes its target, as a shell redirection does)."""
    text = str(path)
    if not text:
        raise InputError("output path is empty")
    if text.endswith(os.sep):
        raise InputError(f"{text}: is a directory; name a file")
    name = os.fsencode(Path(text).name)
    if len(name) > NAME_MAX:
        raise InputError(f"{text[:40]}...: file name of {len(name)} bytes, longer than the "
                         f"{NAME_MAX} a file system allows")
    try:
        target = Path(os.path.realpath(text))
        if target.is_dir():
            raise InputError(f"{text}: is a directory; name a file")
        if not target.parent.is_dir():
            raise InputError(f"{text}: directory {Path(text).parent} does not exist")
    except OSError as e:
        raise InputError(f"{text}: cannot write ({e.strerror or e})") from None
    return target


def _temp_stem(target: Path) -> str:
    """The target's name, cut so that a temporary's name stays within NAME_MAX bytes."""
    return os.fsencode(target.name)[:_TEMP_STEM_MAX].decode("utf-8", "ignore") \
        if len(os.fsencode(target.name)) > _TEMP_STEM_MAX else target.name


def _temp_prefix(target: Path) -> str:
    return f".{_temp_stem(target)}.{os.getpid()}."


def _remove_stale_temps(target: Path) -> None:
    """Remove temporary files of `target` whose writing process no longer runs."""
    stem = _temp_stem(target)
    pattern = re.compile(re.escape(f".{stem}.") + r"([0-9]+)\.[A-Za-z0-9_]+\.tmp")
    for leftover in target.parent.glob(glob.escape(f".{stem}.") + "*.tmp"):
        match = pattern.fullmatch(leftover.name)
        if match and not _running(int(match.group(1))):
            with contextlib.suppress(OSError):
                leftover.unlink()


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def save_json(path: str | Path, data: Any) -> None:
    """Write `data` as JSON; gzipped when the name ends in `.gz` (every reader takes either)."""
    if str(path) != STDOUT and str(path).endswith(".gz"):
        text = json.dumps(data, separators=(",", ":")).encode("utf-8", "backslashreplace")
        write_atomic(path, lambda f: f.write(gzip.compress(text, mtime=0)), mode="wb")
        return
    write_atomic(path, lambda f: json.dump(data, f, separators=(",", ":")))
