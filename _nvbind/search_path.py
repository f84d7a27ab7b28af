"""Where a shared library finds what it loads later: its ELF search path, and the site-packages
wheel directories in cuda.pathfinder's order.

cuda.pathfinder loads every dependency its catalogue lists before the library it finds. For cuDNN
that is cuBLASLt (about 55 ms to map on a 2-core machine), which cuDNN loads itself, by soname
through its sublibraries' RUNPATH, only when a plan first needs it: a process that loads a saved
convolution plan never maps it. :class:`~_nvbind.ffi.NativeLibrary` uses this module to take a
wheel's library directly where cuda.pathfinder would look first, to load through cuda.pathfinder
only the dependencies the library's own search path does not reach (the CUDA 13 wheel of cuDNN
9.12 keeps ``nvidia/cu13/lib``, where its cuBLASLt lies, off its RUNPATH, and aborts the process
at its first matmul plan without it; 9.19 and 9.28 reach it), and to hold NVRTC loaded from
where that search path finds it (cuDNN 9.19 would load and unload it around every plan build).

Only the dynamic section is read (``DT_RUNPATH``, else ``DT_RPATH``, and ``DT_NEEDED`` for the
sonames a library loads with it), with ``$ORIGIN`` taken as the directory of the path given, as
the dynamic loader takes it; a file that cannot be read as a
64-bit little-endian ELF object has no search path here, so its dependencies are loaded for it.
"""

from __future__ import annotations

import glob
import os
import site
import struct
import sys
from typing import BinaryIO

from .files import open_regular

__all__ = [
    "needed",
    "reached",
    "search_path",
    "site_packages",
    "sublibraries",
    "wheel_library",
]

#: The ELF64 little-endian records read here and by :func:`_nvbind.ffi.check_elf`.
ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")  # Elf64_Ehdr
ELF_PHDR = struct.Struct("<IIQQQQQQ")  # Elf64_Phdr
_ELF_DYN = struct.Struct("<qQ")  # Elf64_Dyn
PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_RPATH, _DT_RUNPATH = 0, 1, 5, 15, 29
_STRING_TAGS = (_DT_NEEDED, _DT_RPATH, _DT_RUNPATH)
#: A dynamic section or string table longer than this is not one a loader would accept here.
_MAX_TABLE = 1 << 20


def site_packages() -> list[str]:
    """The site-packages directories in the order cuda.pathfinder searches them: the environment's
    own, with the user's site-packages after a virtual environment's and before the system's."""
    if not hasattr(site, "getsitepackages"):  # an old virtualenv's site module: none to search
        return []
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        user = site.getusersitepackages()
        if user:
            dirs.insert(1 if sys.prefix != sys.base_prefix else 0, user)
    return dirs


def wheel_library(rel_dirs: tuple[str, ...], filename: str) -> str | None:
    """The first ``<site-packages>/<rel_dir>/<filename>`` that is a file, or None."""
    for parent in site_packages():
        for rel in rel_dirs:
            path = os.path.join(parent, rel, filename)
            if os.path.isfile(path):
                return path
    return None


def _read_at(f: BinaryIO, offset: int, size: int) -> bytes:
    f.seek(offset)
    data = f.read(size)
    if len(data) != size:
        raise ValueError("truncated")
    return data


def _dynamic_strings(path: str) -> dict[int, tuple[str, ...]]:
    """The string entries of ``path``'s dynamic section by tag (``DT_NEEDED``, ``DT_RPATH``,
    ``DT_RUNPATH``); {} when it has none. Opened as a regular file only: a FIFO named like a
    sublibrary would block ``open()``."""
    with (
        open_regular(path, what="library", max_bytes=1 << 62) as fd,
        os.fdopen(fd, "rb", closefd=False) as f,
    ):
        header = _read_at(f, 0, ELF_HEADER.size)
        if header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
            raise ValueError("not a 64-bit little-endian ELF object")
        fields = ELF_HEADER.unpack(header)
        phoff, phentsize, phnum = fields[5], fields[9], fields[10]
        if phentsize < ELF_PHDR.size or phnum * phentsize > _MAX_TABLE:
            raise ValueError("bad program header table")
        table = _read_at(f, phoff, phentsize * phnum)
        headers = [ELF_PHDR.unpack_from(table, i * phentsize) for i in range(phnum)]
        # (p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align)
        loads = [(h[3], h[2], h[5]) for h in headers if h[0] == PT_LOAD]
        dynamic = [h for h in headers if h[0] == _PT_DYNAMIC]
        if not dynamic:
            return {}
        size = dynamic[0][5]
        if size > _MAX_TABLE:
            raise ValueError("bad dynamic section")
        raw = _read_at(f, dynamic[0][2], size - size % _ELF_DYN.size)
        tags: dict[int, list[int]] = {}
        for tag, value in _ELF_DYN.iter_unpack(raw):
            if tag == _DT_NULL:
                break
            tags.setdefault(tag, []).append(value)
        wanted = [tag for tag in _STRING_TAGS if tag in tags]
        if not wanted or _DT_STRTAB not in tags:
            return {}
        # DT_STRTAB is an address: the file offset is where a loadable segment maps it from
        strtab = tags[_DT_STRTAB][0]
        base = next(
            (
                off + strtab - vaddr
                for vaddr, off, filesz in loads
                if vaddr <= strtab < vaddr + filesz
            ),
            None,
        )
        if base is None:
            raise ValueError("string table outside the loadable segments")
        out: dict[int, tuple[str, ...]] = {}
        for tag in wanted:
            texts = []
            for value in tags[tag]:
                f.seek(base + value)
                texts.append(os.fsdecode(f.read(4096).split(b"\0", 1)[0]))
            out[tag] = tuple(texts)
        return out


def needed(path: str) -> tuple[str, ...]:
    """The sonames ``path`` names as ``DT_NEEDED`` (what the loader loads with it), in order;
    () when it names none or cannot be read."""
    try:
        return _dynamic_strings(path).get(_DT_NEEDED, ())
    except (OSError, ValueError, struct.error):
        return ()


def search_path(path: str) -> tuple[str, ...]:
    """The directories ``path`` searches for what it loads by soname (its ``DT_RUNPATH``, else
    ``DT_RPATH``), ``$ORIGIN`` replaced by the directory of ``path`` as given (the loader does
    not resolve symbolic links for it); () when it has none or cannot be read."""
    try:
        strings = _dynamic_strings(path)
    except (OSError, ValueError, struct.error):
        return ()
    # RPATH is ignored beside RUNPATH, as the loader ignores it
    entries = strings.get(_DT_RUNPATH) or strings.get(_DT_RPATH, ())
    origin = os.path.dirname(os.path.abspath(path))
    dirs: list[str] = []
    for entry in entries:
        for part in entry.split(":"):
            if part:
                expanded = part.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
                dirs.append(os.path.normpath(expanded))
    return tuple(dirs)


def reached(libraries: list[str], soname: str) -> str | None:
    """Where ``soname`` lies when every one of ``libraries`` (at least one) finds it on its own
    search path: the first match on the first library's path; None when any of them misses it."""
    found = None
    for lib in libraries:
        hits = [os.path.join(d, soname) for d in search_path(lib)]
        hits = [h for h in hits if os.path.isfile(h)]
        if not hits:
            return None
        found = found or hits[0]
    return found


def sublibraries(path: str, prefix: str, major: int) -> list[str]:
    """The ``lib<prefix>_*.so.<major>`` files beside ``path`` (cuDNN's sublibraries, which load
    its dependencies), sorted."""
    pattern = os.path.join(glob.escape(os.path.dirname(path)), f"lib{prefix}_*.so.{major}")
    return sorted(glob.glob(pattern))
