#!/usr/bin/env python3
"""Generate ``pycudnn/_bindings.py`` and ``pycutensor/_bindings.py`` from NVIDIA's C headers
(and ``pycutensor/_bindings_mp.py``, ``_bindings_mg.py`` from the cuTENSORMp and cuTENSORMg headers
of the same cuTENSOR wheel).

Usage::

    python scripts/generate_bindings.py              # rewrite the checked-in modules
    python scripts/generate_bindings.py --check      # exit 1 with a diff when they are stale
    python scripts/generate_bindings.py --cudnn-include DIR --cutensor-include DIR --out-dir DIR

The headers come from the ``nvidia-cudnn-cu12``/``-cu13`` and ``cutensor-cu12``/``-cu13``
wheels (found through ``cuda.pathfinder``) and are parsed with libclang (pip ``libclang``) as C99.
The wheels do not ship the CUDA runtime headers they include, so ``scripts/stub_headers`` supplies
small stand-ins for ``<cuda_runtime_api.h>``, ``<cuda_runtime.h>``, ``<library_types.h>``,
``<nccl.h>`` (included by ``cutensorMp.h``) and the three libc headers the parse needs; the parse
runs with ``-nostdinc`` and a fixed target triple so that it behaves the same on every machine,
with or without a C toolchain.

Everything in the generated modules comes from the parse: enumerator values, prototypes, struct
layouts, integer macros, ``@since`` tags, deprecation attributes and the attribute tables that
``cudnn_graph.h`` documents in prose. The hand-written tables in this file only decide how C types
are represented in ctypes and how misspelled names in the header documentation map to the real
enumerators; they never supply a value.

The generated code is emitted already formatted the way ``ruff format`` (line length 100) lays it
out, so the output does not depend on which formatter version is installed.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import functools
import itertools
import keyword
import re
import sys
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
STUB_HEADER_DIR = Path(__file__).resolve().parent / "stub_headers"
GENERATOR = "scripts/generate_bindings.py"
LINE_LENGTH = 100
INDENT = "    "

# The parse is pinned to one target so that struct sizes recorded in the output (and anything else
# that depends on the data model) do not change with the machine that runs the generator. ctypes
# computes the real layout at run time; the tests compare it against these LP64 numbers.
TARGET_TRIPLE = "x86_64-unknown-linux-gnu"

# --------------------------------------------------------------------------------------------------
# Hand-written tables: ctypes representation only, never values
# --------------------------------------------------------------------------------------------------

# Typedefs from <stddef.h>/<stdint.h> map to the ctypes type of the same meaning rather than to
# whatever builtin the target happens to use for them.
FIXED_WIDTH_TYPEDEFS: dict[str, str] = {
    "size_t": "ctypes.c_size_t",
    "ptrdiff_t": "ctypes.c_ssize_t",
    "int8_t": "ctypes.c_int8",
    "int16_t": "ctypes.c_int16",
    "int32_t": "ctypes.c_int32",
    "int64_t": "ctypes.c_int64",
    "uint8_t": "ctypes.c_uint8",
    "uint16_t": "ctypes.c_uint16",
    "uint32_t": "ctypes.c_uint32",
    "uint64_t": "ctypes.c_uint64",
    "intptr_t": "ctypes.c_ssize_t",
    "uintptr_t": "ctypes.c_size_t",
}

# libclang TypeKind name -> ctypes type, for builtin C types.
BUILTIN_CTYPES: dict[str, str] = {
    "BOOL": "ctypes.c_bool",
    "CHAR_S": "ctypes.c_char",
    "CHAR_U": "ctypes.c_char",
    "SCHAR": "ctypes.c_byte",
    "UCHAR": "ctypes.c_ubyte",
    "SHORT": "ctypes.c_short",
    "USHORT": "ctypes.c_ushort",
    "INT": "ctypes.c_int",
    "UINT": "ctypes.c_uint",
    "LONG": "ctypes.c_long",
    "ULONG": "ctypes.c_ulong",
    "LONGLONG": "ctypes.c_longlong",
    "ULONGLONG": "ctypes.c_ulonglong",
    "FLOAT": "ctypes.c_float",
    "DOUBLE": "ctypes.c_double",
}

# (function or function-pointer typedef, parameter) -> (ctypes type used instead of the mapped one,
# comment written next to the declaration in the generated module).
CTYPES_OVERRIDES: dict[tuple[str, str], tuple[str, str]] = {
    # cuDNN passes the log message as several NUL-terminated lines followed by an empty one (the
    # text ends in a double NUL). ctypes would convert a c_char_p argument at the first NUL and drop
    # every line after it, so the callback receives the raw address and reads up to the double NUL.
    ("cudnnCallback_t", "msg"): (
        "ctypes.c_void_p",
        "msg is c_void_p, not c_char_p: it holds NUL-separated lines ending in a double NUL",
    ),
}

# The descriptor documentation in cudnn_graph.h names some attributes differently from the
# enumerators that exist. Documented name -> real enumerator. Names that match neither are reported
# as warnings when generating so that new mismatches get noticed.
DOC_ATTRIBUTE_ALIASES: dict[str, str] = {
    # The convolution descriptor's docs say CUDNN_ATTR_CONVOLUTION_MODE.
    "CUDNN_ATTR_CONVOLUTION_MODE": "CUDNN_ATTR_CONVOLUTION_CONV_MODE",
    # The enumerator itself is misspelled ("AVERATE"); the BN finalize docs spell it correctly.
    "CUDNN_ATTR_OPERATION_BN_FINALIZE_EXP_AVERAGE_FACTOR_DESC": (
        "CUDNN_ATTR_OPERATION_BN_FINALIZE_EXP_AVERATE_FACTOR_DESC"
    ),
}

# Attributes the documentation lists although no enumerator exists; skipped without a warning.
DOC_ONLY_ATTRIBUTES: frozenset[str] = frozenset(
    {
        # Operation graph docs: "Currently unsupported. Placeholder for future implementation."
        "CUDNN_ATTR_OPERATIONGRAPH_ENGINE_SUPPORTED_COUNT",
    }
)

# Attribute types the documentation spells differently from the cudnnBackendAttributeType_t
# enumerators. Documented name -> real enumerator.
DOC_TYPE_ALIASES: dict[str, str] = {
    # The enumerator is misspelled CUDNN_TYPE_NAN_PROPOGATION; some descriptor docs spell it right.
    "CUDNN_TYPE_NAN_PROPAGATION": "CUDNN_TYPE_NAN_PROPOGATION",
}

# cudnnBackendAttributeType_t enumerators that denote plain scalars or pointers (suffix after
# CUDNN_TYPE_) -> ctypes element type. The others are mapped from the type their doc comment names
# ("cudnnDataType_t value" -> c_int for an enum, "cudnnFraction_t value" -> that Structure).
SCALAR_ATTRIBUTE_TYPES: dict[str, str] = {
    "HANDLE": "ctypes.c_void_p",
    "VOID_PTR": "ctypes.c_void_p",
    "BACKEND_DESCRIPTOR": "ctypes.c_void_p",
    "BOOLEAN": "ctypes.c_bool",  # C bool: one byte
    "INT64": "ctypes.c_int64",
    "INT32": "ctypes.c_int32",
    "FLOAT": "ctypes.c_float",
    "DOUBLE": "ctypes.c_double",
    "CHAR": "ctypes.c_char",
}


class GenerationError(RuntimeError):
    """The headers could not be found, parsed or understood."""


# --------------------------------------------------------------------------------------------------
# libclang access
# --------------------------------------------------------------------------------------------------


@functools.cache
def cindex() -> Any:
    """``clang.cindex``, imported on first use so that this module imports without libclang."""
    try:
        from clang import cindex as module
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise GenerationError(
            "libclang is not installed; install the pinned version with `pip install libclang`"
        ) from exc
    return module


@functools.cache
def libclang_version() -> str:
    """The ``x.y.z`` version of the loaded libclang shared library."""
    ci = cindex()
    fn = ci.conf.lib.clang_getClangVersion
    # The Python bindings do not declare this function; it returns a CXString.
    fn.restype = ci._CXString
    fn.errcheck = ci._CXString.from_result
    text = fn()
    match = re.search(r"(\d+\.\d+\.\d+)", text)
    if match is None:  # pragma: no cover - every libclang build reports a version
        raise GenerationError(f"cannot read the libclang version from {text!r}")
    return match.group(1)


def find_header_dir(libname: str) -> Path:
    """The include directory of an installed NVIDIA library, located with ``cuda.pathfinder``."""
    try:
        from cuda.pathfinder import find_nvidia_header_directory
    except ImportError as exc:
        raise GenerationError("cuda-pathfinder is not installed; pass the include dir") from exc
    found = find_nvidia_header_directory(libname)
    if found is None:
        raise GenerationError(f"the {libname} headers were not found; install the wheel")
    return Path(found)


@dataclass(frozen=True)
class Source:
    """One parsed header set: the translation unit plus file access for doc-comment scanning."""

    tu: Any
    include_dir: Path
    warnings: tuple[str, ...] = ()  # diagnostics below error severity

    def relpath(self, cursor: Any) -> str | None:
        """Header path relative to the include dir; None outside it (stubs, builtins)."""
        loc = cursor.location.file
        if loc is None:
            return None
        path = Path(loc.name).resolve()
        try:
            return path.relative_to(self.include_dir.resolve()).as_posix()
        except ValueError:
            return None

    @staticmethod
    def is_stub(cursor: Any) -> bool:
        loc = cursor.location.file
        return loc is not None and Path(loc.name).resolve().is_relative_to(STUB_HEADER_DIR)

    @staticmethod
    @functools.cache
    def text(filename: str) -> bytes:
        return Path(filename).read_bytes()

    def slice(self, filename: str, start: int, end: int) -> str:
        return self.text(filename)[start:end].decode("utf-8", "replace")


def parse_headers(
    main_header: str, include_dir: Path, defines: Sequence[str] = (), first: Sequence[str] = ()
) -> Source:
    """Parse ``#include <main_header>`` as C99, after ``first`` (headers it assumes included);
    errors are fatal, warnings are reported."""
    ci = cindex()
    wrapper = "generate_bindings_input.c"  # in-memory main file; keeps `#pragma once` quiet
    args = [
        "-x",
        "c",
        "-std=c99",
        f"--target={TARGET_TRIPLE}",
        "-nostdinc",
        # Stubs first: an include dir such as /usr/include may also hold real CUDA/libc headers,
        # which cannot be parsed without the rest of a toolchain.
        "-I",
        str(STUB_HEADER_DIR),
        "-I",
        str(include_dir),
        *(f"-D{d}" for d in defines),
    ]
    options = (
        ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD  # macro definitions
        | ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES
    )
    tu = ci.Index.create().parse(
        wrapper,
        args=args,
        unsaved_files=[(wrapper, "".join(f"#include <{h}>\n" for h in (*first, main_header)))],
        options=options,
    )
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        listing = "\n".join(f"  {d}" for d in errors)
        raise GenerationError(f"parsing {include_dir / main_header} failed:\n{listing}")
    warnings = tuple(
        f"libclang: {d}" for d in tu.diagnostics if d.severity == ci.Diagnostic.Warning
    )
    return Source(tu, include_dir, warnings)


# --------------------------------------------------------------------------------------------------
# Doc comments
# --------------------------------------------------------------------------------------------------

SINCE_RE = re.compile(r"@since\s+(?:cuDNN\s+|cuTENSOR\s+)?(\S+)")
VERSION_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
TRAILING_COMMENT_RE = re.compile(r"\s*,?\s*(/\*[*!]<.*?\*/|//[/!]<[^\n]*)", re.DOTALL)

Version = tuple[int, int, int]

# Input parameters that cuDNN dereferences without a NULL check, found by calling each function
# with NULL in one parameter at a time (cuDNN 9.28: a segmentation fault instead of a status). The
# headers cannot tell these apart from the many handle parameters that cuDNN does check.
NULL_CRASHES: dict[str, tuple[str, ...]] = {
    "cudnnFusedOpsExecute": ("plan",),
    "cudnnTransformFilter": ("srcDesc", "destDesc"),
    # These segfaulted called with every argument NULL (reliability audit, cuDNN 9.28); their
    # descriptors and host arrays are read unconditionally, so none of them may be NULL.
    "cudnnDeriveBNTensorDescriptor": ("derivedBnDesc", "xDesc"),
    "cudnnDeriveNormTensorDescriptor": (
        "derivedNormScaleBiasDesc",
        "derivedNormMeanVarDesc",
        "xDesc",
    ),
    "cudnnCTCLoss": (
        "handle",
        "probsDesc",
        "hostLabels",
        "hostLabelLengths",
        "hostInputLengths",
        "ctcLossDesc",
    ),
    "cudnnCTCLoss_v8": (
        "handle",
        "ctcLossDesc",
        "probsDesc",
        "labels",
        "labelLengths",
        "inputLengths",
    ),
    # These segfaulted with NULL there and valid values elsewhere (cudnnSetLRNDescriptor checks
    # its numbers first, then writes through the descriptor): found by fuzzing (seed 202612074)
    # and a sweep of each function whose first parameter is a descriptor, cuDNN 9.28.
    "cudnnSetLRNDescriptor": ("normDesc",),
    "cudnnInitTransformDest": ("srcDesc",),
}

# Array parameters whose element count another argument gives (``ARRAY_COUNTS`` in the output): the
# raw layer refuses a count larger than a ctypes array it is given can hold, since the library reads
# or writes that many elements (a getter asked for 8 dimensions into 1-element arrays wrote past
# them). The pairs come from the headers, by three rules tried in this order:
# 1. the array's @param text states its length: "(length nbDims)", or cuTENSOR's "array of size
#    `numModes`" and "array of size `numModes` x `numNonZeroBlocks`" (a product);
# 2. otherwise an array parameter (``T name[]``, or a pointer to a struct such as ``perfResults``)
#    is counted by the nearest integer parameter before it whose name says it is a count
#    (COUNT_PARAM_RE): nbDims, nbDimsRequested, arrayLength[Requested], requestedAlgoCount, ...;
# 3. a ``void *``/``char *`` buffer right before a parameter named in BYTE_COUNT_PARAMS holds
#    that many bytes (cuTENSOR's attribute buffers, cudnnGetLastErrorString's message).
# An array whose documented size is an expression none of these read is left out (the caller's
# responsibility, as in C); ARRAY_COUNT_OVERRIDES settles the names the rules get wrong.
COUNT_PARAM_RE = re.compile(
    r"^(?:nbDims|arrayLength|numModes)(?:Requested)?$"
    r"|^requestedAlgoCount$"
    r"|^seqLength(?:ArraySize|SizeRequested)$"
)
BYTE_COUNT_PARAMS: frozenset[str] = frozenset({"sizeInBytes", "max_size"})
DOC_LENGTH_RE = re.compile(r"\(length (\w+)\)|\barray of size `(\w+)`(?: x `(\w+)`)?")
DOC_SIZE_WORDS_RE = re.compile(r"\(length\b|\barray of size\b")
# (function, array parameter) -> (count parameters multiplied, offset added), or None: not checked.
ARRAY_COUNT_OVERRIDES: dict[tuple[str, str], tuple[tuple[str, ...], int] | None] = {
    # The sequence lengths are one per batch entry; vectorSize stands between the two.
    ("cudnnSetRNNDataDescriptor", "seqLengthArray"): (("batchSize",), 0),
    # foldA folds the spatial dimensions only: cuDNN 9.28 reads nbDims - 2 elements and its
    # getter writes nbDimsRequested - 2 (observed with sentinel-filled arrays); the pads are whole.
    ("cudnnSetTensorTransformDescriptor", "foldA"): (("nbDims",), -2),
    ("cudnnGetTensorTransformDescriptor", "foldA"): (("nbDimsRequested",), -2),
    # "host array of size \sum_i^numModes(numSectionsPerMode[i])": a sum over another array.
    ("cutensorCreateBlockSparseTensorDescriptor", "extent"): None,
    # cuTENSORMp/Mg: "(size: nranks)" and "Array of size `numGroups`" are not read by rule 1,
    # and rule 2 would count `ranks` by numModes; cutensorMgCreate's device list is undocumented.
    ("cutensorMpCreateTensorDescriptor", "ranks"): (("nranks",), 0),
    ("cutensorMpCreateUnfolding", "groupSize"): (("numGroups",), 0),
    ("cutensorMpCreateFolding", "groupSize"): (("numGroups",), 0),
    ("cutensorMgCreate", "devices"): (("numDevices",), 0),
}
ArrayCount = tuple[str, tuple[str, ...], int]  # (array parameter, count factors, offset)

PARAM_DOC_RE = re.compile(r"@param(?:\[[^\]]*\])?\s+(\w+)\s+([^@]*)")
# ``@param`` (cuDNN) or ``\param`` (cuTENSOR), up to the next tag or the end of the comment.
ANY_PARAM_DOC_RE = re.compile(
    r"[@\\]param(?:\[[^\]]*\])?\s+(\w+)\s+"
    r"(.*?)(?=[@\\](?:param|retval|return|pre|remarks)\b|\*/|$)",
    re.DOTALL,
)
NULL_ALLOWED_RE = re.compile(r"\bNULL\b|nullptr|\boptional", re.IGNORECASE)


def param_docs(comment: str | None) -> dict[str, str]:
    """``@param name text`` entries of a doc comment, by parameter name."""
    return {m.group(1): m.group(2) for m in PARAM_DOC_RE.finditer(comment or "")}


@dataclass(frozen=True)
class SinceTag:
    """A parsed ``@since`` tag: a release, or unstable (``9.NEXT``, ``UNPUBLISHED``)."""

    version: Version | None = None
    unstable: bool = False


def parse_since(comment: str | None) -> SinceTag | None:
    """The ``@since`` tag of a doc comment; None when the comment has none."""
    if not comment:
        return None
    match = SINCE_RE.search(comment)
    if match is None:
        return None
    word = match.group(1).rstrip(".,")
    version = VERSION_RE.match(word)
    if version is None:
        # "@since cuDNN 9.NEXT" and "@since cuDNN UNPUBLISHED" mark symbols NVIDIA has not released
        # with a version number yet.
        return SinceTag(unstable=True)
    major, minor, patch = (int(g) for g in version.groups())
    return SinceTag((major, minor, patch))


def own_comment(src: Source, cursor: Any) -> str | None:
    """The doc comment that belongs to a declaration.

    A trailing ``/**< ... */`` (or ``///<``) right after the declaration wins: libclang misses it
    when an enumerator's value sits on its own line, and it may pick the block that precedes an
    enumerator instead. Otherwise libclang's attached comment is used.
    """
    extent = cursor.extent
    if extent.end.file is not None:
        text = src.text(extent.end.file.name)
        tail = text[extent.end.offset : extent.end.offset + 4096].decode("utf-8", "replace")
        match = TRAILING_COMMENT_RE.match(tail)
        if match is not None:
            return match.group(1)
    comment: str | None = cursor.raw_comment
    return comment


# --------------------------------------------------------------------------------------------------
# Parsed model
# --------------------------------------------------------------------------------------------------


@dataclass
class Enumerator:
    c_name: str
    value: int
    since: Version | None
    unstable: bool
    deprecated: bool
    deprecated_attribute: bool  # carries CUDNN_DEPRECATED_ENUM itself (vs. doc tag or enum type)
    comment: str
    file: str  # absolute path, for doc-block scanning only (never written out)
    start: int
    end: int
    member: str = ""  # Python member name inside the IntEnum


@dataclass
class EnumType:
    name: str
    header: str
    since: Version | None
    deprecated: bool
    enumerators: list[Enumerator]


@dataclass
class StructType:
    name: str
    tag: str
    header: str
    fields: list[tuple[str, str]]
    size: int


@dataclass
class CallbackType:
    name: str
    header: str
    restype: str
    argtypes: list[str]
    argnames: list[str]


@dataclass
class Function:
    name: str
    restype: str
    argtypes: list[str]
    argnames: list[str]
    since: Version | None
    unstable: bool
    deprecated: bool
    returns_status: bool
    header: str
    nonnull: list[str] = field(default_factory=list)
    enum_args: list[tuple[str, str]] = field(default_factory=list)  # (parameter, enum typedef)
    array_counts: list[ArrayCount] = field(default_factory=list)


@dataclass
class Model:
    """Everything the emitters need from one header set."""

    library: str
    include_dir: Path
    macros: dict[str, int | float] = field(default_factory=dict)
    handles: dict[str, str] = field(default_factory=dict)  # name -> header
    enums: list[EnumType] = field(default_factory=list)
    structs: list[StructType] = field(default_factory=list)
    callbacks: list[CallbackType] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)
    constants: dict[str, tuple[str, int]] = field(default_factory=dict)  # name -> (typedef, value)
    extern_symbols: list[tuple[str, str]] = field(default_factory=list)  # (name, typedef)
    warnings: list[str] = field(default_factory=list)

    def enum(self, name: str) -> EnumType:
        for e in self.enums:
            if e.name == name:
                return e
        raise GenerationError(f"the headers declare no enum {name}")

    def enumerator_values(self) -> dict[str, int]:
        return {e.c_name: e.value for enum in self.enums for e in enum.enumerators}


class ModelBuilder:
    """Walks a translation unit and collects the declarations of the real headers."""

    def __init__(
        self,
        src: Source,
        library: str,
        *,
        status_type: str,
        lib_prefix: str,
        stub_enums: Collection[str] = (),
    ) -> None:
        """``stub_enums``: enums from the stub CUDA headers to emit when a prototype uses them."""
        self.src = src
        self.stub_enums = frozenset(stub_enums)
        self.ci = cindex()
        self.status_type = status_type
        self.lib_prefix = lib_prefix
        self.model = Model(library, src.include_dir, warnings=list(src.warnings))
        self._enum_decls: set[str] = set()  # USRs of enums already emitted
        self._struct_names: dict[str, str] = {}  # record USR -> typedef name
        self._callbacks: set[str] = set()
        self._stub_enums_used: dict[str, Any] = {}  # typedef name -> enum decl (from stub headers)
        self._used_stub_handles: set[str] = set()
        self._stub_handles: dict[str, str] = {}

    # -- type mapping ------------------------------------------------------------------------------
    def ctype(self, ctype: Any, *, owner: str = "", param: str = "") -> str:
        """The ctypes expression for a C type (as written in a prototype or struct)."""
        override = CTYPES_OVERRIDES.get((owner, param))
        if override is not None:
            return override[0]
        return self._ctype(ctype)

    def _parameter(self, ctype: Any, *, owner: str, param: str) -> str:
        """The ctypes type for a function parameter.

        A function pointer passed by value (``cudnnCallback_t fptr``) is declared ``c_void_p``:
        ctypes refuses None for a CFUNCTYPE argtype, but the C APIs take NULL to unregister a
        callback (``cudnnSetCallback(0, NULL, NULL)``). ``c_void_p`` accepts both None and
        instances of the CFUNCTYPE typedef, which stays the way to wrap a Python callable.
        """
        canonical = ctype.get_canonical()
        kinds = self.ci.TypeKind
        if canonical.kind == kinds.POINTER and canonical.get_pointee().kind in (
            kinds.FUNCTIONPROTO,
            kinds.FUNCTIONNOPROTO,
        ):
            return CTYPES_OVERRIDES.get((owner, param), ("ctypes.c_void_p", ""))[0]
        return self.ctype(ctype, owner=owner, param=param)

    def _ctype(self, t: Any) -> str:
        kinds = self.ci.TypeKind
        if t.kind == kinds.ELABORATED:
            t = t.get_named_type()
        if t.kind == kinds.TYPEDEF:
            decl = t.get_declaration()
            name = decl.spelling
            if name in FIXED_WIDTH_TYPEDEFS:
                return FIXED_WIDTH_TYPEDEFS[name]
            if name in self.model.handles:
                return name
            if name in self._stub_handles:
                self._used_stub_handles.add(name)
                return name
            if name in self._callbacks:
                return name
            if name in self._struct_names.values():
                return name
            return self._ctype(decl.underlying_typedef_type)
        if t.kind == kinds.ENUM:
            return "ctypes.c_int"  # C enums are int-sized on every supported ABI
        if t.kind == kinds.POINTER:
            return self._pointer(t.get_pointee())
        if t.kind == kinds.CONSTANTARRAY:
            return f"{self._ctype(t.element_type)} * {t.element_count}"
        if t.kind == kinds.INCOMPLETEARRAY:  # `int a[]` parameters decay to pointers
            return self._pointer(t.element_type)
        if t.kind == kinds.RECORD:
            usr = t.get_declaration().get_usr()
            if usr in self._struct_names:
                return self._struct_names[usr]
        if t.kind == kinds.VOID:
            return "None"
        builtin = BUILTIN_CTYPES.get(t.kind.name)
        if builtin is None:
            raise GenerationError(f"no ctypes mapping for C type {t.spelling!r} ({t.kind})")
        return builtin

    def _pointer(self, pointee: Any) -> str:
        kinds = self.ci.TypeKind
        canonical = pointee.get_canonical()
        if canonical.kind in (kinds.CHAR_S, kinds.CHAR_U):
            return "ctypes.c_char_p"
        if canonical.kind == kinds.VOID:
            return "ctypes.c_void_p"
        if canonical.kind == kinds.RECORD and canonical.get_size() < 0:
            return "ctypes.c_void_p"  # pointer to an incomplete (opaque) struct, e.g. FILE *
        if canonical.kind in (kinds.FUNCTIONPROTO, kinds.FUNCTIONNOPROTO):
            return self._cfunctype(canonical, owner="", names=[])
        return f"ctypes.POINTER({self._ctype(pointee)})"

    def _cfunctype(self, proto: Any, *, owner: str, names: list[str]) -> str:
        restype = self._ctype(proto.get_result())
        args = [
            self.ctype(a, owner=owner, param=names[i] if i < len(names) else "")
            for i, a in enumerate(proto.argument_types())
        ]
        return f"ctypes.CFUNCTYPE({', '.join([restype, *args])})"

    # -- walking -----------------------------------------------------------------------------------
    def build(self) -> Model:
        kinds = self.ci.CursorKind
        top = list(self.src.tu.cursor.get_children())
        macro_tokens: list[tuple[str, list[Any]]] = []
        # Pass 1: names of handle, struct and callback typedefs, so prototypes can refer to them.
        for cursor in top:
            if cursor.kind == kinds.TYPEDEF_DECL:
                self._classify_typedef(cursor)
        for cursor in top:
            header = self.src.relpath(cursor)
            if cursor.kind == kinds.MACRO_DEFINITION:
                if header is not None:
                    macro_tokens.append((cursor.spelling, list(cursor.get_tokens())))
                continue
            if header is None:
                continue
            if cursor.kind == kinds.TYPEDEF_DECL:
                self._typedef(cursor, header)
            elif cursor.kind == kinds.FUNCTION_DECL:
                self._function(cursor, header)
            elif cursor.kind == kinds.VAR_DECL:
                self._variable(cursor)
        self._add_stub_enums()
        self.model.handles.update(
            {n: h for n, h in self._stub_handles.items() if n in self._used_stub_handles}
        )
        self.model.warnings += [
            f"enum {cursor.spelling} has no typedef and was left out"
            for cursor in top
            if cursor.kind == kinds.ENUM_DECL
            and self.src.relpath(cursor) is not None
            and cursor.get_usr() not in self._enum_decls
        ]
        self.model.macros = evaluate_macros(macro_tokens, self.model.enumerator_values())
        assign_member_names(self.model.enums, self.lib_prefix)
        return self.model

    def _classify_typedef(self, cursor: Any) -> None:
        kinds = self.ci.TypeKind
        underlying = cursor.underlying_typedef_type
        canonical = underlying.get_canonical()
        name = cursor.spelling
        in_headers = self.src.relpath(cursor) is not None
        if canonical.kind == kinds.POINTER:
            pointee = canonical.get_pointee()
            if pointee.kind in (kinds.FUNCTIONPROTO, kinds.FUNCTIONNOPROTO):
                if in_headers:
                    self._callbacks.add(name)
            elif pointee.kind == kinds.VOID or (
                pointee.kind == kinds.RECORD and pointee.get_size() < 0
            ):
                if in_headers:
                    self.model.handles[name] = self.src.relpath(cursor) or ""
                elif self.src.is_stub(cursor):
                    self._stub_handles[name] = "<cuda_runtime_api.h>"
        elif canonical.kind == kinds.RECORD and canonical.get_size() >= 0 and in_headers:
            usr = canonical.get_declaration().get_usr()
            self._struct_names.setdefault(usr, name)

    def _typedef(self, cursor: Any, header: str) -> None:
        kinds = self.ci.TypeKind
        canonical = cursor.underlying_typedef_type.get_canonical()
        name = cursor.spelling
        deprecated = cursor.availability == self.ci.AvailabilityKind.DEPRECATED
        if canonical.kind == kinds.ENUM:
            decl = canonical.get_declaration()
            if self.src.relpath(decl) is None:
                return  # e.g. cutensorDataType_t -> cudaDataType_t from the stub header
            if decl.get_usr() in self._enum_decls:
                return  # a second typedef of the same enum
            self._enum_decls.add(decl.get_usr())
            since = parse_since(cursor.raw_comment) or parse_since(decl.raw_comment)
            self.model.enums.append(
                EnumType(
                    name=name,
                    header=header,
                    since=since.version if since else None,
                    deprecated=deprecated,
                    enumerators=self._enumerators(decl, since, deprecated),
                )
            )
        elif name in self._callbacks:
            # The parameter declarations keep typedef names (int32_t) that the canonical
            # prototype has already resolved (int).
            params = [c for c in cursor.get_children() if c.kind == self.ci.CursorKind.PARM_DECL]
            names = [p.spelling or f"arg{i}" for i, p in enumerate(params)]
            pointee = cursor.underlying_typedef_type.get_pointee()
            result = pointee.get_result() if pointee.kind != kinds.INVALID else None
            if result is None or result.kind == kinds.INVALID:
                result = canonical.get_pointee().get_result()
            self.model.callbacks.append(
                CallbackType(
                    name=name,
                    header=header,
                    restype=self._ctype(result),
                    argtypes=[
                        self.ctype(p.type, owner=name, param=n)
                        for p, n in zip(params, names, strict=True)
                    ],
                    argnames=names,
                )
            )
        elif name in self._struct_names.values() and canonical.kind == kinds.RECORD:
            decl = canonical.get_declaration()
            if self._struct_names.get(decl.get_usr()) != name:
                return  # a second typedef of the same struct
            fields = []
            for child in decl.get_children():
                if child.kind != self.ci.CursorKind.FIELD_DECL:
                    continue
                if child.is_bitfield():
                    raise GenerationError(f"{name}.{child.spelling}: bit-fields are not supported")
                fields.append((child.spelling, self._ctype(child.type)))
            tokens = [t.spelling for t in itertools.islice(decl.get_tokens(), 2)]
            tag = "" if tokens[1:] == ["{"] else decl.spelling  # `typedef struct { ... } name;`
            self.model.structs.append(StructType(name, tag, header, fields, canonical.get_size()))

    def _enumerators(
        self, decl: Any, enum_since: SinceTag | None, enum_deprecated: bool
    ) -> list[Enumerator]:
        result = []
        for child in decl.get_children():
            if child.kind != self.ci.CursorKind.ENUM_CONSTANT_DECL:
                continue
            comment = own_comment(self.src, child) or ""
            # An enumerator without its own tag has been there as long as its enum.
            since = parse_since(comment) or enum_since or SinceTag()
            attribute = child.availability == self.ci.AvailabilityKind.DEPRECATED
            # Also deprecated: a `@deprecated` doc tag, or an enum type carrying CUDNN_DEPRECATED.
            deprecated = attribute or "@deprecated" in comment or enum_deprecated
            result.append(
                Enumerator(
                    c_name=child.spelling,
                    value=child.enum_value,
                    since=since.version,
                    unstable=since.unstable,
                    deprecated=deprecated,
                    deprecated_attribute=attribute,
                    comment=comment,
                    file=child.extent.start.file.name,
                    start=child.extent.start.offset,
                    end=child.extent.end.offset,
                )
            )
        return result

    def _function(self, cursor: Any, header: str) -> None:
        kinds = self.ci.TypeKind
        argnames: list[str] = []
        argtypes: list[str] = []
        enum_args: list[tuple[str, str]] = []
        for i, arg in enumerate(cursor.get_arguments()):
            name = arg.spelling or f"arg{i}"
            argnames.append(name)
            argtypes.append(self._parameter(arg.type, owner=cursor.spelling, param=name))
            self._note_stub_enum(arg.type)
            named = arg.type.get_named_type() if arg.type.kind == kinds.ELABORATED else arg.type
            if named.kind == kinds.TYPEDEF and named.get_canonical().kind == kinds.ENUM:
                # passed as a C int; the raw layer checks the value's @since against the library
                enum_args.append((name, named.get_declaration().spelling))
        result = cursor.result_type
        named = result.get_named_type() if result.kind == kinds.ELABORATED else result
        returns_status = named.kind == kinds.TYPEDEF and named.spelling == self.status_type
        since = parse_since(cursor.raw_comment) or SinceTag()
        # cuTENSOR checks its pointers itself (no crash was found with NULL); cuDNN does not always.
        cudnn = self.status_type == "cudnnStatus_t"
        nonnull = self._nonnull_out_parameters(cursor, argnames) if cudnn else []
        self.model.functions.append(
            Function(
                name=cursor.spelling,
                restype=self._ctype(result),
                argtypes=argtypes,
                argnames=argnames,
                since=since.version,
                unstable=since.unstable,
                deprecated=cursor.availability == self.ci.AvailabilityKind.DEPRECATED,
                returns_status=returns_status,
                header=header,
                nonnull=nonnull,
                enum_args=enum_args,
                array_counts=self._array_counts(cursor, argnames),
            )
        )

    def _nonnull_out_parameters(self, cursor: Any, argnames: list[str]) -> list[str]:
        """Parameters cuDNN writes through and whose ``@param`` text does not allow NULL.

        An out-parameter is a pointer (or array) to a non-const, complete type: ``size_t *``,
        ``int[]``, ``cudnnTensorDescriptor_t *``, a result struct. Opaque handles (pointers to
        incomplete structs) and ``void *`` are not: they are passed through, not written. Some
        cuDNN functions dereference such out-parameters without a NULL check (observed: a crash,
        not a status), so the raw layer refuses NULL unless the docs say NULL is allowed.
        """
        kinds = self.ci.TypeKind
        docs = param_docs(cursor.raw_comment)
        out: list[str] = []
        for arg, name in zip(cursor.get_arguments(), argnames, strict=True):
            t = arg.type.get_canonical()
            if t.kind == kinds.POINTER:
                pointee = t.get_pointee()
            elif t.kind == kinds.INCOMPLETEARRAY:
                pointee = t.element_type
            else:
                continue
            # libclang drops the qualifier of an array parameter's element (``const int dimA[]``
            # reports a non-const ``int``): the declared spelling says it.
            declared_const = t.kind == kinds.INCOMPLETEARRAY and arg.type.spelling.startswith(
                "const"
            )
            if declared_const or pointee.is_const_qualified():
                continue
            # void* is passed through, not written; a callback may be NULL (it unregisters).
            if pointee.kind in (kinds.VOID, kinds.FUNCTIONPROTO, kinds.FUNCTIONNOPROTO):
                continue
            if pointee.kind == kinds.RECORD and pointee.get_size() < 0:  # opaque handle
                continue
            if NULL_ALLOWED_RE.search(docs.get(name, "")):
                continue
            out.append(name)
        # No cuDNN function takes a NULL handle, and some dereference it without a check
        # (cudnnGetConvolutionForwardAlgorithm_v7 crashed with one, cuDNN 9.28).
        handles = [
            name
            for arg, name in zip(cursor.get_arguments(), argnames, strict=True)
            if arg.type.spelling.removeprefix("const ") == "cudnnHandle_t"
        ]
        crashes = (*NULL_CRASHES.get(cursor.spelling, ()), *handles)
        return out + [name for name in argnames if name in crashes and name not in out]

    def _array_counts(self, cursor: Any, argnames: list[str]) -> list[ArrayCount]:
        """The (array parameter, count parameters, offset) triples of a function (see
        COUNT_PARAM_RE for the rules)."""
        kinds = self.ci.TypeKind
        integers = (kinds.INT, kinds.UINT, kinds.LONG, kinds.ULONG, kinds.LONGLONG, kinds.ULONGLONG)
        types = [arg.type.get_canonical() for arg in cursor.get_arguments()]
        docs = {
            m.group(1): " ".join(m.group(2).split())
            for m in ANY_PARAM_DOC_RE.finditer(cursor.raw_comment or "")
        }
        out: list[ArrayCount] = []
        counter: str | None = None  # the count-named integer parameter seen last
        for i, (name, t) in enumerate(zip(argnames, types, strict=True)):
            if t.kind in integers:
                if COUNT_PARAM_RE.match(name):
                    counter = name
                if name in BYTE_COUNT_PARAMS and i and types[i - 1].kind == kinds.POINTER:
                    pointee = types[i - 1].get_pointee().kind
                    if pointee in (kinds.VOID, kinds.CHAR_S, kinds.CHAR_U):
                        out.append((argnames[i - 1], (name,), 0))
                continue
            is_array = t.kind == kinds.INCOMPLETEARRAY and t.element_type.kind != kinds.POINTER
            is_struct = (
                t.kind == kinds.POINTER
                and t.get_pointee().kind == kinds.RECORD
                and t.get_pointee().get_size() > 0
            )
            if not (is_array or is_struct):
                continue
            key = (cursor.spelling, name)
            if key in ARRAY_COUNT_OVERRIDES:
                override = ARRAY_COUNT_OVERRIDES[key]
                if override is not None:
                    out.append((name, *override))
                continue
            doc = docs.get(name, "")
            stated = DOC_LENGTH_RE.search(doc)
            if stated is not None:
                factors = tuple(g for g in stated.groups() if g)
                if all(
                    f in argnames and types[argnames.index(f)].kind in integers for f in factors
                ):
                    out.append((name, factors, 0))
                    continue
            if DOC_SIZE_WORDS_RE.search(doc):
                continue  # a documented size these rules cannot read: not guessed from names
            if counter is not None:
                out.append((name, (counter,), 0))
        return out

    def _note_stub_enum(self, t: Any) -> None:
        """Remember stub-header enums that prototypes name directly (``libraryPropertyType``)."""
        kinds = self.ci.TypeKind
        if t.kind == kinds.ELABORATED:
            t = t.get_named_type()
        if t.kind != kinds.TYPEDEF:
            return
        decl = t.get_declaration()
        canonical = t.get_canonical()
        if decl.spelling in self.stub_enums and canonical.kind == kinds.ENUM:
            self._stub_enums_used.setdefault(decl.spelling, canonical.get_declaration())

    def _add_stub_enums(self) -> None:
        for name, decl in sorted(self._stub_enums_used.items()):
            self.model.enums.append(
                EnumType(
                    name=name,
                    header="<library_types.h>",
                    since=None,
                    deprecated=False,
                    enumerators=self._enumerators(decl, None, False),
                )
            )

    def _variable(self, cursor: Any) -> None:
        """Header constants (``const T X = CUDA_R_32F;``) and exported data (``extern const T``)."""
        ck = self.ci.CursorKind
        t = cursor.type
        typedef = t.get_named_type().spelling if t.kind == self.ci.TypeKind.ELABORATED else ""
        typedef = typedef or t.spelling.replace("const ", "")
        if cursor.storage_class == self.ci.StorageClass.EXTERN:
            self.model.extern_symbols.append((cursor.spelling, typedef))
            return
        value = None
        for node in cursor.walk_preorder():
            if node.kind == ck.DECL_REF_EXPR and node.referenced.kind == ck.ENUM_CONSTANT_DECL:
                value = node.referenced.enum_value
            elif node.kind == ck.INTEGER_LITERAL:
                value = int(next(iter(node.get_tokens())).spelling.rstrip("uUlL"), 0)
        if value is None:
            raise GenerationError(f"cannot evaluate the initialiser of {cursor.spelling}")
        self.model.constants[cursor.spelling] = (typedef, value)


# --------------------------------------------------------------------------------------------------
# Macros
# --------------------------------------------------------------------------------------------------

_C_INT_SUFFIX = re.compile(r"[uUlL]+$")


def _c_literal(text: str) -> int | float | None:
    """A C integer or floating literal as a Python number; None if it is neither."""
    body = _C_INT_SUFFIX.sub("", text)
    try:
        if re.fullmatch(r"0[0-7]+", body):
            return int(body, 8)
        return int(body, 0)
    except ValueError:
        pass
    try:
        return float(text.rstrip("fFlL"))
    except ValueError:
        return None


def _evaluate(node: ast.AST, names: dict[str, int | float]) -> int | float:
    """Evaluate a C constant expression parsed as a Python expression (no calls, no casts)."""
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, names)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, names)
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.Invert) and isinstance(operand, int):
            return ~operand
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left, names), _evaluate(node.right, names)
        if isinstance(node.op, ast.Div) and isinstance(left, int) and isinstance(right, int):
            return int(left / right)  # C integer division truncates toward zero
        operators: dict[type, Callable[[Any, Any], int | float]] = {
            ast.Add: lambda a, b: a + b,
            ast.Sub: lambda a, b: a - b,
            ast.Mult: lambda a, b: a * b,
            ast.Div: lambda a, b: a / b,
            ast.Mod: lambda a, b: a % b,
            ast.LShift: lambda a, b: a << b,
            ast.RShift: lambda a, b: a >> b,
            ast.BitOr: lambda a, b: a | b,
            ast.BitAnd: lambda a, b: a & b,
            ast.BitXor: lambda a, b: a ^ b,
        }
        op = operators.get(type(node.op))
        if op is not None:
            return op(left, right)
    raise ValueError("not a constant expression")


def evaluate_macros(
    definitions: list[tuple[str, list[Any]]], enumerators: dict[str, int]
) -> dict[str, int | float]:
    """Object-like macros whose body is a numeric constant expression, in definition order.

    Function-like macros, empty macros and anything that is not arithmetic on literals, enumerators
    and earlier macros (attributes, keywords, casts) are left out.
    """
    names: dict[str, int | float] = dict(enumerators)
    result: dict[str, int | float] = {}
    for name, tokens in definitions:
        body = tokens[1:]
        if not body:
            continue
        # Function-like: the parameter list's "(" follows the name with no space in between.
        if body[0].spelling == "(" and body[0].extent.start.offset == tokens[0].extent.end.offset:
            continue
        parts = []
        for token in body:
            spelling = token.spelling
            if token.kind.name == "LITERAL":
                number = _c_literal(spelling)
                if number is None:
                    break
                parts.append(repr(number))
            elif token.kind.name in ("PUNCTUATION", "IDENTIFIER"):
                parts.append(spelling)
            else:
                break
        else:
            try:
                value = _evaluate(ast.parse(" ".join(parts), mode="eval"), names)
            except (SyntaxError, ValueError, ZeroDivisionError):
                continue
            names[name] = result[name] = value
    return result


# --------------------------------------------------------------------------------------------------
# Enum member names
# --------------------------------------------------------------------------------------------------


def _valid_member(name: str) -> bool:
    return bool(name) and name.isidentifier() and not keyword.iskeyword(name) and name[0] != "_"


def assign_member_names(enums: list[EnumType], lib_prefix: str) -> None:
    """Strip the enum's common prefix (at an underscore boundary) from each C enumerator name.

    ``CUDNN_STATUS_BAD_PARAM`` becomes ``cudnnStatus_t.BAD_PARAM``. A one-member enum has no common
    prefix to speak of and loses only the library prefix. Where stripping would leave an empty name,
    a leading digit or a keyword, that name keeps one more segment of the prefix.
    """
    for enum in enums:
        names = [e.c_name for e in enum.enumerators]
        if len(names) == 1:
            prefix = lib_prefix if names[0].startswith(lib_prefix) else ""
        else:
            split = [n.split("_") for n in names]
            common = 0
            while all(len(s) > common + 1 for s in split) and len({s[common] for s in split}) == 1:
                common += 1
            prefix = "".join(part + "_" for part in split[0][:common])
        segments = prefix.split("_")[:-1] if prefix else []
        for e in enum.enumerators:
            keep = len(segments)
            member = e.c_name[len(prefix) :]
            while not _valid_member(member) and keep > 0:
                keep -= 1
                member = e.c_name[len("".join(s + "_" for s in segments[:keep])) :]
            e.member = member
        members = [e.member for e in enum.enumerators]
        if len(set(members)) != len(members):
            raise GenerationError(f"member names of {enum.name} collide: {members}")


def canonical_order(enum: EnumType) -> list[Enumerator]:
    """Header order, except that a value's first member is its first non-deprecated enumerator.

    IntEnum makes the first member with a value canonical and later ones aliases; a deprecated
    alias that the header lists first must not become the name ``repr()`` and ``.name`` report.
    """
    by_value: dict[int, list[Enumerator]] = {}
    for e in enum.enumerators:
        by_value.setdefault(e.value, []).append(e)
    ordered: list[Enumerator] = []
    seen: set[str] = set()
    for e in enum.enumerators:
        if e.c_name in seen:
            continue
        group = by_value[e.value]
        if not any(g.c_name in seen for g in group):
            first = next((g for g in group if not g.deprecated), group[0])
            if first is not e:
                ordered.append(first)
                seen.add(first.c_name)
        ordered.append(e)
        seen.add(e.c_name)
    return ordered


# --------------------------------------------------------------------------------------------------
# cuDNN backend attribute documentation
# --------------------------------------------------------------------------------------------------


@dataclass
class AttributeDoc:
    name: str
    attr_type: str | None  # CUDNN_TYPE_* name
    count: int | None
    descriptor: str  # CUDNN_BACKEND_*_DESCRIPTOR
    access: str


ENTRY_RE = re.compile(
    r"^(?P<indent> *)(?:-\s+)?(?P<name>CUDNN_ATTR_[A-Z0-9_]+)\s*(?P<rest>\(.*\))?\s*$"
)
HEADER_TYPES_RE = re.compile(r"^\((CUDNN_TYPE_[A-Z0-9_]+)[^,]*(?:,\s*(.*))?\)$")
BULLET_TYPE_RE = re.compile(r"^-\s*(CUDNN_TYPE_[A-Z0-9_]+)\s*;\s*(.*)$")
COUNT_RE = re.compile(r"^(\d+|one)\s+elements?\b(?!\s+or\b)")
SECTION_END_RE = re.compile(r"^\s*Finalization\b")
READ_ONLY_RE = re.compile(r"\b(?:read|get)[- ]only\b", re.IGNORECASE)
REQUIRED_RE = re.compile(
    r"\brequired attribute\b|\battribute is required\.|\brequired to be set before finalization\.",
    re.IGNORECASE,
)
OPTIONAL_RE = re.compile(r"\boptional\b|\bdefault value is\b|\bdefaults to\b", re.IGNORECASE)


def _count(text: str) -> int | None:
    """An exact element count ("1 element", "one element of ..."); None for ranges and "n"."""
    match = COUNT_RE.match(text.strip())
    if match is None:
        return None
    word = match.group(1)
    return 1 if word == "one" else int(word)


def _access(text: str) -> str:
    """Access class from an attribute's description.

    "Read-only"/"Get-only" anywhere wins; then an unconditional "Required attribute." / "This
    attribute is required." / "Required to be set before finalization."; then "optional" or a
    documented default value. Conditional wording ("Required only for comparison based modes",
    "This attribute is required for pointwise activation ...") says neither.
    """
    text = " ".join(text.split())
    if READ_ONLY_RE.search(text):
        return "read-only"
    if REQUIRED_RE.search(text):
        return "required"
    if OPTIONAL_RE.search(text):
        return "optional"
    return ""


def _doc_lines(block: str) -> Iterator[tuple[int, str]]:
    """(indent, text) for each line of a ``/** ... */`` block, without the leading `` * ``."""
    for raw in block.splitlines()[1:]:
        line = re.sub(r"^\s*\*(?!/)", "", raw, count=1)
        if line.strip() in ("", "*/"):
            yield -1, ""
            continue
        stripped = line.lstrip(" ")
        yield len(line) - len(stripped) - 1, stripped.rstrip()


def parse_attribute_docs(src: Source, descriptor_enum: EnumType) -> list[AttributeDoc]:
    """Attribute entries from the doc block in front of each ``CUDNN_BACKEND_*_DESCRIPTOR``.

    Two layouts occur::

        - CUDNN_ATTR_TENSOR_DIMENSIONS (CUDNN_TYPE_INT64, at most CUDNN_MAX_DIMS elements)
            Tensor dimensions.
            Required attribute.

        CUDNN_ATTR_OPERATION_NORM_BWD_MODE
          Chooses the normalization mode for the norm backward operation.
          - CUDNN_TYPE_NORM_MODE; one element.
          - Required attribute.

    Consecutive names share the description that follows them. Where alternatives are listed
    ("CUDNN_TYPE_FLOAT or CUDNN_TYPE_DOUBLE") the first one is taken.
    """
    docs: list[AttributeDoc] = []
    previous_end: int | None = None
    for e in descriptor_enum.enumerators:
        if previous_end is None:  # the first enumerator: start at the enum's opening brace
            previous_end = src.text(e.file).rfind(b"{", 0, e.start)
        block = src.slice(e.file, previous_end, e.start)
        previous_end = e.end
        # Only the doc block right in front of this enumerator, not earlier ones.
        opening = block.rfind("/**")
        if opening < 0 or block[opening:].startswith("/**<"):
            continue
        # Each group: names sharing one description, their header text, the description lines.
        groups: list[tuple[list[tuple[str, str]], list[str]]] = []
        group_indent = -1
        previous_was_entry = False
        for indent, text in _doc_lines(block[opening:]):
            if SECTION_END_RE.match(text):
                break
            match = ENTRY_RE.match(" " * max(indent, 0) + text)
            if match is not None:
                entry = (match.group("name"), match.group("rest") or "")
                if previous_was_entry:
                    groups[-1][0].append(entry)
                else:
                    groups.append(([entry], []))
                    group_indent = indent
                previous_was_entry = True
                continue
            previous_was_entry = False
            if not groups or not text:
                continue
            if indent <= group_indent:
                group_indent = 10**6  # dedented text ends the description
            else:
                groups[-1][1].append(text)
        for entries, body in groups:
            for name, rest in entries:
                attr_type, count = None, None
                typed = HEADER_TYPES_RE.match(rest)
                if typed is not None:
                    attr_type, count = typed.group(1), _count(typed.group(2) or "")
                else:
                    for line in body:
                        bullet = BULLET_TYPE_RE.match(line)
                        if bullet is not None:
                            attr_type, count = bullet.group(1), _count(bullet.group(2))
                            break
                if attr_type == "CUDNN_TYPE_CHAR":
                    # Character attributes are NUL-terminated strings (JSON); a documented "one
                    # element" (CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION) is a doc error.
                    count = None
                access = _access("\n".join(body))
                docs.append(AttributeDoc(name, attr_type, count, e.c_name, access))
    return docs


# --------------------------------------------------------------------------------------------------
# Output formatting
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """A bracketed, comma-separated expression (call, tuple, list, dict or set display)."""

    opener: str
    closer: str
    items: tuple[tuple[str, Expr], ...]  # (lead, value): lead is "", "name=" or '"key": '

    def flat(self) -> str:
        inner = ", ".join(lead + flat(value) for lead, value in self.items)
        if self.opener == "(" and len(self.items) == 1:
            inner += ","  # a one-element tuple
        return f"{self.opener}{inner}{self.closer}"


Expr = str | Group


def flat(expr: Expr) -> str:
    return expr if isinstance(expr, str) else expr.flat()


def call(func: str, *args: Expr, **kwargs: Expr) -> Group:
    items = [("", a) for a in args] + [(f"{k}=", v) for k, v in kwargs.items()]
    return Group(f"{func}(", ")", tuple(items))


def tuple_of(items: Iterable[Expr]) -> Expr:
    values = tuple(("", i) for i in items)
    return "()" if not values else Group("(", ")", values)


def render(expr: Expr, indent: str, lead: str, tail: str) -> list[str]:
    """Lay out ``lead + expr + tail`` the way ruff's formatter does with magic trailing commas.

    A group that fits on the line stays flat (ruff would join it); otherwise it is split one item
    per line with a trailing comma, which ruff then keeps.
    """
    one_line = f"{indent}{lead}{flat(expr)}{tail}"
    if len(one_line) <= LINE_LENGTH or isinstance(expr, str):
        return [one_line]
    lines = [f"{indent}{lead}{expr.opener}"]
    for item_lead, value in expr.items:
        lines += render(value, indent + INDENT, item_lead, ",")
    lines.append(f"{indent}{expr.closer}{tail}")
    return lines


def assign(target: str, expr: Expr) -> list[str]:
    """A module-level assignment; a long right-hand side is split or parenthesised."""
    line = f"{target} = {flat(expr)}"
    if len(line) <= LINE_LENGTH:
        return [line]
    if isinstance(expr, Group):
        return render(expr, "", f"{target} = ", "")
    return [f"{target} = (", f"{INDENT}{expr}", ")"]


def dict_of(items: Iterable[tuple[str, Expr]]) -> Group:
    return Group("{", "}", tuple((f"{key}: ", value) for key, value in items))


def set_of(items: Iterable[str]) -> Expr:
    values = sorted(items)
    if not values:
        return "frozenset()"
    return call("frozenset", Group("{", "}", tuple(("", repr_str(v)) for v in values)))


def repr_str(value: str) -> str:
    """A double-quoted Python string literal (ruff's preferred quotes)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def version_expr(version: Version | None) -> Expr:
    return "None" if version is None else tuple_of(str(v) for v in version)


def format_version(version: Version) -> str:
    return ".".join(str(v) for v in version)


class Writer:
    """Collects top-level blocks and joins them with the blank lines ruff expects."""

    def __init__(self) -> None:
        self.blocks: list[tuple[bool, list[str]]] = []

    def add(self, lines: list[str], *, is_class: bool = False) -> None:
        self.blocks.append((is_class, lines))

    def text(self) -> str:
        out: list[str] = []
        previous_class = False
        for is_class, lines in self.blocks:
            if out:
                out += [""] * (2 if is_class or previous_class else 1)
            out += lines
            previous_class = is_class
        return "\n".join(out) + "\n"


def file_header(library: str, version: Version, headers: str, docstring: list[str]) -> list[str]:
    return [
        f"# GENERATED by {GENERATOR} — do not edit.",
        f"# Source: {library} {format_version(version)} headers ({headers}),",
        f"# parsed with libclang {libclang_version()} for {TARGET_TRIPLE}.",
        f"# Regenerate with `python {GENERATOR}`; `--check` reports drift.",
        '"""' + docstring[0],
        *docstring[1:],
        '"""',
    ]


def section(title: str) -> list[str]:
    return [f"# {'-' * 96}", f"# {title}", f"# {'-' * 96}"]


def enum_class(enum: EnumType, doc: str) -> list[str]:
    # A plain class body that int_enum makes the IntEnum (_nvbind.ffi: faster to import than the
    # class statement of an IntEnum; type checkers see IntEnumBody as IntEnum)
    lines = ["@int_enum", f"class {enum.name}(IntEnumBody):", f'{INDENT}"""{doc}"""', ""]
    lines += [f"{INDENT}{e.member} = {e.value}" for e in canonical_order(enum)]
    return lines


def enum_doc(enum: EnumType, library: str) -> str:
    parts = [f"``{enum.name}`` ({enum.header})"]
    if enum.since is not None:
        parts.append(f"since {library} {format_version(enum.since)}")
    if enum.deprecated:
        parts.append("deprecated")
    return ", ".join(parts) + "."


def emit_enums(
    w: Writer, enums: list[EnumType], library: str, extra: Sequence[tuple[EnumType, str]] = ()
) -> None:
    """IntEnum classes, then every enumerator under its C name. ``extra``: (enum, docstring)."""
    prefix = library.upper() + "_*"
    w.add(section(f"Enums: one IntEnum per C enum; members drop the common {prefix} prefix"))
    for enum in enums:
        w.add(enum_class(enum, enum_doc(enum, library)), is_class=True)
    for enum, doc in extra:
        w.add(enum_class(enum, doc), is_class=True)
    w.add(section("C enumerator names, for code written against the C API"))
    for enum in [*enums, *(e for e, _ in extra)]:
        lines = [f"# {enum.name}"]
        for e in enum.enumerators:
            lines += assign(e.c_name, f"{enum.name}.{e.member}")
        w.add(lines)


def emit_macros(w: Writer, macros: dict[str, int | float]) -> None:
    w.add(section("Numeric #define constants"))
    w.add([f"{name} = {value!r}" for name, value in macros.items()])


def emit_handles(w: Writer, handles: dict[str, str]) -> None:
    w.add(section("Opaque handle and pointer typedefs"))
    w.add([f"{name} = ctypes.c_void_p" for name in handles])


def emit_structs(w: Writer, structs: list[StructType]) -> None:
    if not structs:
        return
    w.add(section("Structs (layout from the parse; C_STRUCT_SIZES holds sizeof on x86-64)"))
    for s in structs:
        what = f"``struct {s.tag}``" if s.tag else "Anonymous struct"
        doc = f'{INDENT}"""{what} ({s.header}), {s.size} bytes on x86-64."""'
        body = Group("(", ")", tuple(("", tuple_of([repr_str(n), t])) for n, t in s.fields))
        lines = [f"class {s.name}(ctypes.Structure):", doc, ""]
        lines += render(body, INDENT, "_fields_ = ", "")
        w.add(lines, is_class=True)
    sizes = dict_of((repr_str(s.name), str(s.size)) for s in structs)
    w.add(assign("C_STRUCT_SIZES: dict[str, int]", sizes))


def emit_callbacks(w: Writer, callbacks: list[CallbackType]) -> None:
    w.add(section("Function pointer typedefs (parameters of this type are declared c_void_p)"))
    for cb in callbacks:
        lines = [f"# {cb.name}: ({', '.join(cb.argnames)})"]
        for arg in cb.argnames:
            override = CTYPES_OVERRIDES.get((cb.name, arg))
            if override is not None:
                lines.append(f"# {override[1]}")
        lines += assign(cb.name, call("ctypes.CFUNCTYPE", cb.restype, *cb.argtypes))
        w.add(lines)


def function_spec(fn: Function) -> Group:
    return call(
        "FunctionSpec",
        name=repr_str(fn.name),
        restype=fn.restype,
        argtypes=tuple_of(fn.argtypes),
        argnames=tuple_of(repr_str(a) for a in fn.argnames),
        since=version_expr(fn.since),
        deprecated=str(fn.deprecated),
        returns_status=str(fn.returns_status),
        header=repr_str(fn.header),
        **({"nonnull": tuple_of(repr_str(n) for n in fn.nonnull)} if fn.nonnull else {}),
        **(
            {"enum_args": tuple_of(tuple_of([repr_str(p), repr_str(e)]) for p, e in fn.enum_args)}
            if fn.enum_args
            else {}
        ),
    )


def emit_functions(w: Writer, functions: list[Function], header_note: str) -> None:
    w.add(section(f"Functions declared in {header_note}"))
    specs = dict_of((repr_str(fn.name), function_spec(fn)) for fn in functions)
    w.add(assign("FUNCTIONS: dict[str, FunctionSpec]", specs))
    counts = dict_of(
        (
            repr_str(fn.name),
            tuple_of(
                tuple_of([repr_str(array), tuple_of(map(repr_str, factors)), str(offset)])
                for array, factors, offset in fn.array_counts
            ),
        )
        for fn in functions
        if fn.array_counts
    )
    w.add(
        [
            "# Array parameters whose element count is another argument: function -> (array,",
            "# count parameters multiplied, offset added). The raw layer refuses a count larger",
            "# than a ctypes array passed there holds (rules in the generator, at COUNT_PARAM_RE).",
            *assign(
                "ARRAY_COUNTS: dict[str, tuple[tuple[str, tuple[str, ...], int], ...]]", counts
            ),
        ]
    )


# --------------------------------------------------------------------------------------------------
# cuDNN
# --------------------------------------------------------------------------------------------------


@dataclass
class Report:
    """Counts and warnings printed after generating."""

    lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def attribute_type_ctypes(model: Model, report: Report) -> dict[str, str]:
    """``CUDNN_TYPE_*`` enumerator -> ctypes element type.

    The enumerator's doc comment names the C type for non-scalar kinds ("cudnnDataType_t value"):
    enums become c_int, structs their Structure class, handle typedefs c_void_p. Plain scalars are
    mapped by name through SCALAR_ATTRIBUTE_TYPES.
    """
    enums = {e.name for e in model.enums}
    structs = {s.name for s in model.structs}
    result: dict[str, str] = {}
    for e in model.enum("cudnnBackendAttributeType_t").enumerators:
        suffix = e.c_name.removeprefix("CUDNN_TYPE_")
        named = re.search(r"\b(cudnn\w+_t)\s+value\b", e.comment)
        c_type = named.group(1) if named else ""
        if suffix in SCALAR_ATTRIBUTE_TYPES:
            result[e.c_name] = SCALAR_ATTRIBUTE_TYPES[suffix]
        elif c_type in enums:
            result[e.c_name] = "ctypes.c_int"
        elif c_type in structs:
            result[e.c_name] = c_type
        elif c_type in model.handles:
            result[e.c_name] = "ctypes.c_void_p"
        else:
            report.warnings.append(f"no ctypes element type known for {e.c_name}; left out")
    return result


def build_attributes(
    src: Source, model: Model, report: Report
) -> list[tuple[Enumerator, AttributeDoc | None]]:
    names = model.enum("cudnnBackendAttributeName_t")
    by_name = {e.c_name: e for e in names.enumerators}
    attr_types = {e.c_name for e in model.enum("cudnnBackendAttributeType_t").enumerators}
    docs: dict[str, AttributeDoc] = {}
    for doc in parse_attribute_docs(src, model.enum("cudnnBackendDescriptorType_t")):
        if doc.attr_type is not None:
            doc.attr_type = DOC_TYPE_ALIASES.get(doc.attr_type, doc.attr_type)
            if doc.attr_type not in attr_types:
                report.warnings.append(
                    f"{doc.name} is documented with type {doc.attr_type}, which is not a"
                    " cudnnBackendAttributeType_t enumerator (see DOC_TYPE_ALIASES); type left out"
                )
                doc.attr_type = None
        real = DOC_ATTRIBUTE_ALIASES.get(doc.name, doc.name)
        if real in DOC_ONLY_ATTRIBUTES:
            continue
        if real not in by_name:
            report.warnings.append(
                f"{doc.descriptor} documents {doc.name}, which is not a cudnnBackendAttributeName_t"
                " enumerator (add it to DOC_ATTRIBUTE_ALIASES if it is a misspelling)"
            )
            continue
        if real in docs:
            if (docs[real].attr_type, docs[real].count) != (doc.attr_type, doc.count):
                report.warnings.append(
                    f"{real} is documented twice with different types; keeping the first"
                )
            continue
        doc.name = real
        docs[real] = doc
    return [(e, docs.get(e.c_name)) for e in names.enumerators]


def generate_cudnn(include_dir: Path, report: Report) -> str:
    src = parse_headers("cudnn.h", include_dir, defines=["CUDNN_WARN_DEPRECATED"])
    model = ModelBuilder(
        src,
        "cuDNN",
        status_type="cudnnStatus_t",
        lib_prefix="CUDNN_",
        stub_enums=["libraryPropertyType"],  # cudnnGetProperty(libraryPropertyType, int *)
    ).build()
    report.warnings += model.warnings
    macros = model.macros
    try:
        version = (
            int(macros["CUDNN_MAJOR"]),
            int(macros["CUDNN_MINOR"]),
            int(macros["CUDNN_PATCHLEVEL"]),
        )
    except KeyError as exc:
        raise GenerationError(f"cudnn_version.h defines no {exc.args[0]}") from None
    enumerators = [e for enum in model.enums for e in enum.enumerators]
    attributes = build_attributes(src, model, report)
    type_ctypes = attribute_type_ctypes(model, report)

    w = Writer()
    doc = [
        f"ctypes declarations for cuDNN {format_version(version)}, generated from its C headers.",
        "",
        "Enums are ``IntEnum`` classes named like their C typedefs, with every C enumerator also",
        "available under its C name; ``FUNCTIONS`` describes every declared function for the lazy",
        "loader in ``_nvbind.ffi``; ``ATTRIBUTES`` is the backend attribute table that",
        "``cudnn_graph.h`` documents in prose (type, element count, owning descriptor, access).",
    ]
    w.add(file_header("cuDNN", version, "cudnn.h and every header it includes", doc))
    w.add(
        [
            "import ctypes",
            "",
            "from _nvbind.ffi import AttributeSpec, FunctionSpec, IntEnumBody, int_enum",
        ]
    )
    w.add(
        [
            "# (CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL) of the headers this module came from.",
            f"HEADER_VERSION: tuple[int, int, int] = {flat(version_expr(version))}",
            f"HEADER_VERSION_INT = {version[0] * 10000 + version[1] * 100 + version[2]}",
        ]
    )
    emit_macros(w, macros)
    emit_handles(w, model.handles)
    emit_enums(w, model.enums, "cuDNN")

    w.add(section("Enumerator metadata from the header doc comments"))
    w.add(
        [
            "# @since of each enumerator; one without its own tag inherits its enum's. Enumerators",
            "# tagged `@since cuDNN 9.NEXT`/`UNPUBLISHED` are in UNSTABLE_ENUMERATORS instead.",
            *assign(
                "ENUMERATOR_SINCE: dict[str, tuple[int, int, int]]",
                dict_of(
                    (repr_str(e.c_name), version_expr(e.since))
                    for e in enumerators
                    if e.since is not None
                ),
            ),
        ]
    )
    w.add(
        [
            "# Enumerators marked CUDNN_DEPRECATED_ENUM, tagged @deprecated, or whose enum type is",
            "# deprecated as a whole (DEPRECATED_ENUMS).",
            *assign(
                "DEPRECATED_ENUMERATORS: frozenset[str]",
                set_of(e.c_name for e in enumerators if e.deprecated),
            ),
        ]
    )
    w.add(
        assign(
            "DEPRECATED_ENUMS: frozenset[str]",
            set_of(enum.name for enum in model.enums if enum.deprecated),
        )
    )
    w.add(
        assign(
            "UNSTABLE_ENUMERATORS: frozenset[str]",
            set_of(e.c_name for e in enumerators if e.unstable),
        )
    )
    emit_structs(w, model.structs)
    emit_callbacks(w, model.callbacks)
    emit_functions(w, model.functions, "cudnn.h and the headers it includes")
    w.add(
        [
            "# Functions tagged `@since cuDNN 9.NEXT`/`UNPUBLISHED`; FunctionSpec.since is None.",
            *assign(
                "UNSTABLE_FUNCTIONS: frozenset[str]",
                set_of(fn.name for fn in model.functions if fn.unstable),
            ),
        ]
    )

    w.add(section("Backend attributes"))
    w.add(
        [
            "# Element ctypes type for each cudnnBackendAttributeType_t value.",
            *assign(
                "ATTRIBUTE_TYPE_CTYPES: dict[int, type]",
                dict_of((name, ctype) for name, ctype in type_ctypes.items()),
            ),
        ]
    )
    specs = []
    for e, adoc in attributes:
        spec = call(
            "AttributeSpec",
            name=repr_str(e.c_name),
            value=str(e.value),
            attr_type=adoc.attr_type if adoc and adoc.attr_type else "None",
            count=str(adoc.count) if adoc and adoc.count is not None else "None",
            descriptor_type=adoc.descriptor if adoc else "None",
            access=repr_str(adoc.access if adoc else ""),
            since=version_expr(e.since if not e.unstable else None),
            deprecated=str(e.deprecated),
        )
        specs.append((e.c_name, spec))
    w.add(
        [
            "# Keyed by cudnnBackendAttributeName_t value. attr_type, count, descriptor_type and",
            "# access come from the descriptor documentation in cudnn_graph.h (None or empty where",
            "# it says nothing); where it lists alternatives (FLOAT or DOUBLE), attr_type is the",
            "# first. count is None for variable counts (`1+`, `at most CUDNN_MAX_DIMS`, strings).",
            *assign("ATTRIBUTES: dict[int, AttributeSpec]", dict_of(specs)),
        ]
    )

    real_enums = [e for e in model.enums if not e.header.startswith("<")]
    stub_enums = len(model.enums) - len(real_enums)
    real_enumerators = [e for enum in real_enums for e in enum.enumerators]
    typed = sum(1 for _, d in attributes if d and d.attr_type)
    documented = sum(1 for _, d in attributes if d)
    deprecated_fns = sum(fn.deprecated for fn in model.functions)
    per_header: dict[str, int] = {}
    for fn in model.functions:
        per_header[fn.header] = per_header.get(fn.header, 0) + 1
    report.lines += [
        f"cuDNN {format_version(version)} (libclang {libclang_version()}):",
        f"  functions: {len(model.functions)} ({deprecated_fns} deprecated); per header: "
        + ", ".join(f"{h} {n}" for h, n in per_header.items()),
        f"  enums: {len(real_enums)} (+ {stub_enums} from <library_types.h>), enumerators: "
        f"{len(real_enumerators)}; deprecated {sum(e.deprecated for e in real_enumerators)} "
        f"({sum(e.deprecated_attribute for e in real_enumerators)} by CUDNN_DEPRECATED_ENUM, "
        f"the rest by @deprecated or a deprecated enum type), "
        f"unstable {sum(e.unstable for e in real_enumerators)}",
        f"  attributes: {len(attributes)}; documented {documented}, with a type {typed}, "
        f"without a type {len(attributes) - typed}",
        f"  macros: {len(macros)}, handles: {len(model.handles)}, structs: {len(model.structs)}, "
        f"callbacks: {len(model.callbacks)}",
    ]
    return w.text()


# --------------------------------------------------------------------------------------------------
# cuTENSOR
# --------------------------------------------------------------------------------------------------


def elf_symbol_versions(library: Path) -> dict[str, str]:
    """Exported symbol -> the version node it is defined under (``.gnu.version_d``), read from an
    ELF64 little-endian shared library: ``{"cutensorContractTrinary": "libcutensor.2.1.1"}``.

    cuTENSOR's headers carry no ``@since`` tags, but its library versions every export with the
    release that introduced it, so this dates its functions and compute descriptors.
    """
    data = library.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise GenerationError(f"{library} is not an ELF64 little-endian file")
    u16 = lambda o: int.from_bytes(data[o : o + 2], "little")  # noqa: E731
    u32 = lambda o: int.from_bytes(data[o : o + 4], "little")  # noqa: E731
    u64 = lambda o: int.from_bytes(data[o : o + 8], "little")  # noqa: E731
    shoff, shentsize, shnum = u64(0x28), u16(0x3A), u16(0x3C)
    sections = []
    for i in range(shnum):
        h = shoff + i * shentsize
        sections.append(
            (u32(h + 4), u64(h + 0x18), u64(h + 0x20), u32(h + 0x28))
        )  # type, off, size, link
    by_type = {kind: (off, size, link) for kind, off, size, link in sections}
    sht_dynsym, sht_verdef, sht_versym = 11, 0x6FFFFFFD, 0x6FFFFFFF
    if not {sht_dynsym, sht_verdef, sht_versym} <= by_type.keys():
        raise GenerationError(f"{library} has no versioned dynamic symbols")

    def string(table: int, offset: int) -> str:
        start = sections[table][1] + offset
        return data[start : data.index(b"\0", start)].decode()

    vd_off, _, vd_link = by_type[sht_verdef]
    names: dict[int, str] = {}
    entry = vd_off
    while True:  # Elf64_Verdef: version, flags, ndx, cnt, hash, aux, next
        names[u16(entry + 4)] = string(vd_link, u32(entry + u32(entry + 12)))
        if not u32(entry + 16):
            break
        entry += u32(entry + 16)
    sym_off, sym_size, sym_link = by_type[sht_dynsym]
    vs_off = by_type[sht_versym][0]
    out: dict[str, str] = {}
    for i in range(sym_size // 24):  # Elf64_Sym: name, info, other, shndx, value, size
        sym = sym_off + i * 24
        index = u16(vs_off + 2 * i) & 0x7FFF
        if u16(sym + 6) and index in names:  # defined here, under a named version
            out[string(sym_link, u32(sym))] = names[index]
    return out


def cutensor_symbol_since(include_dir: Path, floor: Version) -> dict[str, Version]:
    """When each cuTENSOR export appeared, from the ELF symbol versions of the library that ships
    next to the headers (``<wheel>/lib/libcutensor.so.2``). Versions below ``floor`` (the 1.x
    names of functions that cuTENSOR 2 kept) count as ``floor``."""
    library = include_dir.parent / "lib" / f"libcutensor.so.{floor[0]}"
    if not library.is_file():
        raise GenerationError(f"no {library.name} next to the cuTENSOR headers in {include_dir}")
    out: dict[str, Version] = {}
    for symbol, node in elf_symbol_versions(library).items():
        m = re.fullmatch(r"libcutensor\.(\d+)\.(\d+)\.(\d+)", node)
        if m:
            out[symbol] = max((int(m[1]), int(m[2]), int(m[3])), floor)
    return out


def generate_cutensor(include_dir: Path, report: Report) -> str:
    src = parse_headers("cutensor.h", include_dir)
    model = ModelBuilder(
        src, "cuTENSOR", status_type="cutensorStatus_t", lib_prefix="CUTENSOR_"
    ).build()
    report.warnings += model.warnings
    macros = model.macros
    try:
        version = (
            int(macros["CUTENSOR_MAJOR"]),
            int(macros["CUTENSOR_MINOR"]),
            int(macros["CUTENSOR_PATCH"]),
        )
    except KeyError as exc:
        raise GenerationError(f"cutensor.h defines no {exc.args[0]}") from None

    # cutensorDataType_t is a typedef of cudaDataType_t; its CUTENSOR_R_*/C_* names are header
    # constants, not enumerators. Present them as an enum of their own.
    data_types = sorted(
        (value, name)
        for name, (typedef, value) in model.constants.items()
        if typedef == "cutensorDataType_t"
    )
    dtype_enum = EnumType(
        name="cutensorDataType_t",
        header="cutensor/types.h",
        since=None,
        deprecated=False,
        enumerators=[
            Enumerator(name, value, None, False, False, False, "", "", 0, 0)
            for value, name in data_types
        ],
    )
    assign_member_names([dtype_enum], "CUTENSOR_")
    compute = [
        name for name, typedef in model.extern_symbols if typedef == "cutensorComputeDescriptor_t"
    ]
    symbol_since = cutensor_symbol_since(include_dir, (version[0], 0, 0))
    for fn in model.functions:
        fn.since = symbol_since.get(fn.name)

    w = Writer()
    doc = [
        f"ctypes declarations for cuTENSOR {format_version(version)}, generated from its headers.",
        "",
        "Enums are ``IntEnum`` classes named like their C typedefs, with every C enumerator also",
        "available under its C name; ``FUNCTIONS`` describes every function that ``cutensor.h``",
        "declares, for the lazy loader in ``_nvbind.ffi``. cuTENSORMp and cuTENSORMg are",
        "in ``_bindings_mp`` and ``_bindings_mg``.",
    ]
    w.add(file_header("cuTENSOR", version, "cutensor.h and cutensor/types.h", doc))
    w.add(
        [
            "import ctypes",
            "",
            "from _nvbind.ffi import FunctionSpec, IntEnumBody, int_enum",
        ]
    )
    w.add(
        [
            "# (CUTENSOR_MAJOR, CUTENSOR_MINOR, CUTENSOR_PATCH) of the headers this came from.",
            f"HEADER_VERSION: tuple[int, int, int] = {flat(version_expr(version))}",
            f"HEADER_VERSION_INT = {version[0] * 10000 + version[1] * 100 + version[2]}",
        ]
    )
    emit_macros(w, macros)
    emit_handles(w, model.handles)
    dtype_doc = "``cutensorDataType_t`` (``cudaDataType_t``): the CUTENSOR_R_*/C_* constants."
    emit_enums(w, model.enums, "cuTENSOR", extra=[(dtype_enum, dtype_doc)])
    w.add(
        [
            "# Exported data symbols (`extern const cutensorComputeDescriptor_t`): read each with",
            "# ctypes.c_void_p.in_dll(library, name).value and pass it as a compute descriptor.",
            *assign(
                "COMPUTE_DESCRIPTOR_SYMBOLS: tuple[str, ...]",
                tuple_of(repr_str(n) for n in compute),
            ),
            "",
            "# The release that introduced each compute descriptor (its ELF symbol version).",
            *assign(
                "COMPUTE_DESCRIPTOR_SINCE: dict[str, tuple[int, int, int] | None]",
                dict_of((repr_str(n), version_expr(symbol_since.get(n))) for n in compute),
            ),
        ]
    )
    emit_structs(w, model.structs)
    emit_callbacks(w, model.callbacks)
    # The headers carry no @since tags: each function's ``since`` is its ELF symbol version.
    emit_functions(w, model.functions, "cutensor.h (since: the library's ELF symbol versions)")

    enumerators = sum(len(e.enumerators) for e in model.enums)
    report.lines += [
        f"cuTENSOR {format_version(version)} (libclang {libclang_version()}):",
        f"  functions: {len(model.functions)} "
        f"({sum(fn.deprecated for fn in model.functions)} deprecated)",
        f"  enums: {len(model.enums)} + cutensorDataType_t, enumerators: {enumerators} "
        f"+ {len(data_types)} data types",
        f"  compute descriptor symbols: {len(compute)}, handles: {len(model.handles)}, "
        f"callbacks: {len(model.callbacks)}, macros: {len(macros)}",
    ]
    return w.text()


HISTORY_FILE = Path("requirements") / "cutensor-history.txt"
HISTORY_OUTPUT = Path("pycutensor") / "_enum_history.py"
HISTORY_CACHE = Path("build") / "cutensor-history"
_HEADERS_IN_WHEEL = ("cutensor/include/cutensor.h", "cutensor/include/cutensor/types.h")


def _history_headers(spec: str, cache: Path) -> str:
    """The text of cutensor.h and cutensor/types.h in the wheel ``spec`` (``cutensor-cu12==2.0.0``),
    downloaded by package name into ``cache`` once."""
    import subprocess
    import zipfile

    name, version = spec.split("==")
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    wheels = sorted(cache.glob(pattern))
    if not wheels:
        cache.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(cache), spec]
        if subprocess.run(cmd, check=False).returncode != 0:
            raise GenerationError(f"could not download {spec}")
        wheels = sorted(cache.glob(pattern))
    if not wheels:
        raise GenerationError(f"pip download {spec} left no {pattern} in {cache}")
    with zipfile.ZipFile(wheels[0]) as wheel:
        return "\n".join(wheel.read(member).decode() for member in _HEADERS_IN_WHEEL)


def generate_cutensor_history(include_dir: Path, out_dir: Path, report: Report) -> str:
    """``pycutensor/_enum_history.py``: the release that introduced each cuTENSOR enumerator.

    cuTENSOR's headers carry no ``@since`` tags and enum values have no ELF symbol versions, so each
    enumerator of the current headers is looked up in the headers of the older releases pinned in
    ``requirements/cutensor-history.txt`` (downloaded by package name); the first release whose
    headers name it introduced it, and one none of them names is as new as the current headers.
    """
    src = parse_headers("cutensor.h", include_dir)
    model = ModelBuilder(
        src, "cuTENSOR", status_type="cutensorStatus_t", lib_prefix="CUTENSOR_"
    ).build()
    macros = model.macros
    current = (
        int(macros["CUTENSOR_MAJOR"]),
        int(macros["CUTENSOR_MINOR"]),
        int(macros["CUTENSOR_PATCH"]),
    )
    specs = [
        line.split("#", 1)[0].strip()
        for line in (out_dir / HISTORY_FILE).read_text().splitlines()
        if line.split("#", 1)[0].strip()
    ]
    releases: list[tuple[Version, set[str]]] = []
    for spec in specs:
        major, minor, patch = (int(x) for x in spec.split("==")[1].split("."))
        text = _history_headers(spec, out_dir / HISTORY_CACHE)
        releases.append(((major, minor, patch), set(re.findall(r"\bCUTENSOR_\w+\b", text))))
    releases.sort()
    since: dict[str, Version] = {}
    for enum in model.enums:
        for e in enum.enumerators:
            since[e.c_name] = next((v for v, names in releases if e.c_name in names), current)
    w = Writer()
    w.add(
        [
            "# GENERATED by scripts/generate_bindings.py --cutensor-history — do not edit.",
            f"# Source: cuTENSOR {format_version(current)} headers and the headers of "
            + ", ".join(spec.split("==")[1] for spec in specs)
            + f" ({HISTORY_FILE.as_posix()}).",
            '"""The cuTENSOR release that introduced each enumerator of the headers.',
            "",
            "The headers carry no ``@since`` tags: the generator looks each enumerator up in the",
            "headers of older releases. Read by ``pycutensor._lib.check_enum``.",
            '"""',
        ]
    )
    w.add(
        assign(
            "ENUMERATOR_SINCE: dict[str, tuple[int, int, int]]",
            dict_of((repr_str(n), version_expr(v)) for n, v in sorted(since.items())),
        )
    )
    newer = sorted(n for n, v in since.items() if v > releases[0][0])
    report.lines.append(
        f"cuTENSOR enumerator history: {len(since)} enumerators, newer than "
        f"{format_version(releases[0][0])}: {', '.join(newer) or 'none'}"
    )
    return w.text()


# --------------------------------------------------------------------------------------------------
# cuTENSORMp and cuTENSORMg (libraries beside libcutensor.so.2 in the same wheel)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CutensorExtension:
    """One of the libraries that ship with cuTENSOR and include ``cutensor.h``."""

    library: str  # "cuTENSORMp"
    soname_stem: str  # "cutensorMp": lib<stem>.so.<major>, ELF version nodes lib<stem>.x.y.z
    main_header: str
    headers: tuple[str, ...]  # declarations kept: those of these headers, not cutensor.h's
    lib_prefix: str
    output: Path
    doc: tuple[str, ...]


CUTENSOR_EXTENSIONS: tuple[CutensorExtension, ...] = (
    CutensorExtension(
        "cuTENSORMp",
        "cutensorMp",
        "cutensorMp.h",
        ("cutensorMp.h", "cutensorMp/types.h"),
        "CUTENSORMP_",
        Path("pycutensor") / "_bindings_mp.py",
        (
            "Distributed contractions, redistribution, unfolding and folding across processes that",
            "talk through NCCL (``libcutensorMp.so.2``). The types of ``cutensor.h`` that these",
            "prototypes use (operators, compute descriptors) are in ``pycutensor._bindings``.",
        ),
    ),
    CutensorExtension(
        "cuTENSORMg",
        "cutensorMg",
        "cutensorMg.h",
        ("cutensorMg.h",),
        "CUTENSORMG_",
        Path("pycutensor") / "_bindings_mg.py",
        (
            "Block-cyclic tensors over several GPUs of one process (``libcutensorMg.so.2``). The",
            "types of ``cutensor.h`` that these prototypes use are in ``pycutensor._bindings``.",
        ),
    ),
)


def extension_symbol_since(
    include_dir: Path, ext: CutensorExtension, floor: Version
) -> dict[str, Version]:
    """When each export of ``ext``'s library appeared (its ELF symbol versions, as for cuTENSOR);
    versions below ``floor`` (cuTENSORMg's 1.x nodes) count as ``floor``."""
    library = include_dir.parent / "lib" / f"lib{ext.soname_stem}.so.{floor[0]}"
    if not library.is_file():
        raise GenerationError(f"no {library.name} next to the cuTENSOR headers in {include_dir}")
    node_re = re.compile(rf"lib{re.escape(ext.soname_stem)}\.(\d+)\.(\d+)\.(\d+)")
    out: dict[str, Version] = {}
    for symbol, node in elf_symbol_versions(library).items():
        m = node_re.fullmatch(node)
        if m:
            out[symbol] = max((int(m[1]), int(m[2]), int(m[3])), floor)
    return out


def _untyped_enums(builder: ModelBuilder, src: Source, headers: Collection[str]) -> list[EnumType]:
    """``enum name { ... };`` without a typedef in ``headers`` (cutensorMg.h's host-device codes),
    as enums of their own: their values are passed where C takes an ``int32_t`` device."""
    kinds = cindex().CursorKind
    out = []
    for cursor in src.tu.cursor.get_children():
        if cursor.kind != kinds.ENUM_DECL or src.relpath(cursor) not in headers:
            continue
        if not cursor.spelling or cursor.get_usr() in builder._enum_decls:
            continue
        out.append(
            EnumType(
                cursor.spelling,
                src.relpath(cursor) or "",
                None,
                False,
                builder._enumerators(cursor, None, False),
            )
        )
    return out


def generate_cutensor_extension(include_dir: Path, ext: CutensorExtension, report: Report) -> str:
    """``pycutensor/_bindings_mp.py`` or ``_bindings_mg.py``: the declarations of ``ext``'s own
    headers; the handles of ``cutensor.h`` or the stubs that its prototypes name are repeated as
    ``c_void_p`` so the module stands alone."""
    # cutensorMp/types.h includes <cutensor/types.h>, which needs cutensor.h's includes first.
    src = parse_headers(ext.main_header, include_dir, first=("cutensor.h",))
    builder = ModelBuilder(
        src, ext.library, status_type="cutensorStatus_t", lib_prefix=ext.lib_prefix
    )
    model = builder.build()
    kept = set(ext.headers)
    enums = [e for e in model.enums if e.header in kept]
    enums += _untyped_enums(builder, src, kept)
    assign_member_names(enums, ext.lib_prefix)
    functions = [fn for fn in model.functions if fn.header in kept]
    used = {
        n for fn in functions for t in (*fn.argtypes, fn.restype) for n in re.findall(r"\w+", t)
    }
    handles = {n: h for n, h in model.handles.items() if h in kept or n in used}
    try:
        version = (
            int(model.macros["CUTENSOR_MAJOR"]),
            int(model.macros["CUTENSOR_MINOR"]),
            int(model.macros["CUTENSOR_PATCH"]),
        )
    except KeyError as exc:
        raise GenerationError(f"cutensor.h defines no {exc.args[0]}") from None
    symbol_since = extension_symbol_since(include_dir, ext, (version[0], 0, 0))
    for fn in functions:
        fn.since = symbol_since.get(fn.name)
    unknown = [w for w in model.warnings if not w.startswith("enum ")]
    report.warnings += unknown

    w = Writer()
    doc = [
        f"ctypes declarations for {ext.library} {format_version(version)}, generated from its "
        "headers.",
        "",
        *ext.doc,
    ]
    headers = " and ".join(ext.headers)
    w.add(file_header(ext.library, version, headers, doc))
    w.add(
        [
            "import ctypes",
            "",
            "from _nvbind.ffi import FunctionSpec, IntEnumBody, int_enum",
        ]
    )
    w.add(
        [
            "# (CUTENSOR_MAJOR, CUTENSOR_MINOR, CUTENSOR_PATCH) of the headers this came from.",
            f"HEADER_VERSION: tuple[int, int, int] = {flat(version_expr(version))}",
            f'SONAME = "lib{ext.soname_stem}.so.{version[0]}"',
        ]
    )
    emit_handles(w, handles)
    emit_enums(w, enums, ext.library)
    emit_functions(w, functions, f"{headers} (since: the library's ELF symbol versions)")
    report.lines += [
        f"{ext.library} {format_version(version)}: functions: {len(functions)}, "
        f"enums: {len(enums)}, handles: {len(handles)}",
    ]
    return w.text()


# --------------------------------------------------------------------------------------------------
# Type stubs for the raw layers (raw.pyi), read back from the generated FUNCTIONS tables
# --------------------------------------------------------------------------------------------------

STUB_OUTPUTS = {
    "cudnn": Path("pycudnn") / "raw.pyi",
    "cutensor": Path("pycutensor") / "raw.pyi",
}
_STUB_INT_RE = re.compile(
    r"ctypes\.c_(u?(int|long|short|byte)(8|16|32|64)?|u?longlong|s?size_t|bool)"
)
_STUB_FLOAT_RE = re.compile(r"ctypes\.c_(float|double|longdouble)")


def stub_type(ctype: str) -> str:
    """The Python type a raw-layer call takes (or returns) for a ctypes type written as text."""
    if _STUB_INT_RE.fullmatch(ctype):
        return "int"
    if _STUB_FLOAT_RE.fullmatch(ctype):
        return "float"
    if ctype == "None":
        return "None"
    if ctype == "ctypes.c_char_p":
        return "bytes | None"
    return "_Pointer"  # handles, pointers, arrays and byref(...) results


def _stub_functions(bindings: str) -> Iterator[tuple[str, list[tuple[str, str]], str]]:
    """(name, [(parameter, type)], return type) of every ``FunctionSpec`` in generated text."""
    for node in ast.walk(ast.parse(bindings)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "FunctionSpec"):
            continue
        kw = {k.arg: k.value for k in node.keywords}
        argtypes = kw["argtypes"]
        argnames = kw["argnames"]
        assert isinstance(argtypes, ast.Tuple) and isinstance(argnames, ast.Tuple)
        params = []
        for i, (name_node, type_node) in enumerate(zip(argnames.elts, argtypes.elts, strict=True)):
            name = ast.literal_eval(name_node) or f"arg{i}"
            params.append((f"{name}_" if keyword.iskeyword(name) else name, ast.unparse(type_node)))
        if ast.literal_eval(kw["returns_status"]):
            returns = "None"  # a failing status raises; success returns nothing
        else:
            returns = stub_type(ast.unparse(kw["restype"]))
        yield ast.literal_eval(kw["name"]), [(n, stub_type(t)) for n, t in params], returns


def stub_def(name: str, params: list[tuple[str, str]], returns: str) -> list[str]:
    """One stub ``def`` laid out as ``ruff format`` lays out a stub (positional-only)."""
    if not params:
        return [f"def {name}() -> {returns}: ..."]
    args = [f"{p}: {t}" for p, t in params]
    one_line = f"def {name}({', '.join(args)}, /) -> {returns}: ..."
    if len(one_line) <= LINE_LENGTH:
        return [one_line]
    return [f"def {name}(", *(f"{INDENT}{a}," for a in args), f"{INDENT}/,", f") -> {returns}: ..."]


def generate_raw_stub(library: str, bindings: str) -> str:
    """``raw.pyi`` for one library: each C function with its C parameter names and Python types,
    and the enums, constants and structs of ``_bindings`` re-exported, as the module serves them."""
    package = "pycudnn" if library == "cudnn" else "pycutensor"
    source = bindings.split('"""', 1)[0].splitlines()  # the generated module's "# Source" lines
    lines = [
        *source,
        f'"""Type stubs for ``{package}.raw``: every C function of the headers under its C name,',
        "with its C parameter names (positional only, as in C). Status-returning functions return",
        "None (a failing status raises); a pointer, handle, array or ``ctypes.byref`` argument is",
        '``_Pointer``."""',
        "",
        "from typing import Any, TypeAlias",
        "",
        "from ._bindings import *  # noqa: F403 - enums, constants and structs, as raw serves them",
        "",
        "# A ctypes pointer or array, ctypes.byref(...), an int address, None, or an object with",
        "# _as_parameter_ (a handle or descriptor of the library).",
        "_Pointer: TypeAlias = Any",
        "",
    ]
    if library == "cutensor":  # the C globals raw reads on first use, and its reader
        symbols = re.search(r"COMPUTE_DESCRIPTOR_SYMBOLS[^=]*= \((.*?)\n\)", bindings, re.DOTALL)
        assert symbols is not None, "COMPUTE_DESCRIPTOR_SYMBOLS is missing from the bindings"
        lines += [f"{ast.literal_eval(s.strip().rstrip(','))}: int" for s in symbols[1].split()]
        lines += ["", "def compute_descriptor(name: str) -> int: ..."]
    for name, params, returns in _stub_functions(bindings):
        lines += stub_def(name, params, returns)
    lines += ["def __getattr__(name: str) -> Any: ...", "def __dir__() -> list[str]: ..."]
    return "\n".join(lines) + "\n"


def add_raw_stubs(outputs: dict[Path, str]) -> None:
    """Add each library's ``raw.pyi`` to ``outputs``, from its generated ``_bindings.py`` text."""
    for library, stub in STUB_OUTPUTS.items():
        outputs[stub] = generate_raw_stub(library, outputs[OUTPUTS[library]])


# --------------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------------

OUTPUTS = {
    "cudnn": Path("pycudnn") / "_bindings.py",
    "cutensor": Path("pycutensor") / "_bindings.py",
}


def generate(cudnn_include: Path, cutensor_include: Path, report: Report) -> dict[Path, str]:
    """Relative output path -> generated source."""
    outputs = {
        OUTPUTS["cudnn"]: generate_cudnn(cudnn_include, report),
        OUTPUTS["cutensor"]: generate_cutensor(cutensor_include, report),
        **{
            ext.output: generate_cutensor_extension(cutensor_include, ext, report)
            for ext in CUTENSOR_EXTENSIONS
        },
    }
    add_raw_stubs(outputs)
    return outputs


def write_outputs(outputs: dict[Path, str], out_dir: Path) -> None:
    for rel, text in outputs.items():
        target = out_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8", newline="\n")


def diff_outputs(outputs: dict[Path, str], out_dir: Path) -> Iterator[str]:
    """Unified diff lines between the checked-in files and freshly generated text."""
    for rel, text in outputs.items():
        target = out_dir / rel
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            yield from difflib.unified_diff(
                current.splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=f"{rel.as_posix()} (checked in)",
                tofile=f"{rel.as_posix()} (regenerated)",
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--cudnn-include", type=Path, help="cuDNN include dir (default: found with cuda.pathfinder)"
    )
    parser.add_argument(
        "--cutensor-include",
        type=Path,
        help="cuTENSOR include dir (default: found with cuda.pathfinder)",
    )
    parser.add_argument("--out-dir", type=Path, default=REPO_ROOT, help="repository root to write")
    parser.add_argument(
        "--check", action="store_true", help="do not write; exit 1 with a diff if files differ"
    )
    parser.add_argument("--quiet", action="store_true", help="print warnings only")
    parser.add_argument(
        "--cutensor-history",
        action="store_true",
        help=f"also (re)generate {HISTORY_OUTPUT.as_posix()} from the older cuTENSOR headers "
        f"pinned in {HISTORY_FILE.as_posix()} (downloads them once into {HISTORY_CACHE.as_posix()})",
    )
    args = parser.parse_args(argv)
    try:
        cudnn_include = args.cudnn_include or find_header_dir("cudnn")
        cutensor_include = args.cutensor_include or find_header_dir("cutensor")
        report = Report()
        outputs = generate(cudnn_include, cutensor_include, report)
        if args.cutensor_history:
            outputs[HISTORY_OUTPUT] = generate_cutensor_history(cutensor_include, REPO_ROOT, report)
    except GenerationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if not args.quiet:
        for line in report.lines:
            print(line, file=sys.stderr)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            write_outputs(outputs, Path(tmp))  # what a regeneration would write
            fresh = {rel: (Path(tmp) / rel).read_text(encoding="utf-8") for rel in outputs}
        diff = list(diff_outputs(fresh, args.out_dir))
        if diff:
            sys.stdout.writelines(diff)
            print(
                f"\nthe generated bindings are out of date; run `python {GENERATOR}`",
                file=sys.stderr,
            )
            return 1
        return 0
    write_outputs(outputs, args.out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
