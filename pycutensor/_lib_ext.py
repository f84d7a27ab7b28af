"""Lazy loading of ``libcutensorMp.so.2`` and ``libcutensorMg.so.2``, the libraries that ship
beside ``libcutensor.so.2`` in the cuTENSOR wheel.

Neither has a version function of its own: the wheel ships all three together, so their version is
the core library's (``cutensorGetVersion``), which is loaded first. They are taken from the core
library's directory (``cuda.pathfinder`` does not know them), or from ``PYCUTENSOR_MP_LIBRARY`` /
``PYCUTENSOR_MG_LIBRARY``. cuTENSORMp also needs NCCL (``libnccl.so.2``) and the CUDA runtime
(``libcudart.so.<major>``), which the cuTENSOR wheel does not declare: they are loaded first, from
the ``nvidia-nccl-cu*`` / ``nvidia-cuda-runtime-cu*`` wheels when installed, and a missing one is
named in the error rather than left to the dynamic loader's one-line message.

cuTENSORMp logs through its own logger (``CUTENSORMP_LOG_LEVEL``/``_FILE``), not cuTENSOR's
callback: unless the user set those variables, errors are written to a private file whose new
lines are attached to the exception of the call that failed.
"""

from __future__ import annotations

import atexit
import ctypes
import glob
import os
import re
import tempfile
import threading
from collections.abc import Callable
from types import ModuleType

from _nvbind.ffi import FunctionSpec, LibraryNotFoundError, NativeLibrary, loaded_copy
from _nvbind.rawlayer import (
    CallCheck,
    array_count_check,
    combine_checks,
    enum_argument_check,
)
from _nvbind.search_path import needed

from . import _bindings, _bindings_mg, _bindings_mp
from . import _lib as core
from .errors import error_from_status

__all__ = ["MG", "MP", "check_mg", "check_mp", "precheck_mg", "precheck_mp"]

DISTRIBUTED_HINT = (
    "Install NCCL and the CUDA runtime with `pip install 'cudnn-cutensor-ctypes[distributed]'` "
    "(it brings nvidia-nccl-cu12 and nvidia-cuda-runtime-cu12; on CUDA 13 install "
    "nvidia-nccl-cu13 and nvidia-cuda-runtime instead)"
)


def _wheel_library(core_dir: str, pattern: str) -> str | None:
    """``site-packages/nvidia/<pattern>`` beside the cuTENSOR wheel (``cutensor/lib``), the
    layout the NVIDIA wheels install into; None when not there."""
    site = os.path.dirname(os.path.dirname(core_dir))
    found = sorted(glob.glob(os.path.join(site, "nvidia", pattern)))
    return found[0] if found else None


def _needed(path: str, stem: str) -> str:
    """The soname starting with ``stem`` that the library at ``path`` names as ``DT_NEEDED``
    (``libcudart.so`` -> ``libcudart.so.12`` for the CUDA 12 wheel), else ``stem``."""
    if stem[-1].isdigit():
        return stem
    return next((name for name in needed(path) if name.startswith(stem + ".")), stem)


class ExtensionLibrary(NativeLibrary):
    """A library of the cuTENSOR wheel other than ``libcutensor.so.2`` itself."""

    def __init__(
        self,
        bindings: ModuleType,
        display_name: str,
        env_var: str,
        version_symbol: str,
        *,
        dependencies: tuple[tuple[str, str, str | None], ...] = (),
        before_load: Callable[[], None] | None = None,
    ) -> None:
        """``dependencies``: (soname, wheel glob under ``site-packages/nvidia``, cuda.pathfinder
        name or None), each loaded first; ``before_load`` runs before the library is located."""
        super().__init__(
            display_name=display_name,
            pathfinder_name=bindings.SONAME.removeprefix("lib").split(".so")[0],
            env_var=env_var,
            install_hint=core.INSTALL_HINT,
            expected_major=bindings.HEADER_VERSION[0],
            functions=bindings.FUNCTIONS,
            read_version=lambda _cdll: core.LIB.version,
            minimum_version=core.MINIMUM_VERSION,
            version_symbol=version_symbol,
            before_load=before_load,
        )
        self._wheel_dependencies = dependencies  # held in NativeLibrary's _held once loaded

    def _locate(self) -> tuple[str, bool]:
        override = os.environ.get(self.env_var)
        if override or loaded_copy(self.soname, self.version_symbol) is not None:
            return super()._locate()  # the override and one-copy rules of every library
        beside = os.path.join(os.path.dirname(core.LIB.path), self.soname)
        if not os.path.isfile(beside):
            raise LibraryNotFoundError(
                f"{self.display_name} ({self.soname}) is not beside {core.LIB.path}; it ships in "
                f"the cuTENSOR 2 wheels (cutensor-cu12/-cu13). {self.install_hint}, or set "
                f"{self.env_var} to the library's path."
            )
        self.found_via = f"beside {core.LIB.path}"
        return beside, False  # its dependencies are this class's own (_wheel_dependencies)

    def _before_open(self, path: str) -> None:
        # Its DT_NEEDED libraries the cuTENSOR wheel does not declare: loaded first, globally,
        # from the NVIDIA wheels beside it, so that a missing one is named here.
        core_dir = os.path.dirname(core.LIB.path)
        for stem, pattern, pathfinder_name in self._wheel_dependencies:
            soname = _needed(path, stem)
            self._held.append(
                self._load_dependency(soname, pattern, pathfinder_name, core_dir, path)
            )

    def _load_dependency(
        self, soname: str, pattern: str, pathfinder_name: str | None, core_dir: str, path: str
    ) -> ctypes.CDLL:
        # RTLD_GLOBAL: the symbols must be there when the dynamic loader resolves this library's.
        try:  # one copy per process: the one nccl4py, PyTorch or CuPy loaded, if any
            return ctypes.CDLL(soname, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
        except OSError:
            pass
        candidates = [c for c in (_wheel_library(core_dir, pattern), soname) if c]
        errors = []
        if pathfinder_name is not None:
            try:
                from cuda import pathfinder

                found = str(pathfinder.load_nvidia_dynamic_lib(pathfinder_name).abs_path)
                if os.path.basename(found) == soname:  # not the runtime of another CUDA major
                    candidates.insert(0, found)
                else:
                    errors.append(f"cuda.pathfinder found {found}, not {soname}")
            except Exception as exc:  # DynamicLibNotFoundError and friends
                errors.append(f"cuda.pathfinder: {exc}")
        for candidate in candidates:
            try:
                return ctypes.CDLL(candidate, mode=os.RTLD_GLOBAL)
            except OSError as exc:
                errors.append(str(exc))
        raise LibraryNotFoundError(
            f"{self.display_name} ({path}) needs {soname}, which was found neither in an NVIDIA "
            f"wheel beside cuTENSOR nor on the loader's path ({'; '.join(errors)}). "
            f"{DISTRIBUTED_HINT}."
        )


_LOG_PREFIX = re.compile(r"^(?:\[[^\]]*\])+\s*")
_LOG_SOURCE = re.compile(r" at \S+:\d+$")


class _MpLog:
    """cuTENSORMp's own log, when pointed at a private file: its new error lines per call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.path: str | None = None
        self._offset = 0

    def prepare(self) -> None:
        """Before the library loads: errors to a private file, unless the user set the variables."""
        if self.path is not None or any(
            os.environ.get(v) for v in ("CUTENSORMP_LOG_LEVEL", "CUTENSORMP_LOG_FILE")
        ):
            return
        fd, self.path = tempfile.mkstemp(prefix="pycutensor-mp-", suffix=".log")
        os.close(fd)
        atexit.register(_unlink, self.path)
        os.environ["CUTENSORMP_LOG_LEVEL"] = "1"
        os.environ["CUTENSORMP_LOG_FILE"] = self.path

    def mark(self) -> None:
        """Skip what was logged before the next call."""
        if self.path is not None:
            with self._lock:
                self._offset = os.path.getsize(self.path) if os.path.exists(self.path) else 0

    def take(self) -> str:
        """The lines logged since :meth:`mark` (errors of the call that just failed)."""
        if self.path is None or not os.path.exists(self.path):
            return ""
        with self._lock, open(self.path, "rb") as f:
            f.seek(self._offset)
            text = f.read(16384).decode("utf-8", "replace")
            self._offset = f.tell()
        # "[date time][cuTensorMp][pid][Error][cuTensorMp] text at /build/path/file.cpp:106"
        lines: list[str] = []
        for raw in text.splitlines():
            line = _LOG_SOURCE.sub("", _LOG_PREFIX.sub("", raw.strip()))
            if line and line not in lines:
                lines.append(line)
        return "; ".join(lines[-3:])


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


MP_LOG = _MpLog()

MP = ExtensionLibrary(
    _bindings_mp,
    "cuTENSORMp",
    "PYCUTENSOR_MP_LIBRARY",
    "cutensorMpCreate",
    dependencies=(
        ("libcudart.so", "cuda_runtime/lib/libcudart.so.*", "cudart"),
        ("libnccl.so.2", "nccl/lib/libnccl.so.2", None),
    ),
    before_load=MP_LOG.prepare,  # the variables naming its log file are read at load
)
MG = ExtensionLibrary(_bindings_mg, "cuTENSORMg", "PYCUTENSOR_MG_LIBRARY", "cutensorMgCreate")


def check_mp(status: int, function: str) -> None:
    """Raise the :class:`~pycutensor.CutensorError` subclass of a failed cuTENSORMp call, with
    what cuTENSORMp and cuTENSOR logged for it."""
    if status:
        text = " ".join(t for t in (MP_LOG.take(), core.take_last_error()) if t)
        raise error_from_status(status, function, text)


def check_mg(status: int, function: str) -> None:
    """Raise the :class:`~pycutensor.CutensorError` subclass of a failed cuTENSORMg call, with
    the error line cuTENSOR logged for it (cuTENSORMg logs through cuTENSOR's logger)."""
    core.check(status, function)


def _enum_lookup(bindings: ModuleType) -> Callable[[str], type | None]:
    def lookup(typedef: str) -> type | None:
        # Mp and Mg prototypes also take cutensor.h's enums (cutensorOperator_t).
        return getattr(bindings, typedef, None) or getattr(_bindings, typedef, None)

    return lookup


def _precheck(lib: NativeLibrary, bindings: ModuleType, spec: FunctionSpec) -> CallCheck | None:
    return combine_checks(
        [
            array_count_check(spec, bindings.ARRAY_COUNTS.get(spec.name, ()), lib.display_name),
            enum_argument_check(spec, _enum_lookup(bindings), core.check_enum),
        ]
    )


def precheck_mp(spec: FunctionSpec) -> CallCheck | None:
    """The raw layer's checks of one cuTENSORMp function (element counts, enum values)."""
    return _precheck(MP, _bindings_mp, spec)


def precheck_mg(spec: FunctionSpec) -> CallCheck | None:
    """The raw layer's checks of one cuTENSORMg function (element counts, enum values)."""
    return _precheck(MG, _bindings_mg, spec)
