"""The drop-in C layer shared by ``pycudnn.raw`` and ``pycutensor.raw``.

Each C function is exposed under its C name with C's arguments (``ctypes.byref`` for out-parameters);
functions that return a status raise the library's exception instead, and return ``None``.
"""

from __future__ import annotations

import ctypes
import functools
import re
import warnings
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

import numpy as np

from .ffi import FunctionSpec, NativeLibrary
from .resource import ClosedError, CResource
from .suggest import did_you_mean

__all__ = [
    "ArrayCounts",
    "CallCheck",
    "array_count_check",
    "called_after",
    "combine_checks",
    "integer_value",
    "make_checked",
    "no_such_name",
    "raw_module",
    "storage_bytes",
    "translate_argument_error",
]

# The generated ``ARRAY_COUNTS`` entries of one function: (array parameter, count parameters
# multiplied, offset added).
ArrayCounts = tuple[tuple[str, tuple[str, ...], int], ...]
# A library's checks of one function's arguments, bound once per function (``make_checked``).
CallCheck = Callable[[tuple[Any, ...]], None]


def raw_module(
    module: str,
    bindings: ModuleType,
    namespace: dict[str, Any],
    bind: Callable[[str], Callable[..., Any]],
    *,
    values: Callable[[str], Any] | None = None,
    value_names: Iterable[str] = (),
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` of the raw layer ``module`` (``pycudnn.raw``,
    ``pycutensor.raw``, ``raw_mp``, ``raw_mg``): every C function of the generated ``bindings``
    under its C name, and their enums and constants.

    A function is made on first access with ``bind(name)`` (which imports the loader, so that
    importing the raw layer loads nothing; :func:`make_checked`, :func:`called_after`) and kept in
    ``namespace``. ``values(name)`` makes the other names the layer offers (``value_names``: the
    compute descriptors, read from the library), kept in ``namespace`` too. ``__all__`` is the C
    functions; a name the layer lacks raises ``AttributeError`` with the nearest C names.
    """
    functions = bindings.FUNCTIONS
    extra = set(value_names)

    def __getattr__(name: str) -> Any:
        value: Any
        if name in functions:
            value = bind(name)
        elif name in extra and values is not None:
            value = values(name)
        elif not name.startswith("_") and hasattr(bindings, name):
            return getattr(bindings, name)
        else:
            raise no_such_name(module, name, __dir__)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        public = {n for n in vars(bindings) if not n.startswith("_")}
        return sorted(public | set(functions) | extra)

    return sorted(functions), __getattr__, __dir__


def called_after(
    before: Callable[[], None], checked: Callable[..., Any], name: str
) -> Callable[..., Any]:
    """C function ``name`` (the wrapper ``checked``) with ``before()`` run before each call."""

    def call(*args: Any) -> Any:
        before()
        return checked(*args)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = checked.__doc__
    return call


def no_such_name(module: str, name: str, names: Callable[[], list[str]]) -> AttributeError:
    """The ``AttributeError`` of a raw module for a name it lacks, with the nearest C names.

    Python's own suggestion gives up on a module this large (pycudnn.raw has over 1,300 names), so
    a misspelt ``cudnnCreat`` would get none. Names starting with ``_`` are probes by tools
    (``__wrapped__``, ``__path__``), answered without the search.
    """
    hint = ""
    if not name.startswith("_"):
        hint = did_you_mean(name, names())
    return AttributeError(f"module {module!r} has no attribute {name!r}{hint}")


def translate_argument_error(
    name: str, spec: FunctionSpec, exc: ctypes.ArgumentError, args: tuple[Any, ...] = ()
) -> Exception:
    """Turn ctypes' ``ArgumentError`` into an exception that names the C parameter.

    A closed object among the arguments, or one whose ``_as_parameter_`` refuses because what it
    depends on is closed (a cuTENSORMp handle's communicator), becomes ``ClosedError`` (ctypes
    reports the error raised by ``_as_parameter_`` only as text).
    """
    for index, arg in enumerate(args):
        if not isinstance(arg, CResource):
            continue
        param = spec.argnames[index] if index < len(spec.argnames) else f"argument {index + 1}"
        if arg.closed:
            return ClosedError(f"{name}: {param} is a closed {arg._kind}")
        try:
            arg._as_parameter_  # noqa: B018 - raises what ctypes reported as text
        except ClosedError as refused:
            return ClosedError(f"{name}: {param}: {refused}")
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


# --------------------------------------------------------------------------------------------------
# How much memory a ctypes argument reaches
# --------------------------------------------------------------------------------------------------

_STORAGE = (ctypes.Array, ctypes.Structure, ctypes.Union, ctypes._SimpleCData, ctypes._Pointer)
# Instances that hold a pointer value: passed for a pointer parameter, they are the address, not
# storage of their own.
_POINTER_VALUES = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_wchar_p, ctypes._Pointer)
_BYREF = type(ctypes.byref(ctypes.c_int()))  # CArgObject, which ctypes does not export
_BYREF_ADDRESS = re.compile(r"\((0x[0-9a-fA-F]+)\)>$")  # "<cparam 'P' (0x7f...)>"


def _block_end(obj: Any) -> int:
    """The address one past the memory ``obj`` may be read or written through: an element of a
    ctypes array (``perf[2]``) reaches the end of that array, as C indexes on from it; a field of a
    structure ends where the field does, since what follows it belongs to the other fields (the
    audit's repro wrote 7 ints past a 1-element array field into the next ones)."""
    while isinstance(obj._b_base_, ctypes.Array):
        obj = obj._b_base_
    return ctypes.addressof(obj) + ctypes.sizeof(obj)


def _reach(target: int | None, owners: Any, depth: int = 0) -> int | None:
    """Bytes from ``target`` to the end of the object among ``owners`` (a pointer's ``_objects``:
    an object, or dicts of them) whose memory holds it."""
    if target is None or depth > 4:
        return None
    if isinstance(owners, dict):
        for owner in owners.values():
            found = _reach(target, owner, depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(owners, _STORAGE) and not isinstance(owners, _POINTER_VALUES):
        start, end = ctypes.addressof(owners), _block_end(owners)
        if start <= target < end:
            return end - target
    return None


def storage_bytes(value: Any) -> int | None:
    """How many bytes of memory the pointer argument ``value`` reaches, or None when that cannot be
    told (then C's rule applies: the caller must pass enough).

    Known: a ctypes array, structure or scalar (its size, or to the end of the object it is part
    of); ``ctypes.byref(obj, offset)`` (``obj``'s size less the offset); a ctypes pointer to memory
    of a ctypes object it keeps alive (``ctypes.pointer(arr)``, ``ctypes.cast(arr, ...)``); a
    pointer from ``ndarray.ctypes.data_as`` into a contiguous array. Unknown: an int address,
    ``c_void_p``, ``None``, and pointers to memory ctypes did not allocate.
    """
    if type(value).__base__ is ctypes.Array and value._b_base_ is None:
        return ctypes.sizeof(value)  # the usual case: a whole array, (c_int * 8)()
    if isinstance(value, _POINTER_VALUES):
        if isinstance(value, ctypes._Pointer) and value:
            target = ctypes.cast(value, ctypes.c_void_p).value
            array = getattr(value, "_arr", None)  # numpy's data_as keeps its array here
            if isinstance(array, np.ndarray) and target is not None:
                if not (array.flags.c_contiguous or array.flags.f_contiguous):
                    return None
                start = array.ctypes.data
                return (
                    start + array.nbytes - target
                    if start <= target < start + array.nbytes
                    else None
                )
            return _reach(target, value._objects)
        return None
    if isinstance(value, _STORAGE):
        return _block_end(value) - ctypes.addressof(value)
    if isinstance(value, _BYREF):
        obj = getattr(value, "_obj", None)  # the object byref() was given
        if not isinstance(obj, _STORAGE):
            return None
        # byref(obj, offset) does not expose its offset; its repr shows the address it passes.
        match = _BYREF_ADDRESS.search(repr(value))
        start = int(match.group(1), 16) if match else ctypes.addressof(obj)
        return max(_block_end(obj) - start, 0)
    return None


def integer_value(value: Any) -> int | None:
    """The integer C receives for an argument passed as a Python int, a NumPy integer
    (``np.int64(8)``) or a ctypes integer (``ctypes.c_int64(8)``), all of which ctypes accepts
    for an integer parameter; None for anything else."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, ctypes._SimpleCData) and isinstance(value.value, int):
        return value.value  # ctypes.c_int(8) passed for an int parameter
    return None


def array_count_check(spec: FunctionSpec, counts: ArrayCounts, library: str) -> CallCheck | None:
    """The check that each array argument of ``spec`` can hold the elements its count argument
    asks the library to read or write (``counts``: the generated ``ARRAY_COUNTS`` entry); None
    when the function has no such arrays. Arrays whose size cannot be told pass unchecked."""
    # Arrays sharing a count (dimA and strideA share nbDims) are grouped so that it is read once.
    groups: dict[tuple[tuple[str, ...], int], list[tuple[int, int, str]]] = {}
    for array, factors, offset in counts:
        index = spec.argnames.index(array)
        argtype = spec.argtypes[index]
        if argtype in (ctypes.c_void_p, ctypes.c_char_p):
            element, unit = 1, "byte(s)"  # a byte count: sizeInBytes, max_size
        elif isinstance(argtype, type) and issubclass(argtype, ctypes._Pointer):
            element, unit = ctypes.sizeof(argtype._type_), f"{argtype._type_.__name__} element(s)"
        else:
            continue
        groups.setdefault((factors, offset), []).append((index, element, unit))
    if not groups:
        return None
    name, argnames = spec.name, spec.argnames
    rules = tuple(
        (
            tuple(argnames.index(f) for f in factors),
            offset,
            " * ".join(factors) + (f" - {-offset}" if offset < 0 else ""),
            tuple(arrays),
        )
        for (factors, offset), arrays in groups.items()
    )

    def check(args: tuple[Any, ...]) -> None:
        for factor_indices, offset, expression, arrays in rules:
            count = 1
            for i in factor_indices:
                value = args[i]
                if type(value) is not int:  # the usual case skips the general conversion
                    value = integer_value(value)
                    if value is None:
                        break  # ctypes refuses the argument itself
                count *= value
            else:
                count += offset
                if count <= 0:
                    continue
                for index, element, unit in arrays:
                    array = args[index]
                    if array is None or isinstance(array, int):
                        continue  # NULL, or an address: not sized
                    size = storage_bytes(array)
                    if size is not None and count > size // element:
                        raise ValueError(
                            f"{name}: argument {index + 1} ({argnames[index]}) holds "
                            f"{size // element} {unit} but {expression} = {count}; {library} "
                            "would read or write past its end. Pass a larger array or a smaller "
                            "count"
                        )

    return check


def enum_argument_check(
    spec: FunctionSpec,
    lookup: Callable[[str], Any],
    check_enum: Callable[[Any, int, str], None],
    skip: tuple[str, ...] = (),
) -> CallCheck | None:
    """The check of ``spec``'s enum-typed arguments (``spec.enum_args``): each int passed for one
    goes to ``check_enum(enum class, value, "function: parameter")``, which refuses a value newer
    than the loaded library. ``lookup`` gives a typedef's enum class (None: not checked); typedefs
    in ``skip`` are not checked. None when the function has no such arguments."""
    enums = tuple(
        (spec.argnames.index(param), enum_cls, f"{spec.name}: {param}")
        for param, typedef in spec.enum_args
        if typedef not in skip and (enum_cls := lookup(typedef)) is not None
    )
    if not enums:
        return None

    def check(args: tuple[Any, ...]) -> None:
        for index, enum_cls, context in enums:
            value = args[index]
            if type(value) is not int:  # np.int32(v) and ctypes.c_int(v) pass v to C as well
                value = integer_value(value)
                if value is None:
                    continue  # ctypes refuses the argument itself
            check_enum(enum_cls, value, context)

    return check


def combine_checks(checks: list[CallCheck | None]) -> CallCheck | None:
    """One check running ``checks`` in order (None entries dropped); None when none is left, so
    that ``make_checked`` skips the call altogether."""
    present = tuple(c for c in checks if c is not None)
    if len(present) <= 1:
        return present[0] if present else None

    def check(args: tuple[Any, ...]) -> None:
        for each in present:
            each(args)

    return check


def make_checked(
    lib: NativeLibrary,
    name: str,
    raise_status: Callable[[int, str], None],
    precheck: Callable[[FunctionSpec], CallCheck | None] | None = None,
) -> Callable[..., Any]:
    """A wrapper around C function ``name`` that checks its status with ``raise_status``.

    ``precheck(spec)``, when given, is asked once for the library-specific check of this function
    (enum values newer than the loaded library, element counts), or None when it has none; the
    check then runs on each call's arguments after the generic checks and before C. Asked once so
    that a function without such rules (cudnnBackendExecute) pays nothing for them per call.
    """
    spec = lib.spec(name)
    check = precheck(spec) if precheck is not None else None
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
        if check is not None:
            check(args)
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
