"""cuDNN backend descriptors: one typed Python object per ``cudnnBackendDescriptor_t``.

The backend (graph) API is untyped in C: ``cudnnBackendSetAttribute`` and
``cudnnBackendGetAttribute`` take an attribute name, an attribute *type*, an element count and a
``void*``. :class:`BackendDescriptor` makes it typed again from the table that the bindings
generator extracts from ``cudnn_graph.h`` (``_bindings.ATTRIBUTES``: element type and documented
count of every attribute) and the ctypes type of each attribute type
(``_bindings.ATTRIBUTE_TYPE_CTYPES``):

>>> t = BackendDescriptor("TENSOR")
>>> t.set("TENSOR_DIMENSIONS", [1, 32, 16, 16])
>>> t.set("TENSOR_DATA_TYPE", "HALF")
>>> ...
>>> t.finalize()
>>> t.get("TENSOR_DIMENSIONS")
[1, 32, 16, 16]

Python values are checked before C sees them; a wrong one is a ``TypeError`` that names the
attribute and the type it takes. Where the header documents no type, ``attr_type=`` must be given.
A descriptor keeps every descriptor set on it alive (children keep parents alive), refuses changes
once finalized, and refuses everything once closed.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable, Sequence
from typing import Any

from _nvbind.ffi import int64_arg
from _nvbind.resource import CResource
from _nvbind.shutdown import library_call

from ._attrnames import (
    _CHAR,
    _DESCRIPTOR,
    ENUM_OF_TYPE,
    AttrName,
    DescType,
    _attr_text,
    _documented_type,
    _spec,
    attribute_name,
    attribute_type,
    attribute_type_name,
    check_supported,
    descriptor_type,
    descriptor_type_name,
)
from ._attrs import (
    _CONVOLUTION_OPS,
    _DESC_KINDS,
    _GET_DESCRIPTOR_TYPES,
    _MAX_GET_COUNT,
    _MAX_GET_RETRIES,
    _OPS_ATTR,
    _SIZE_INSUFFICIENT,
    _decode,
    _encode,
)
from ._attrspec import (
    AttrSpec,
    cached_spec,
    check_integer_values,
    keep_spec,
    vectorized_tensor_attrs,
)
from ._descriptor_memory import DescriptorBatch, _checked_type, _create, _create_one, _raise_for
from ._descriptor_memory import destroy_descriptor as _destroy
from ._lib import LIB, last_error_string
from ._plan_json import check_json_attribute, check_plan_json
from .errors import CudnnError
from .handle import Handle

__all__ = [
    "ENUM_OF_TYPE",
    "BackendDescriptor",
    "attribute_name",
    "attribute_type",
    "attribute_type_name",
    "check_plan_json",
    "descriptor_type",
    "descriptor_type_name",
]


# Entered around each C call (see _nvbind.shutdown), made once: about 250 calls per plan.
_FINALIZE_CALL = library_call("cudnnBackendFinalize")
_SET_CALL = library_call("cudnnBackendSetAttribute")
_GET_CALL = library_call("cudnnBackendGetAttribute")


# --------------------------------------------------------------------------------------------------
# The descriptor
# --------------------------------------------------------------------------------------------------


#: Block-scale operations and their block-size attribute, which must be set before finalize.
_BLOCK_SCALE_KINDS = {
    "OPERATION_BLOCK_SCALE_QUANTIZE_DESCRIPTOR": "OPERATION_BLOCK_SCALE_QUANTIZE_BLOCK_SIZE",
    "OPERATION_BLOCK_SCALE_DEQUANTIZE_DESCRIPTOR": "OPERATION_BLOCK_SCALE_DEQUANTIZE_BLOCK_SIZE",
}
#: The descriptor types _check_finalizable has a rule for (by value; those the loaded headers name).
_FINALIZE_CHECKED = frozenset(
    int(DescType[k])
    for k in (
        *_BLOCK_SCALE_KINDS,
        "ENGINECFG_DESCRIPTOR",
        "EXECUTION_PLAN_DESCRIPTOR",
        "OPERATIONGRAPH_DESCRIPTOR",
    )
    if k in DescType.__members__
)


class BackendDescriptor(CResource):
    """One ``cudnnBackendDescriptor_t`` (``cudnnBackendCreateDescriptor``).

    ``kind`` is a descriptor type: ``"TENSOR"``, ``"OPERATION_CONVOLUTION_FORWARD"``,
    ``raw.CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR``, ... ``parents`` are objects this descriptor must
    keep alive (descriptors set as attributes are added automatically).
    """

    _kind = "backend descriptor"

    def __init__(self, kind: Any, *, parents: Iterable[Any] = ()) -> None:
        dtype = _checked_type(kind)
        (ptr,) = _create(dtype, 1)
        self._adopt(ptr, dtype, parents)

    @classmethod
    def _many(
        cls, kind: Any, n: int, parents: tuple[Any, ...] = ()
    ) -> tuple[list[BackendDescriptor], DescriptorBatch]:
        """``n`` new descriptors of ``kind``, created in one library call (see _create), owned
        by one batch: destroyed together once none is referenced (or by release_unused)."""
        dtype = _checked_type(kind)
        ptrs = _create(dtype, n)
        batch = DescriptorBatch(ptrs, parents)  # from here on, it destroys them
        return cls._members(ptrs, dtype, batch, parents), batch

    @classmethod
    def _in_batch(cls, kind: Any, batch: DescriptorBatch) -> BackendDescriptor:
        """A new descriptor of ``kind`` whose C object ``batch`` owns (one of a graph's lowering:
        no finalizer of its own, destroyed with the rest of the batch)."""
        dtype = _checked_type(kind)
        ptr = _create_one(dtype)
        batch.add(ptr)
        d = cls.__new__(cls)
        d._adopt(ptr, dtype, (batch,), owned=False)
        return d

    @classmethod
    def _members(
        cls, ptrs: list[int], dtype: Any, batch: DescriptorBatch, parents: tuple[Any, ...]
    ) -> list[BackendDescriptor]:
        """Descriptors for ``ptrs``, members of ``batch`` (which destroys their C objects)."""
        made: list[BackendDescriptor] = []
        refs = (*parents, batch)
        for ptr in ptrs:
            d = cls.__new__(cls)
            d._adopt(ptr, dtype, refs, owned=False)
            made.append(d)
        return made

    def _adopt(self, ptr: int, dtype: Any, parents: Iterable[Any], *, owned: bool = True) -> None:
        # The finalizer holds this list, so every descriptor appended to it outlives this one.
        refs: list[Any] = list(parents)
        self._refs = refs
        # The Handles among them, which finalize() checks are still open (see _check_finalizable).
        self._handles: list[Handle] = [p for p in refs if isinstance(p, Handle)] if refs else []
        # Not owned: a DescriptorBatch among the parents destroys the C object.
        super().__init__(ptr, _destroy if owned else None, parents=(refs,))
        self.descriptor_type: Any = dtype
        self._dtype = int(dtype)  # read by every set and finalize
        self._finalized = False
        # Attributes set through this object (int name -> descriptor types set, or None for a
        # non-descriptor value): what finalize() and get() need to know to keep cuDNN from
        # crashing (see _check_finalizable and _descriptor_kind_to_read).
        self._set_kinds: dict[int, tuple[int, ...] | None] = {}
        # A TENSOR's dims, vector count and vectorized dimension as set (by attribute key), for
        # vectorized_tensor_attrs; None until one of them is set.
        self._vector_attrs: dict[int, tuple[int, ...]] | None = None

    # -- state -----------------------------------------------------------------------------
    @property
    def type_name(self) -> str:
        """The C name of this descriptor's type, e.g. ``CUDNN_BACKEND_TENSOR_DESCRIPTOR``."""
        return descriptor_type_name(self.descriptor_type)

    @property
    def is_finalized(self) -> bool:
        """True once ``cudnnBackendFinalize`` succeeded."""
        return self._finalized

    def keep_alive(self, obj: Any) -> None:
        """Hold a strong reference to ``obj`` for as long as this descriptor exists."""
        self._refs.append(obj)
        if isinstance(obj, Handle):
            self._handles.append(obj)

    def finalize(self) -> None:
        """``cudnnBackendFinalize``: validate and freeze the attributes."""
        if self._ptr is None:
            self._check_open()  # raises
        if self._finalized:
            return
        if self._handles or self._dtype in _FINALIZE_CHECKED:
            self._check_finalizable()
        status = _FINALIZE_CALL.run(LIB.function("cudnnBackendFinalize"), self._c_ptr)
        if status:
            _raise_for(status, "cudnnBackendFinalize", f"finalizing a {self.type_name}")
        self._finalized = True

    def _has(self, attr_name: str) -> bool:
        member = AttrName.__members__.get(attr_name)
        return member is not None and int(member) in self._set_kinds

    def _check_finalizable(self) -> None:
        """Refuse the finalizations that crash cuDNN instead of failing (observed, cuDNN 9.28):
        an ENGINECFG without its ENGINE, an EXECUTION_PLAN without an ENGINE_CONFIG (even with
        only optional attributes set), a deserialized EXECUTION_PLAN (JSON set) with neither
        DEVICEPROP nor a handle, a handle attribute whose Handle was closed since, a block-scale
        (de)quantize without its BLOCK_SIZE (SIGFPE), and an OPERATIONGRAPH mixing matmuls and
        convolutions (its heuristics crash)."""

        missing = ""
        for ref in self._handles:
            if ref.closed:
                # set as a HANDLE attribute, then closed: cuDNN would dereference it
                missing = "a pycudnn.Handle set on it has been closed"
                break
        else:
            # Most descriptors of a plan are of kinds without a rule of their own.
            if self._dtype in _FINALIZE_CHECKED:
                missing = self._missing_attributes()
        if missing:
            raise ValueError(
                f"cannot finalize this {self.type_name}: {missing} (cuDNN crashes the process "
                "finalizing it like this instead of returning an error)"
            )

    def _missing_attributes(self) -> str:
        """What this descriptor lacks that its kind needs set before cudnnBackendFinalize ("" if
        nothing); raises for an OPERATIONGRAPH that mixes matmuls and convolutions."""
        missing = ""
        kind = self.descriptor_type.name
        if kind in _BLOCK_SCALE_KINDS and not self._has(_BLOCK_SCALE_KINDS[kind]):
            # BLOCK_SIZE is required; unset, cuDNN divides by its default 0 (SIGFPE, 9.28)
            missing = f"CUDNN_ATTR_{_BLOCK_SCALE_KINDS[kind]} is not set"
        elif kind == "ENGINECFG_DESCRIPTOR" and not self._has("ENGINECFG_ENGINE"):
            missing = "CUDNN_ATTR_ENGINECFG_ENGINE is not set"
        elif kind == "EXECUTION_PLAN_DESCRIPTOR":
            if self._has("EXECUTION_PLAN_JSON_REPRESENTATION"):
                if not (
                    self._has("EXECUTION_PLAN_DEVICEPROP") or self._has("EXECUTION_PLAN_HANDLE")
                ):
                    missing = (
                        "CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION is set but neither "
                        "CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP nor a handle is"
                    )
            elif not self._has("EXECUTION_PLAN_ENGINE_CONFIG"):
                missing = (
                    "neither CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG nor "
                    "CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION is set"
                )
        elif kind == "OPERATIONGRAPH_DESCRIPTOR":
            names = {
                DescType(k).name
                for k in self._set_kinds.get(_OPS_ATTR, None) or ()
                if k in _DESC_KINDS
            }
            if "OPERATION_MATMUL_DESCRIPTOR" in names and not names.isdisjoint(_CONVOLUTION_OPS):
                # No engine runs such a graph, and heuristics crash on some (cuDNN 9.28).
                raise ValueError(
                    f"cannot finalize this {self.type_name}: it mixes OPERATION_MATMUL with "
                    f"{', '.join(sorted(names & _CONVOLUTION_OPS))}; cuDNN has no engine for "
                    "that and its heuristics crash the process on such graphs"
                )
        return missing

    # -- set ---------------------------------------------------------------------------------
    def set(self, attr: Any, value: Any, *, attr_type: Any = None) -> None:
        """``cudnnBackendSetAttribute`` with the element type from the header documentation.

        ``value`` is a scalar or a sequence of the attribute's element type: ints, floats, bools,
        enum members (or their names), pointer ints, finalized descriptors, a string (CHAR), or
        ``(numerator, denominator)`` pairs (FRACTION). ``attr_type`` overrides the documented type
        (needed where the header documents none, and for FLOAT-or-DOUBLE attributes).
        """
        if self._ptr is None:
            self._check_open()  # raises
        spec = cached_spec(attr, attr_type, self._dtype)[1]  # (_spec's first step, inline)
        if spec is None:
            spec = self._spec(attr, attr_type, reading=False)
        name, atype = spec.name, spec.atype
        if self._finalized:
            raise ValueError(
                f"cannot set {_attr_text(name)}: this {self.type_name} is finalized and cuDNN "
                "freezes attributes at cudnnBackendFinalize"
            )
        keep: Sequence[Any]
        encoded = spec.encode(value, BackendDescriptor)  # common values, already checked
        if encoded is None:
            arr, count, keep = _encode(name, atype, value, BackendDescriptor)
            if spec.kind == "int":
                check_integer_values(name, [int(arr[i]) for i in range(count)])
            if atype == _CHAR:
                check_json_attribute(name, value)
        else:
            arr, count, keep = encoded
        vector_attrs = vectorized_tensor_attrs(
            self._dtype, spec.key, arr, count, self._vector_attrs
        )
        # Each argument as C takes it (two enums as ints), so ctypes converts none of them.
        fn = LIB.unconverted_function("cudnnBackendSetAttribute")
        status = _SET_CALL.run(fn, self._c_ptr, spec.key, atype, int64_arg(count), arr)
        if status:
            _raise_for(
                status,
                "cudnnBackendSetAttribute",
                f"setting {_attr_text(name)} ({attribute_type_name(atype)} x {count}) on a "
                f"{self.type_name}",
            )
        if atype == _DESCRIPTOR:
            self._refs.extend(keep)
            self._set_kinds[spec.key] = tuple([d._dtype for d in keep])
            return
        if keep:  # HANDLE values: Handles
            self._refs.extend(keep)
            self._handles.extend(k for k in keep if isinstance(k, Handle))
        if vector_attrs is not None:
            self._vector_attrs = vector_attrs
        self._set_kinds[spec.key] = None

    def _spec(self, attr: Any, attr_type: Any, *, reading: bool) -> AttrSpec:
        """The :class:`~pycudnn._attrspec.AttrSpec` of ``attr`` (with ``attr_type``) on this
        descriptor: kept from an earlier call, or checked now as set() and get() always did
        (name, type, owner, version; the same errors in the same order) and then kept."""
        key, spec = cached_spec(attr, attr_type, self._dtype)
        if spec is not None:
            return spec
        name = attribute_name(attr)
        if reading:
            atype = self._get_type(name, attr_type)
            self._check_owner(name)
            return keep_spec(key, name, atype)
        if attr_type is None:
            documented = _documented_type(name)
            if documented is None:
                raise TypeError(
                    f"{_attr_text(name)}: cudnn_graph.h documents no attribute type for it, so "
                    "pass attr_type= explicitly (e.g. attr_type='INT64')"
                )
            atype = documented
        else:
            atype = int(attribute_type(attr_type))
        self._check_owner(name)
        check_supported(name, atype)
        return keep_spec(key, name, atype)

    def _check_owner(self, name: Any) -> None:
        spec = _spec(name)
        owner = None if spec is None else spec.descriptor_type
        if owner is not None and int(owner) != int(self.descriptor_type):
            raise ValueError(
                f"{_attr_text(name)} is an attribute of {descriptor_type_name(owner)}, not of "
                f"this {self.type_name}"
            )

    def _check_readable(self, name: Any) -> None:
        # The owner is checked with the rest of the attribute's facts (_spec).
        if not self._finalized:
            raise ValueError(
                f"cannot read {_attr_text(name)}: this {self.type_name} is not finalized "
                "(cudnnBackendGetAttribute reads finalized descriptors; call finalize() first)"
            )

    # -- get ---------------------------------------------------------------------------------
    def _get_raw(self, name: Any, atype: int, requested: int, array: Any) -> int:
        count = ctypes.c_int64(0)
        if self._ptr is None:
            self._check_open()  # raises
        fn = LIB.unconverted_function("cudnnBackendGetAttribute")  # the arguments as C takes them
        status = _GET_CALL.run(
            fn, self._c_ptr, int(name), atype, int64_arg(requested), ctypes.byref(count), array
        )
        if not status:
            return int(count.value)
        if status == _SIZE_INSUFFICIENT:  # a concurrent change grew it: the caller retries
            last_error_string()
            return -max(int(count.value), requested + 1)
        _raise_for(
            status,
            "cudnnBackendGetAttribute",
            f"reading {_attr_text(name)} ({attribute_type_name(atype)}) from a {self.type_name}",
        )
        return 0  # not reached: a non-zero status raised

    def element_count(self, attr: Any, *, attr_type: Any = None) -> int:
        """The number of elements available (the count query: ``requestedElementCount=0``)."""
        self._check_open()
        spec = self._spec(attr, attr_type, reading=True)
        name, atype = spec.name, spec.atype
        self._check_readable(name)
        if atype == _DESCRIPTOR:
            self._descriptor_kind_to_read(name, None)  # a count query can crash as well
        return max(self._get_raw(name, atype, 0, None), 0)

    def _descriptor_kind_to_read(self, name: Any, requested: Any) -> Any:
        """The descriptor type to read a descriptor-valued attribute into, or an error.

        cuDNN writes into descriptors the caller creates, without checking their kind for every
        attribute, and crashes reading some attributes that were never set (TENSOR_RAGGED_OFFSET_DESC
        counts 1 and then segfaults). So reads are allowed for the attributes cuDNN fills itself
        (heuristic results, engine configs, engines, knobs) and for attributes set through this
        object, always into descriptors of the kind the attribute holds.
        """
        known = _GET_DESCRIPTOR_TYPES.get(name.name)
        if known is not None and requested is None:
            return DescType[known]  # the kind cuDNN fills it with (the common read)
        set_kinds = self._set_kinds.get(int(name))
        if known is not None:
            allowed = {int(DescType[known])}
        elif set_kinds:
            allowed = set(set_kinds)
        else:
            raise ValueError(
                f"cannot read {_attr_text(name)} from this {self.type_name}: it was not set through "
                "this object and is not an attribute cuDNN fills in, so the kind of descriptor it "
                "holds (if any) is unknown here, and cuDNN crashes reading it into the wrong kind "
                "or reading it unset"
            )
        if requested is None:
            if len(allowed) != 1:
                raise ValueError(
                    f"cannot read {_attr_text(name)}: it holds descriptors of several kinds "
                    f"({', '.join(sorted(descriptor_type_name(k) for k in allowed))}), and cuDNN "
                    "reads them into descriptors of one kind"
                )
            return DescType(next(iter(allowed)))
        kind = descriptor_type(requested)
        if int(kind) not in allowed or len(allowed) != 1:
            raise TypeError(
                f"{_attr_text(name)} holds "
                + " and ".join(sorted(descriptor_type_name(k) for k in allowed))
                + f" descriptors; reading it into {descriptor_type_name(kind)} descriptors would "
                "crash cuDNN"
            )
        return kind

    def _get_type(self, name: Any, attr_type: Any) -> int:
        if attr_type is not None:
            atype = int(attribute_type(attr_type))
        else:
            documented = _documented_type(name)
            if documented is None:
                raise TypeError(
                    f"{_attr_text(name)}: cudnn_graph.h documents no attribute type for it, so "
                    "pass attr_type= explicitly"
                )
            atype = documented
        check_supported(name, atype)
        return atype

    def get(
        self,
        attr: Any,
        *,
        attr_type: Any = None,
        descriptor_type: Any = None,
        many: bool | None = None,
        count: int | None = None,
    ) -> Any:
        """``cudnnBackendGetAttribute``: a count query, then the read.

        Returns a scalar for single-element attributes (``many=False``, the default where the
        header documents one element), else a list, using the count cuDNN returns from the read
        (it can be smaller than the count query). CHAR attributes are returned as ``str``.
        Descriptor-valued attributes are read into descriptors created here, of the kind the
        attribute holds (``descriptor_type``, if given, must be that kind); only attributes that
        cuDNN fills in (engine/heuristic/plan attributes) or that were set through this object can
        be read, because cuDNN crashes on the others. Surplus descriptors are closed.
        ``count`` skips the count query and asks for up to that many elements (some attributes,
        such as ``ENGINECFG_KNOB_CHOICES``, answer a count query with 0).
        """
        self._check_open()
        spec = self._spec(attr, attr_type, reading=True)
        name, atype = spec.name, spec.atype
        self._check_readable(name)
        if count is not None:
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"count must be a positive int, got {count!r}")
            if count > _MAX_GET_COUNT:
                raise ValueError(f"count must be at most {_MAX_GET_COUNT}, got {count}")
            many = True
        if atype == _CHAR:
            return self._get_text(name)
        if atype == _DESCRIPTOR:
            kind = self._descriptor_kind_to_read(name, descriptor_type)
            single = spec.single if many is None else not many
            descs = self._get_descriptors(name, kind, single, count)
            if single:
                return descs[0] if descs else None
            return descs
        ctype: Any = spec.ctype
        if spec.single if many is None else not many:
            arr = (ctype * 1)()
            n = self._get_raw(name, atype, 1, arr)
            return _decode(atype, arr, 1)[0] if n > 0 else None
        values: list[Any] = []
        available = count if count is not None else self._get_raw(name, atype, 0, None)
        for _ in range(_MAX_GET_RETRIES):
            size = max(abs(available), 0)
            if size == 0:
                return []
            arr = (ctype * size)()
            got = self._get_raw(name, atype, size, arr)
            if got >= 0:
                values = _decode(atype, arr, min(got, size))
                break
            available = got  # grew between the two calls: ask again
        return values

    def _get_text(self, name: Any) -> str:
        available = self._get_raw(name, _CHAR, 0, None)
        for _ in range(_MAX_GET_RETRIES):
            size = abs(available)
            if size == 0:
                return ""
            buf = ctypes.create_string_buffer(size + 1)  # the count may or may not include the NUL
            got = self._get_raw(name, _CHAR, size, buf)
            if got >= 0:
                return buf.raw[: min(got, size)].rstrip(b"\0").decode("utf-8", "replace")
            available = got
        raise CudnnError(
            _SIZE_INSUFFICIENT, "cudnnBackendGetAttribute", f"{_attr_text(name)} kept growing"
        )

    def _get_descriptors(
        self, name: Any, kind: Any, single: bool, count: int | None = None
    ) -> list[Any]:
        if count is not None:
            available = count
        elif single:
            available = 1
        else:
            available = self._get_raw(name, _DESCRIPTOR, 0, None)
        for _ in range(_MAX_GET_RETRIES):
            size = abs(available)
            if size == 0:
                return []
            # cuDNN fills descriptors the caller created; they stay tied to this one. Unused,
            # they go with their batch: when it is dropped, or at once (release_unused). Only
            # those filled get a Python object (a convolution's count query promises 26 ENGINECFG
            # and cuDNN fills 12, say).
            dtype = _checked_type(kind)
            ptrs = _create(dtype, size)
            batch = DescriptorBatch(ptrs, (self,))  # from here on, it destroys them
            got = self._get_raw(name, _DESCRIPTOR, size, (ctypes.c_void_p * size)(*ptrs))
            if got >= 0:
                n = min(got, size)
                if n < size:  # the count query promised more than was read
                    batch.release_unused(ptrs[n:])
                kept = BackendDescriptor._members(ptrs[:n], dtype, batch, (self,))
                for d in kept:
                    d._finalized = True  # cuDNN hands back finalized objects
                return kept
            available = got
        return []

    def __reduce_ex__(self, protocol: Any) -> Any:
        # copy.copy() would make a second Python owner of the same C pointer: once one copy is
        # closed, the other one hands a destroyed descriptor to cuDNN (observed: segfault). The
        # same rule refuses deepcopy and pickling, which cannot duplicate a C object either.
        raise TypeError(
            f"a {type(self).__name__} owns a cuDNN object and cannot be copied or pickled; "
            "build a new one"
        )

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("finalized" if self._finalized else "not finalized")
        return f"<pycudnn.backend.BackendDescriptor {self.descriptor_type.name} {state}>"
