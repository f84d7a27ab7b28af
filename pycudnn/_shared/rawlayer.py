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

from .ffi import FunctionSpec, NativeLibrary
from .resource import ClosedError, CResource

__all__ = ["make_checked", "translate_argument_error"]


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


def make_checked(
    lib: NativeLibrary, name: str, raise_status: Callable[[int, str], None]
) -> Callable[..., Any]:
    """A wrapper around C function ``name`` that checks its status with ``raise_status``."""
    spec = lib.spec(name)
    state: dict[str, Any] = {}

    @functools.wraps(_doc_stub(spec))
    def call(*args: Any) -> Any:
        fn = state.get("fn")
        if fn is None:
            fn = lib.function(name)
            state["fn"] = fn
            if spec.deprecated:
                warnings.warn(
                    f"{name} is deprecated in {lib.display_name}", DeprecationWarning, stacklevel=2
                )
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
