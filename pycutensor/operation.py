"""The operation descriptor: :class:`Operation` owns one ``cutensorOperationDescriptor_t``.

An operation is built from :class:`~pycutensor.TensorDescriptor` objects and mode labels, checked
in Python first (:func:`pycutensor.checks.check_operation`), then created with the kind's
``cutensorCreate*`` call. It knows what its execute takes (operands, scalars, workspace) and checks
arrays against the layouts it was described with. The kinds themselves (:class:`Contraction`,
:class:`Reduction`, ...) and planning live above this module, in :mod:`pycutensor.operations` and
:mod:`pycutensor.plan`: nothing here imports them.
"""

from __future__ import annotations

import ctypes
from collections.abc import Hashable, Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from _nvbind.arrays import array_view
from _nvbind.resource import CResource

from . import _bindings
from ._lib import LIB, check, clear_last_error, compute_descriptor
from .checks import check_device_view, check_laid_out_like, check_operation, coerce_scalar, span
from .handle import Handle
from .tables import KINDS, MIN_COMPUTE_CAPABILITY, operator_name
from .tensor import ModeMap, TensorDescriptor, TensorSpec, check_pointer, dtype_of_data_type

__all__ = ["Operand", "Operation"]


class Operand(NamedTuple):
    """One operand of an operation, as its execute sees it."""

    name: str  # "A", "B", "C", "D", "E"
    descriptor: TensorDescriptor
    labels: tuple[Hashable, ...]
    mode_ids: tuple[int, ...]
    shape: tuple[int, ...]  # the array layout the execute expects
    strides: tuple[int, ...]

    @property
    def spec(self) -> TensorSpec:
        """The operand's :class:`~pycutensor.tensor.TensorSpec` (extents, strides, dtype,
        alignment)."""
        return self.descriptor.spec


def _destroy_operation(ptr: int) -> None:
    LIB.function("cutensorDestroyOperationDescriptor")(ptr)


class Operation(CResource):
    """A ``cutensorOperationDescriptor_t``; see the subclasses for each kind.

    Keeps its handle and tensor descriptors alive. A :class:`~pycutensor.plan.Plan` plans it and
    executes it (the kinds in :mod:`pycutensor.operations` add ``plan()`` for that).
    """

    _kind = "cuTENSOR operation descriptor"
    kind: ClassVar[str] = ""
    # CUTENSOR_OPERATION_DESCRIPTOR_TAG: the one set through ``tag`` (what plans made without a
    # tag use) and the one the C descriptor carries now; cuTENSOR's default for both is 0.
    _own_tag: int = 0
    _c_tag: int = 0

    def _create(
        self,
        handle: Handle | None,
        tensors: Sequence[tuple[TensorDescriptor, Any]],
        *,
        unary: Sequence[Any] = (),
        binary: Sequence[Any] = (),
        compute_type: Any = None,
        layouts: Sequence[tuple[tuple[int, ...], tuple[int, ...]]] | None = None,
    ) -> None:
        info = KINDS[self.kind]
        descriptors = [d for d, _ in tensors]
        for d, name in zip(descriptors, info.tensors, strict=False):
            if not isinstance(d, TensorDescriptor):
                raise TypeError(
                    f"{name} must be a pycutensor.TensorDescriptor, not {type(d).__name__} "
                    "(the functions in pycutensor.operations take arrays)"
                )
            d._check_open()
        labels, unary_ops, binary_ops, compute = check_operation(
            self.kind,
            [d.spec for d in descriptors],
            [m for _, m in tensors],
            unary=unary,
            binary=binary,
            compute_type=compute_type,
        )
        if handle is None:
            handle = descriptors[0].handle
        if not isinstance(handle, Handle):
            raise TypeError(
                f"handle must be a pycutensor.Handle or None, not {type(handle).__name__}"
            )
        handle._check_open()
        for d, name in zip(descriptors, info.tensors, strict=False):
            if d.handle.device_id != handle.device_id:
                raise ValueError(
                    f"{name} was described on device {d.handle.device_id}, the handle is for "
                    f"device {handle.device_id}"
                )
        need = MIN_COMPUTE_CAPABILITY.get(compute)
        if need is not None and handle.compute_capability < need:
            raise ValueError(
                f"compute type {compute} needs compute capability {need[0]}.{need[1]} or newer "
                f"(cuTENSOR's table), device {handle.device_id} has "
                f"{handle.compute_capability[0]}.{handle.compute_capability[1]}"
            )
        mode_map = ModeMap()
        ids = [mode_map.ids(t) for t in labels]
        arrays = [(ctypes.c_int32 * len(t))(*t) for t in ids]
        identity = int(_bindings.CUTENSOR_OP_IDENTITY)
        compute_ptr = compute_descriptor(compute)
        ds, m, u, b = descriptors, arrays, unary_ops, binary_ops
        out = ctypes.c_void_p()
        ref = ctypes.byref(out)
        # The output (D, or E) is passed with the last input's descriptor and modes: cuTENSOR
        # requires descD == descC (modeD == modeC) "for now".
        # fmt: off
        if self.kind == "contraction":
            args: tuple[Any, ...] = (handle, ref, ds[0], m[0], u[0], ds[1], m[1], u[1],
                                     ds[2], m[2], identity, ds[2], m[2], compute_ptr)
        elif self.kind == "contraction_trinary":
            args = (handle, ref, ds[0], m[0], u[0], ds[1], m[1], u[1], ds[2], m[2], u[2],
                    ds[3], m[3], u[3], ds[3], m[3], compute_ptr)
        elif self.kind in ("reduction", "elementwise_binary"):  # the same argument order
            args = (handle, ref, ds[0], m[0], u[0], ds[1], m[1], u[1], ds[1], m[1], b[0],
                    compute_ptr)
        elif self.kind == "elementwise_trinary":
            args = (handle, ref, ds[0], m[0], u[0], ds[1], m[1], u[1], ds[2], m[2], u[2],
                    ds[2], m[2], b[0], b[1], compute_ptr)
        else:  # permutation
            args = (handle, ref, ds[0], m[0], u[0], ds[1], m[1], compute_ptr)
        # fmt: on
        previous = handle.activate()
        try:
            clear_last_error()
            status = LIB.function(info.create)(*args)
        finally:
            handle.restore(previous)
        check(status, info.create)
        super().__init__(int(out.value or 0), _destroy_operation, parents=(handle, *descriptors))
        self.handle = handle
        self.compute_type: str = compute
        self.mode_map = mode_map
        self._mode_arrays = arrays
        if layouts is None:
            layouts = [(desc.extents, desc.strides) for desc in descriptors]
        operands = [
            Operand(name, desc, lab, i, tuple(lay[0]), tuple(lay[1]))
            for name, desc, lab, i, lay in zip(
                info.tensors, descriptors, labels, ids, layouts, strict=False
            )
        ]
        if len(info.operands) > len(info.tensors):  # the output shares the last descriptor
            operands.append(operands[-1]._replace(name=info.operands[-1]))
        self.operands: tuple[Operand, ...] = tuple(operands)
        self.unary_operators = tuple(operator_name(v) for v in unary_ops)
        self.binary_operators = tuple(operator_name(v) for v in binary_ops)
        self._scalar_type: np.dtype | None = None

    # -- what it is --------------------------------------------------------------------------
    @property
    def operand_names(self) -> tuple[str, ...]:
        """The arrays an execute takes, in order (the output last)."""
        return KINDS[self.kind].operands

    @property
    def scalar_names(self) -> tuple[str, ...]:
        """Names of the scalars ``execute`` takes (alpha, beta, gamma, as the kind has)."""
        return KINDS[self.kind].scalars

    @property
    def scalar_defaults(self) -> dict[str, float]:
        """The default value of each scalar."""
        info = KINDS[self.kind]
        return dict(zip(info.scalars, info.defaults, strict=False))

    @property
    def output_shares_descriptor(self) -> bool:
        """True when the output (D, or E) is described by the last input's descriptor (C, or D),
        so that the output array may be omitted at execute (it then is that input)."""
        info = KINDS[self.kind]
        return len(info.operands) > len(info.tensors)

    @property
    def takes_workspace(self) -> bool:
        """Whether the kind's execute function takes a workspace."""
        return KINDS[self.kind].takes_workspace

    @property
    def execute_function(self) -> str:
        """The C function that executes this kind, e.g. "cutensorContract"."""
        return KINDS[self.kind].execute

    # -- attributes (cutensorOperationDescriptorGetAttribute / SetAttribute) -------------------
    def _get(self, attribute: Any, buf: Any) -> Any:
        self._check_open()
        clear_last_error()
        check(
            LIB.function("cutensorOperationDescriptorGetAttribute")(
                self.handle, self, int(attribute), ctypes.byref(buf), ctypes.sizeof(buf)
            ),
            "cutensorOperationDescriptorGetAttribute",
        )
        return buf.value

    @property
    def scalar_type(self) -> np.dtype:
        """The dtype of alpha/beta/gamma (``CUTENSOR_OPERATION_DESCRIPTOR_SCALAR_TYPE``)."""
        if self._scalar_type is None:
            value = self._get(_bindings.CUTENSOR_OPERATION_DESCRIPTOR_SCALAR_TYPE, ctypes.c_int32())
            self._scalar_type = dtype_of_data_type(int(value))
        return self._scalar_type

    @property
    def flops(self) -> float:
        """Floating-point operations of one execute (``CUTENSOR_OPERATION_DESCRIPTOR_FLOPS``)."""
        return float(self._get(_bindings.CUTENSOR_OPERATION_DESCRIPTOR_FLOPS, ctypes.c_float()))

    @property
    def moved_bytes(self) -> float:
        """Minimal bytes moved to/from global memory (``..._MOVED_BYTES``)."""
        return float(
            self._get(_bindings.CUTENSOR_OPERATION_DESCRIPTOR_MOVED_BYTES, ctypes.c_float())
        )

    @property
    def tag(self) -> int:
        """``CUTENSOR_OPERATION_DESCRIPTOR_TAG``: tells otherwise identical problems apart in the
        plan cache."""
        return int(self._get(_bindings.CUTENSOR_OPERATION_DESCRIPTOR_TAG, ctypes.c_int32()))

    @tag.setter
    def tag(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"tag must be an int, not {type(value).__name__}")
        if not -(2**31) <= int(value) < 2**31:
            raise ValueError(f"tag must fit an int32_t, got {value}")
        self._write_tag(int(value))
        self._own_tag = int(value)

    def _tag_for_plan(self, tag: int | None) -> None:
        """Put the tag a plan is made with on the descriptor: ``tag`` (a preference's), or for
        None the operation's own (:attr:`tag` as last set, else cuTENSOR's default 0), so that a
        preference's tag never outlives the plan it was given for. No C call when unchanged."""
        wanted = self._own_tag if tag is None else int(tag)
        if wanted != self._c_tag:
            self._write_tag(wanted)

    def _write_tag(self, value: int) -> None:
        self._check_open()
        buf = ctypes.c_int32(value)
        clear_last_error()
        check(
            LIB.function("cutensorOperationDescriptorSetAttribute")(
                self.handle, self, int(_bindings.CUTENSOR_OPERATION_DESCRIPTOR_TAG),
                ctypes.byref(buf), ctypes.sizeof(buf),
            ),
            "cutensorOperationDescriptorSetAttribute",
        )  # fmt: skip
        self._c_tag = value

    # -- execute-time checks -------------------------------------------------------------------
    def scalar_values(self, *, alpha: Any = None, beta: Any = None, gamma: Any = None) -> list[Any]:
        """alpha/beta/gamma in :attr:`scalar_names` order, defaults filled in, type-checked
        (``TypeError`` for a scalar this kind of operation does not take)."""
        info = KINDS[self.kind]
        given = {"alpha": alpha, "beta": beta, "gamma": gamma}
        for name, value in given.items():
            if value is not None and name not in info.scalars:
                raise TypeError(
                    f"a {info.title} takes the scalars {', '.join(info.scalars)}, not {name}"
                )
        dtype = self.scalar_type
        out = []
        for name, default in zip(info.scalars, info.defaults, strict=False):
            value = given.get(name)
            out.append(default if value is None else coerce_scalar(value, dtype, name))
        return out

    def check_arrays(self, arrays: Sequence[Any], stream_ptr: int) -> list[int]:
        """Pointers of ``arrays`` (in :attr:`operand_names` order) after checking each against
        the layout, dtype, device and alignment this operation was described with, and the
        output against overlapping an input."""
        device = self.handle.device_id
        pointers: list[int] = []
        spans: list[tuple[int, int] | None] = []
        last = len(self.operands) - 1
        for i, (operand, array) in enumerate(zip(self.operands, arrays, strict=False)):
            name = operand.name
            if isinstance(array, (int, np.integer)) and not isinstance(array, bool):
                ptr = int(array)
                if not 0 < ptr < 2**64:  # ctypes would pass 2**64 + p on as p, another address
                    raise ValueError(
                        f"{name}: a device pointer must be a positive 64-bit int, got {ptr}"
                    )
                pointers.append(ptr)
                spans.append(None)
                continue
            view = array_view(array, name, stream_ptr)
            check_device_view(view, name, device)
            check_laid_out_like(view, name, operand.spec.dtype, operand.shape, operand.strides,
                                f"the operation's {name}", "it was described for that")  # fmt: skip
            check_pointer(view.ptr, view.itemsize, name)
            if i == last and view.readonly:
                raise ValueError(f"{name} is the output but its array is read-only")
            pointers.append(view.ptr)
            spans.append(span(view.ptr, view.shape, view.strides, view.itemsize))
        out_span = spans[-1]
        if out_span is not None:
            alias = len(self.operands) - 2 if self.output_shares_descriptor else -1
            for i, extent in enumerate(spans[:-1]):
                if extent is None:
                    continue
                if i == alias and pointers[i] == pointers[-1]:
                    continue  # C and D are the same array: allowed, their descriptors are one
                if extent[0] < out_span[1] and out_span[0] < extent[1]:
                    raise ValueError(
                        f"{self.operands[i].name} overlaps the output {self.operands[-1].name} in "
                        "memory: cuTENSOR requires inputs not to overlap the output"
                    )
        return pointers
