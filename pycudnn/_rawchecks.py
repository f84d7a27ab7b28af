"""cuDNN-specific argument checks of the raw layer, run before C (see ``make_checked``'s precheck).

- Enum-typed parameters (``FunctionSpec.enum_args``): a value newer than the loaded cuDNN is
  refused with ``UnsupportedByLibraryError`` naming the enumerator and both versions.
- ``cudnnBackendSetAttribute`` / ``cudnnBackendGetAttribute``: the element count must be one the
  passed array can hold (cuDNN reads, writes or, with logging on, formats that many elements: a
  count of 2**63 - 1 with a NULL array hung the process), the attribute name and type must exist in
  the loaded cuDNN, and enum values inside the array are checked like enum arguments.
- Functions with an array whose length another argument gives (``_bindings.ARRAY_COUNTS``: the
  legacy ``Nd`` descriptor getters and setters, the algorithm searches' ``perfResults``, ...): the
  count must fit a ctypes array passed there (``array_count_check``).

``precheck(spec)`` binds these once per function; a function with none of them gets None.
"""

from __future__ import annotations

import ctypes
from typing import Any

from _nvbind.ffi import FunctionSpec
from _nvbind.rawlayer import (
    CallCheck,
    array_count_check,
    combine_checks,
    enum_argument_check,
    integer_value,
    storage_bytes,
)

from . import _bindings
from ._attrnames import ENUM_OF_TYPE
from ._versions import check_enum

__all__ = ["precheck"]

_ATTR_NAME_T: Any = _bindings.cudnnBackendAttributeName_t
_ATTR_TYPE_T: Any = _bindings.cudnnBackendAttributeType_t


def _enum_class(typedef: str) -> Any:
    return getattr(_bindings, typedef, None)


def _capacity(array: Any, element: Any) -> int | None:
    """How many ``element``s the ctypes object ``array`` holds; None when it cannot be told (a
    raw address)."""
    size = storage_bytes(array)
    return None if size is None else size // max(ctypes.sizeof(element), 1)


def _is_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, ctypes.c_void_p):
        return not value.value
    return isinstance(value, int) and value == 0


def _check_elements(
    function: str, attr_type: int, count: int, array: Any, *, count_param: str, array_param: str
) -> None:
    if count < 0:
        raise ValueError(f"{function}: {count_param} must be >= 0, got {count}")
    if count and _is_null(array):
        raise ValueError(
            f"{function}: {array_param} is NULL but {count_param} is {count}; pass an array "
            f"of at least {count} elements"
        )
    element = _bindings.ATTRIBUTE_TYPE_CTYPES.get(attr_type)
    if element is None or array is None:
        return
    capacity = _capacity(array, element)
    if capacity is not None and count > capacity:
        raise ValueError(
            f"{function}: {count_param} = {count} but {array_param} holds {capacity} "
            f"{_ATTR_TYPE_T(attr_type).name} element(s); cuDNN would read or write past its end"
        )


def _check_enum_elements(
    function: str, attr_name: int, attr_type: int, count: int, array: Any
) -> None:
    enum_cls = ENUM_OF_TYPE.get(attr_type)
    element: Any = _bindings.ATTRIBUTE_TYPE_CTYPES.get(attr_type)
    if enum_cls is None or element is None or count <= 0:
        return
    capacity = _capacity(array, element)
    if not capacity:
        return  # memory that cannot be told (an address, NULL): C's rule
    # The values are read where cuDNN reads them, whatever the ctypes form that points there: an
    # array, ctypes.byref(ctypes.c_int(v)) or ctypes.pointer(...) (only arrays were read before).
    try:
        address = ctypes.cast(array, ctypes.c_void_p).value
    except ctypes.ArgumentError:
        address = ctypes.addressof(array)  # a ctypes scalar or structure passed as is
    try:
        name = f"CUDNN_ATTR_{_ATTR_NAME_T(attr_name).name}"
    except ValueError:
        name = f"attribute {attr_name}"
    for value in (element * min(count, capacity)).from_address(address):
        check_enum(enum_cls, int(value), f"{function}: a value of {name}")


def _check_set_attribute(args: tuple[Any, ...]) -> None:
    # The name, type and count are checked in every integer form ctypes passes on (a NumPy or
    # ctypes integer as well as an int): a count given as np.int64 skipped the capacity check.
    _, attr_name, attr_type, count, array = args
    attr_name, attr_type, count = map(integer_value, (attr_name, attr_type, count))
    if count is not None and attr_type is not None:
        _check_elements(
            "cudnnBackendSetAttribute",
            attr_type,
            count,
            array,
            count_param="elementCount",
            array_param="arrayOfElements",
        )
        if attr_name is not None:
            _check_enum_elements("cudnnBackendSetAttribute", attr_name, attr_type, count, array)


def _check_get_attribute(args: tuple[Any, ...]) -> None:
    _, _, attr_type, requested, _, array = args
    attr_type, requested = integer_value(attr_type), integer_value(requested)
    if requested is not None and attr_type is not None:
        _check_elements(
            "cudnnBackendGetAttribute",
            attr_type,
            requested,
            array,
            count_param="requestedElementCount",
            array_param="arrayOfElements",
        )


def precheck(spec: FunctionSpec) -> CallCheck | None:
    """The cuDNN rules for calls of ``spec`` (arity already checked), or None when it has none;
    asked once per function by ``make_checked``."""
    checks = [
        array_count_check(spec, _bindings.ARRAY_COUNTS.get(spec.name, ()), "cuDNN"),
        # a status is asked about (cudnnGetErrorString), never acted on
        enum_argument_check(spec, _enum_class, check_enum, skip=("cudnnStatus_t",)),
        {
            "cudnnBackendSetAttribute": _check_set_attribute,
            "cudnnBackendGetAttribute": _check_get_attribute,
        }.get(spec.name),
    ]
    return combine_checks(checks)
