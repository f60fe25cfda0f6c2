"""Writing files safely: the whole file or nothing (a temp file renamed over the target), and paths
checked before any work starts."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

from ..errors import OutputError

STDIO = "-"   # as a path: stdout to write, stdin to read, as Unix tools take it


def write_atomic(path: str | os.PathLike, data: bytes, durable: bool = False) -> None:
    """Write the whole file or nothing: a temp file beside the target, renamed over it at the end.
    The new file gets the permissions an ordinary open() would give it (the umask), not mkstemp's 0600.
    ``durable``: the data and the rename reach the disk before this returns (fsync of the file and its
    directory), so a crash of the machine, not only of gradc, leaves the old file or the new one (checkpoints).
    A device or pipe (/dev/stdout, /dev/null) is written in place, never replaced; a symlink's file is replaced,
    not the link."""
    if os.fspath(path) == STDIO:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    target = Path(path)
    check_writable(target)
    if is_special_file(target):
        _write_in_place(target, data)
        return
    target = Path(os.path.realpath(target))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise OutputError(f"cannot write '{target}': {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), _mode_for(target))
            handle.write(data)
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, target)
        if durable:
            _sync_directory(target.parent)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write '{target}': {exc.strerror}") from None
        raise


def is_special_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` exists and is neither a regular file nor a directory (a device, a pipe, a socket)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _write_in_place(target: Path, data: bytes) -> None:
    try:
        with open(target, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise OutputError(f"cannot write '{target}': {exc.strerror}") from None


def _sync_directory(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def check_writable(path: str | os.PathLike) -> None:
    """Fail early, before any work, if ``path`` cannot be written."""
    if os.fspath(path) == STDIO:
        return
    target = Path(path)
    folder = target.parent
    if not folder.is_dir():
        raise OutputError(f"cannot write '{target}': no such directory '{folder}'")
    if target.is_dir():
        raise OutputError(f"cannot write '{target}': it is a directory")
    if is_special_file(target):    # written in place: its own permission counts, not its directory's
        if not os.access(target, os.W_OK):
            raise OutputError(f"cannot write '{target}': permission denied")
        return
    if not os.access(os.path.dirname(os.path.realpath(target)) or ".", os.W_OK):
        raise OutputError(f"cannot write '{target}': directory '{folder}' is not writable")


def _mode_for(target: Path) -> int:
    if target.exists():
        return target.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def is_stdout(path: str | os.PathLike | None) -> bool:
    """Whether ``path`` is the file gradc's stdout goes to (``-o /dev/stdout``): its "wrote" lines then go to stderr."""
    if path is not None and os.fspath(path) == STDIO:
        return True
    try:
        return path is not None and os.path.samestat(os.stat(path), os.fstat(1))
    except (OSError, ValueError):
        return False
