"""Writing files safely: the whole file or nothing (a temp file renamed over the target), and paths
checked before any work starts."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..errors import OutputError


def write_atomic(path: str | os.PathLike, data: bytes, durable: bool = False) -> None:
    """Write the whole file or nothing: a temp file beside the target, renamed over it at the end.
    The new file gets the permissions an ordinary open() would give it (the umask), not mkstemp's 0600.
    ``durable``: the data and the rename reach the disk before this returns (fsync of the file and its
    directory), so a crash of the machine, not only of gradc, leaves the old file or the new one (checkpoints)."""
    target = Path(path)
    check_writable(target)
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


def _sync_directory(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def check_writable(path: str | os.PathLike) -> None:
    """Fail early, before any work, if ``path`` cannot be written."""
    target = Path(path)
    folder = target.parent
    if not folder.is_dir():
        raise OutputError(f"cannot write '{target}': no such directory '{folder}'")
    if target.is_dir():
        raise OutputError(f"cannot write '{target}': it is a directory")
    if not os.access(folder, os.W_OK):
        raise OutputError(f"cannot write '{target}': directory '{folder}' is not writable")


def _mode_for(target: Path) -> int:
    if target.exists():
        return target.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
