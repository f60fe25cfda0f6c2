"""Reading .npz archives of named arrays (feeds, parameters) from files gradc did not write: never a
pickle, never more memory than the arrays' headers declare and the limits allow (a deflate bomb or a
header claiming 10^12 elements is an error, not an allocation), and every failure one FormatError
naming the file and the member. A directory of .npy files reads as one set of named arrays, each
memory-mapped (its header checked against the file's size), so a data set larger than memory streams."""

from __future__ import annotations

import math
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ..errors import FormatError
from ..limits import check_allocation

NPY_MAGIC = b"\x93NUMPY"


def read_npz(path: str | Path, what: str = "arrays") -> dict[str, np.ndarray]:
    """name -> array from an .npz archive (numpy.savez / savez_compressed)."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(len(NPY_MAGIC))
            if head == NPY_MAGIC:
                raise FormatError(f"cannot read {what} '{path}': it is a single .npy array, not an .npz archive "
                                  f"of named arrays (write one with numpy.savez(path, name=array))")
            handle.seek(0)
            if not zipfile.is_zipfile(handle):
                raise FormatError(f"cannot read {what} '{path}': not an .npz archive (no zip directory)")
            with zipfile.ZipFile(handle) as archive:
                return {info.filename.removesuffix(".npy"): _member(archive, info, path, what)
                        for info in archive.infolist()}
    except OSError as exc:
        raise FormatError(f"cannot read {what} '{path}': {exc.strerror or exc}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, NotImplementedError, zlib.error) as exc:
        raise FormatError(f"cannot read {what} '{path}': a corrupt archive ({exc})") from None


def read_arrays(path: str | Path, what: str = "arrays") -> dict[str, np.ndarray]:
    """name -> array from an .npz archive, or from a directory of NAME.npy files (memory-mapped)."""
    path = Path(path)
    if not path.is_dir():
        return read_npz(path, what)
    files = sorted(path.glob("*.npy"))
    if not files:
        raise FormatError(f"cannot read {what} '{path}': the directory holds no .npy files")
    return {file.stem: read_npy(file, what) for file in files}


def read_npy(path: str | Path, what: str = "arrays") -> np.ndarray:
    """One .npy file, memory-mapped read-only: only the pages a batch touches are read."""
    path = Path(path)
    where = f"{what} '{path}'"
    try:
        with path.open("rb") as handle:
            shape, fortran, dtype = _header(handle, where)
            offset = handle.tell()
            size = path.stat().st_size
    except OSError as exc:
        raise FormatError(f"cannot read {where}: {exc.strerror or exc}") from None
    declared = math.prod(shape) * dtype.itemsize
    if size - offset != declared:
        raise FormatError(f"{where}: its header declares shape {list(shape)} of {dtype} ({declared:,} bytes), but "
                          f"the file holds {size - offset:,}")
    if declared == 0:
        return np.empty(shape, dtype, order="F" if fortran else "C")
    return np.memmap(path, dtype, "r", offset, shape, "F" if fortran else "C")


def _header(stream, where: str):
    """(shape, fortran order, dtype) of an .npy stream positioned at its start; never a pickle."""
    try:
        version = np.lib.format.read_magic(stream)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
            np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(stream)
    except ValueError as exc:
        raise FormatError(f"{where}: not a readable .npy header ({exc})") from None
    if dtype.hasobject:
        raise FormatError(f"{where}: holds Python objects (a pickle), which gradc never loads")
    return shape, fortran, dtype


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, what: str) -> np.ndarray:
    where = f"{what} '{path}', array '{info.filename}'"
    if not info.filename.endswith(".npy"):
        raise FormatError(f"{where}: an .npz holds only .npy members")
    if info.flag_bits & 0x1:   # the zip's encryption flag: zipfile would ask for a password
        raise FormatError(f"{where}: the member is encrypted (numpy.savez writes none)")
    with archive.open(info) as member:
        shape, fortran, dtype = _header(member, where)
        count = math.prod(shape)
        try:
            check_allocation(count, dtype.itemsize, f"{where} of shape {list(shape)}")
        except ValueError as exc:
            raise FormatError(str(exc)) from None
        array = np.empty(count, dtype)
        filled = _read_into(member, memoryview(array).cast("B"))   # decompresses at most this much: no bomb
        if filled != array.nbytes or member.read(1):
            raise FormatError(f"{where}: its header declares shape {list(shape)} of {dtype}, but it holds "
                              f"{'fewer' if filled < array.nbytes else 'more'} bytes")
    return array.reshape(shape[::-1]).transpose() if fortran else array.reshape(shape)


def _read_into(stream, buffer: memoryview) -> int:
    filled = 0
    while filled < len(buffer):
        got = stream.readinto(buffer[filled:])
        if not got:
            break
        filled += got
    return filled
