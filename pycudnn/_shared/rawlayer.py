"""The drop-in C layer shared by ``pycudnn.raw`` and ``pycutensor.raw``.

Each C function is exposed under its C name with C's arguments (``ctypes.byref`` for out-parameters);
functions that return a status raise the library's exception instead, and return ``None``.
"""

from __future__ import annotations

import ctypes
import functools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .ffi import FunctionSpec, NativeLibrary
from .resource import ClosedError, CResource

__all__ = ["make_checked", "no_such_name", "translate_argument_error"]


def no_such_name(module: str, name: str, names: Callable[[], list[str]]) -> AttributeError:
    """The ``AttributeError`` of a raw module for a name it lacks, with the nearest C names.

    Python's own suggestion gives up on a module this large (pycudnn.raw has over 1,300 names), so
    a misspelt ``cudnnCreat`` would get none. Names starting with ``_`` are probes by tools
    (``__wrapped__``, ``__path__``), answered without the search.
    """
    hint = ""
    if not name.startswith("_"):
        from .suggest import did_you_mean

        hint = did_you_mean(name, names())
    return AttributeError(f"module {module!r} has no attribute {name!r}{hint}")


def translate_argument_error(
    name: str, spec: FunctionSpec, exc: ctypes.ArgumentError, args: tuple[Any, ...] = ()
) -> Exception:
    """Turn ctypes' ``ArgumentError`` into an exception that names the C parameter.

    A closed object among the arguments becomes ``ClosedError`` (ctypes reports the error raised by
    its ``_as_parameter_`` only as text).
    """
    for index, arg in enumerate(args):
        if isinstance(arg, CResource) and arg.closed:
            param = spec.argnames[index] if index < len(spec.argnames) else f"argument {index + 1}"
            return ClosedError(f"{name}: {param} is a closed {arg._kind}")
    text = str(exc)
    # ctypes says "argument 3: TypeError: wrong type"; name the parameter too.
    index_text = text.split(":", 1)[0].removeprefix("argument ").strip()
    param = ""
    if index_text.isdigit() and 0 < int(index_text) <= len(spec.argnames):
        param = f" ({spec.argnames[int(index_text) - 1]})"
    return TypeError(f"{name}: {text.split(':', 1)[0]}{param}: {text.split(':', 1)[-1].strip()}")


def _integer_bounds(ctype: Any) -> tuple[int, int] | None:
    """``(lowest, highest)`` value of an integer or pointer ctypes type; None for other types."""
    if ctype is ctypes.c_void_p:
        return 0, 2 ** (8 * ctypes.sizeof(ctypes.c_void_p)) - 1
    code = getattr(ctype, "_type_", None)
    if not (isinstance(ctype, type) and issubclass(ctype, ctypes._SimpleCData)):
        return None
    if not isinstance(code, str) or code not in "bBhHiIlLqQ":
        return None
    bits = 8 * ctypes.sizeof(ctype)
    if code.isupper():  # unsigned
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def _check_arguments(
    name: str, spec: FunctionSpec, bounds: tuple[tuple[int, int, int], ...], args: tuple[Any, ...]
) -> None:
    # ctypes converts a Python int to a C integer or pointer by masking it to the C width: 2**32 + 4
    # becomes 4 for an ``int`` and 2**64 a NULL pointer, silently. Refuse what does not fit instead.
    for index, low, high in bounds:
        value = args[index]
        if isinstance(value, (str, bytes, bool)) and spec.argtypes[index] is ctypes.c_void_p:
            # ctypes passes the address of the str's (or bytes') own immutable buffer for a void*:
            # a descriptor or handle parameter given a string made cuDNN write into Python's heap.
            # A bool would become the address 0x1.
            raise TypeError(
                f"{name}: argument {index + 1} ({spec.argnames[index]}) is a pointer (void *); "
                f"got {type(value).__name__} {value!r:.40}. Pass an int address, a ctypes object "
                "(ctypes.byref, an array, ctypes.create_string_buffer) or a pycudnn object"
            )
        if isinstance(value, (int, np.integer)) and not low <= value <= high:
            raise ValueError(
                f"{name}: argument {index + 1} ({spec.argnames[index]}) = {int(value)} does not "
                f"fit its C type {spec.argtypes[index].__name__} (range {low} to {high})"
            )


def _is_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (ctypes._Pointer, ctypes.c_void_p)):
        return not value  # a NULL pointer instance
    return isinstance(value, (int, np.integer)) and int(value) == 0


def make_checked(
    lib: NativeLibrary,
    name: str,
    raise_status: Callable[[int, str], None],
    precheck: Callable[[FunctionSpec, tuple[Any, ...]], None] | None = None,
) -> Callable[..., Any]:
    """A wrapper around C function ``name`` that checks its status with ``raise_status``.

    ``precheck(spec, args)``, when given, runs after the generic argument checks and before C: the
    library-specific rules (enum values newer than the loaded library, element counts).
    """
    spec = lib.spec(name)
    state: dict[str, Any] = {}
    nargs = len(spec.argtypes)
    bounds = tuple(
        (i, *b) for i, b in enumerate(map(_integer_bounds, spec.argtypes)) if b is not None
    )
    nonnull = tuple(spec.argnames.index(p) for p in spec.nonnull)
    # char* parameters the library writes into (cudnnGetLastErrorString's message)
    written_strings = tuple(i for i in nonnull if spec.argtypes[i] is ctypes.c_char_p)

    @functools.wraps(_doc_stub(spec))
    def call(*args: Any) -> Any:
        # The arguments are checked first, so that a wrong call is reported as such whatever the
        # loaded library; then the function is resolved (refused when newer than the library).
        if len(args) != nargs:
            # ctypes passes surplus arguments on to a cdecl function without complaint.
            raise TypeError(
                f"{name}() takes {nargs} argument{'s' if nargs != 1 else ''} "
                f"({', '.join(spec.argnames)}), got {len(args)}"
            )
        _check_arguments(name, spec, bounds, args)
        for index, arg in enumerate(args):
            if isinstance(arg, CResource) and arg.closed:
                raise ClosedError(f"{name}: {spec.argnames[index]} is a closed {arg._kind}")
        for index in nonnull:
            if _is_null(args[index]):
                # The library writes its result there, or reads it, some functions unchecked.
                raise ValueError(
                    f"{name}: argument {index + 1} ({spec.argnames[index]}) must not be NULL "
                    "(the library reads or writes through it without a check); pass "
                    "ctypes.byref(...), an array or a live descriptor"
                )
        for index in written_strings:
            if isinstance(args[index], (bytes, str)):
                # ctypes passes the immutable object's own buffer: the library would write its
                # text into Python's heap, past the end of a short one (a crash, found by the
                # reliability campaign with b"x" and a large max_size).
                raise TypeError(
                    f"{name}: argument {index + 1} ({spec.argnames[index]}) is a buffer the "
                    f"library writes into, not a {type(args[index]).__name__} (immutable); pass "
                    "ctypes.create_string_buffer(size)"
                )
        fn = state.get("fn")
        if fn is None:
            fn = lib.function(name)
            state["fn"] = fn
            if spec.deprecated:
                warnings.warn(
                    f"{name} is deprecated in {lib.display_name}", DeprecationWarning, stacklevel=2
                )
        if precheck is not None:
            precheck(spec, args)
        try:
            result = fn(*args)
        except ctypes.ArgumentError as exc:
            raise translate_argument_error(name, spec, exc, args) from None
        if spec.returns_status:
            if result:
                raise_status(result, name)
            return None
        return result

    return call


def _doc_stub(spec: FunctionSpec) -> Callable[..., Any]:
    def stub() -> None: ...

    stub.__name__ = stub.__qualname__ = spec.name
    params = ", ".join(spec.argnames)
    since = ".".join(map(str, spec.since)) if spec.since else "?"
    notes = " Deprecated." if spec.deprecated else ""
    stub.__doc__ = f"{spec.name}({params}) from {spec.header}; since {since}.{notes}"
    return stub
