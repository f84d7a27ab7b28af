"""Several GPUs of one process (cuTENSORMg, ``cutensorMg.h``): block-cyclic tensors, copies and
contractions.

An :class:`MgHandle` names the participating devices (``cutensorMgCreate``). An :class:`MgTensor`
spreads a tensor block-cyclically over some of them (``cutensorMgCreateTensorDescriptor``: blocks
of ``block_sizes`` dealt round-robin over ``device_count`` devices per mode, devices listed mode 0
first) and holds one device array per device, or lives in host memory
(:meth:`MgTensor.host`). :class:`MgCopyPlan` moves data between any two layouts (host, one device,
several; permuting modes), :class:`MgContractionPlan` contracts device tensors.

cuTENSORMg has no query for what each device holds, so the per-device buffers are sized here from
the header's rules (:class:`~pycutensor.distributed.layout.Distribution`): every device gets an
array of the largest local extents per mode, column-major, and the descriptor is given those
element strides and matching block strides, so each device's blocks sit where a plain column-major
array of its local extents would put them.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from _nvbind.arrays import array_view
from _nvbind.cuda import driver_status, get_device
from _nvbind.device_array import DeviceArray
from _nvbind.resource import CResource
from _nvbind.strides import overlapping

from .. import _bindings_mg as mgb
from .. import raw_mg
from ..tensor import data_type_name, data_type_value, dtype_of_data_type
from ._common import (
    c_array,
    checked_contraction,
    copy_modes,
    int64s,
    require_gpu,
    scalar_array,
    workspace_preference_value,
)
from .layout import Distributed, Distribution

__all__ = ["MgContractionPlan", "MgCopyPlan", "MgHandle", "MgTensor"]

# Compute descriptor names (pycutensor's) to cuTENSORMg's cutensorComputeType_t.
_COMPUTE = {
    "16F": mgb.CUTENSOR_COMPUTE_16F, "16BF": mgb.CUTENSOR_COMPUTE_16BF,
    "TF32": mgb.CUTENSOR_COMPUTE_TF32, "3XTF32": mgb.CUTENSOR_COMPUTE_3XTF32,
    "32F": mgb.CUTENSOR_COMPUTE_32F, "64F": mgb.CUTENSOR_COMPUTE_64F,
}  # fmt: skip


def _packed_column_major(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether the elements are one dense run from the pointer up, mode 0 fastest."""
    step = 1
    for n, s in zip(shape, strides, strict=True):
        if n != 1 and s != step:
            return False
        step *= n
    return True


def _devices(devices: Sequence[int], name: str) -> tuple[int, ...]:
    out = tuple(int(d) for d in devices)
    if not out:
        raise ValueError(f"{name} must list at least one device")
    if len(set(out)) != len(out):
        raise ValueError(f"{name} lists a device twice ({list(out)}); each may occur once")
    if min(out) < 0:
        raise ValueError(f"{name} holds device ordinals (>= 0), got {list(out)}")
    return out


class MgHandle(CResource):
    """``cutensorMgHandle_t``: the devices that take part (``cutensorMgCreate``; it enables peer
    access between them where possible). ``devices`` defaults to every visible GPU."""

    _kind = "cuTENSORMg handle"

    def __init__(self, devices: Sequence[int] | None = None) -> None:
        if devices is not None:  # checked before the GPU, like every argument
            self.devices = _devices(devices, "devices")
        require_gpu("a cuTENSORMg handle")

        count = driver_status().device_count
        if devices is None:  # asked only now: without a GPU there are none to list
            self.devices = tuple(range(count))
        missing = [d for d in self.devices if d >= count]
        if missing:
            raise ValueError(f"devices {missing} do not exist: this machine has {count} GPU(s)")
        handle = mgb.cutensorMgHandle_t()
        raw_mg.cutensorMgCreate(
            ctypes.byref(handle), len(self.devices), c_array(ctypes.c_int32, self.devices)
        )
        super().__init__(int(handle.value or 0), raw_mg.cutensorMgDestroy)

    def _per_device(self, ctype: Any) -> Any:
        return (ctype * len(self.devices))()


class MgTensor(Distributed, CResource):
    """A tensor over the handle's devices (or in host memory, :meth:`host`).

    ``device_count[i]`` devices share mode ``i`` (default 1), in blocks of ``block_sizes[i]``
    (default: the extent, one block); ``devices`` lists ``prod(device_count)`` of the handle's
    devices, mode 0 first (a multiple of it replicates the tensor), default the first ones of
    the handle. ``arrays``: one device array per entry of ``devices`` (each packed column-major,
    or 1-D contiguous, with at least the elements of :attr:`local_shape`), or None to allocate
    them.
    """

    _kind = "cuTENSORMg tensor descriptor"

    def __init__(
        self,
        handle: MgHandle,
        extents: Sequence[int],
        dtype: Any = np.float32,
        *,
        block_sizes: Sequence[int] | None = None,
        device_count: Sequence[int] | None = None,
        devices: Sequence[int] | None = None,
        arrays: Sequence[Any] | None = None,
    ) -> None:
        if not isinstance(handle, MgHandle):
            raise TypeError(f"handle must be an MgHandle, not {type(handle).__name__}")
        ext = tuple(extents)
        counts = tuple(device_count) if device_count is not None else (1,) * len(ext)
        if any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in counts):
            raise ValueError(f"device_count must hold positive ints, got {list(counts)}")
        grid = math.prod(counts) if counts else 1
        devs = _devices(devices if devices is not None else handle.devices[:grid], "devices")
        outside = [d for d in devs if d not in handle.devices]
        if outside:
            raise ValueError(f"devices {outside} are not among the handle's {list(handle.devices)}")
        if len(devs) % grid:
            raise ValueError(
                f"devices lists {len(devs)} devices; it must be a multiple of prod(device_count) "
                f"= {grid} (the multiple replicates the tensor)"
            )
        self.distribution = Distribution.block_cyclic(ext, counts, block_sizes, len(devs))
        self.handle, self.devices = handle, devs
        self.data_type = data_type_name(dtype)
        self.dtype = dtype_of_data_type(self.data_type)
        d = self.distribution
        assert d.block_sizes is not None
        # The largest local extent per mode over the grid coordinates: one shape for every device.
        self.local_shape = tuple(
            max(d.local_extents(r)[m] for r in range(grid)) for m in range(d.ndim)
        )
        strides = [1]
        for n in self.local_shape[:-1]:
            strides.append(strides[-1] * n)
        self._create(d.extents, strides, d.block_sizes,
                     [b * s for b, s in zip(d.block_sizes, strides, strict=True)], counts, devs)  # fmt: skip
        self.arrays = self._arrays(arrays)

    def _create(  # noqa: PLR0917 - the descriptor's arrays in the order of C
        self, extents: Sequence[int], strides: Sequence[int] | None,
        blocks: Sequence[int] | None, block_strides: Sequence[int] | None,
        counts: Sequence[int] | None, devices: Sequence[int],
    ) -> None:  # fmt: skip
        desc = mgb.cutensorMgTensorDescriptor_t()
        raw_mg.cutensorMgCreateTensorDescriptor(
            self.handle, ctypes.byref(desc), len(extents), int64s(extents),
            None if strides is None else int64s(strides),
            None if blocks is None else int64s(blocks),
            None if block_strides is None else int64s(block_strides),
            None if counts is None else c_array(ctypes.c_int32, counts),
            len(devices), c_array(ctypes.c_int32, devices), data_type_value(self.data_type),
        )  # fmt: skip
        super().__init__(
            int(desc.value or 0), raw_mg.cutensorMgDestroyTensorDescriptor, parents=(self.handle,)
        )

    def _arrays(self, arrays: Sequence[Any] | None) -> list[Any]:

        need = math.prod(self.local_shape) * self.dtype.itemsize
        if arrays is None:
            return [
                DeviceArray.empty(
                    self.local_shape, self.dtype, device=dev, fmt=None, strides=self._strides()
                )
                for dev in self.devices
            ]
        if len(arrays) != len(self.devices):
            raise ValueError(f"got {len(arrays)} arrays for {len(self.devices)} devices")
        for i, (a, dev) in enumerate(zip(arrays, self.devices, strict=True)):
            v = array_view(a, f"arrays[{i}]")
            if v.device_id != dev:
                raise ValueError(f"arrays[{i}] is on device {v.device_id}, not {dev}")
            if v.dtype != self.dtype or v.nbytes < need:
                raise ValueError(
                    f"arrays[{i}] must hold {need} bytes of {self.dtype}; it holds "
                    f"{v.nbytes} of {v.dtype}"
                )
            if not _packed_column_major(v.shape, v.strides):
                # The descriptor says: local_shape, column-major, from the array's pointer.
                raise ValueError(
                    f"arrays[{i}] must be packed column-major (or 1-D contiguous) from its "
                    f"pointer, as the descriptor lays out local_shape {self.local_shape}; it has "
                    f"shape {v.shape} and strides {v.strides}"
                )
        return list(arrays)

    def _strides(self) -> tuple[int, ...]:
        out, step = [], 1
        for n in self.local_shape:
            out.append(step)
            step *= n
        return tuple(out)

    @classmethod
    def host(cls, handle: MgHandle, array: np.ndarray) -> MgTensor:
        """A tensor in host memory (``CUTENSOR_MG_DEVICE_HOST``), viewing ``array`` (kept alive):
        the source or destination of an :class:`MgCopyPlan`."""
        arr = np.asarray(array)
        if arr.dtype.itemsize == 0 or any(s % arr.dtype.itemsize for s in arr.strides):
            raise ValueError("array must have whole-element strides")
        if min(arr.strides, default=0) < 0:
            raise ValueError("array must not have negative strides")
        self = cls.__new__(cls)
        self.handle, self.devices = handle, (int(mgb.CUTENSOR_MG_DEVICE_HOST),)
        self.data_type = data_type_name(arr.dtype)
        self.dtype = dtype_of_data_type(self.data_type)
        self.distribution = Distribution.block_cyclic(arr.shape)
        self.local_shape = tuple(arr.shape)
        self._create(arr.shape, [s // arr.dtype.itemsize for s in arr.strides], None, None, None,
                     self.devices)  # fmt: skip
        self.arrays = [arr]
        return self

    def pointers(self) -> ctypes.Array[ctypes.c_void_p]:
        """The data pointers in the order of :attr:`devices`."""

        ptrs = [
            a.ctypes.data if isinstance(a, np.ndarray) else array_view(a, "array").ptr
            for a in self.arrays
        ]
        return (ctypes.c_void_p * len(ptrs))(*ptrs)

    def to_numpy(self) -> np.ndarray:
        """The whole tensor on the host (a copy plan to a host tensor; waits)."""
        out = np.empty(self.extents, dtype=self.dtype, order="F")
        MgCopyPlan(MgTensor.host(self.handle, out), self).execute()
        return out

    def from_numpy(self, array: np.ndarray) -> None:
        """Fill the tensor from a whole host array (a copy plan; waits)."""
        arr = np.asarray(array, dtype=self.dtype)
        if arr.shape != self.extents:
            raise ValueError(f"array has shape {arr.shape}, the tensor {self.extents}")
        MgCopyPlan(self, MgTensor.host(self.handle, arr)).execute()


class _Workspaces:
    """Per-device workspace and pinned host workspace of a cuTENSORMg plan."""

    def __init__(self, handle: MgHandle, device_sizes: Any, host_size: int) -> None:

        self.device = [
            DeviceArray.empty(int(n), np.uint8, device=dev) if n > 0 else None
            for n, dev in zip(device_sizes, handle.devices, strict=True)
        ]
        self.host: Any = None
        if host_size > 0:
            import cuda.core as core

            # "The host pinned memory workspace": page-locked, as the header asks.
            self.host = core.LegacyPinnedMemoryResource().allocate(host_size)
        self.streams = handle._per_device(ctypes.c_void_p)  # each device's default stream

    def pointers(self) -> tuple[Any, Any, Any]:

        dev = [array_view(a, "workspace").ptr if a is not None else None for a in self.device]
        host = int(self.host.handle) if self.host is not None else None
        return (ctypes.c_void_p * len(dev))(*dev), host, self.streams


def _synchronize(devices: Sequence[int]) -> None:

    for d in devices:
        get_device(d).sync()


def check_host_destination(dst: Any) -> None:
    """Refuse a host tensor (:meth:`MgTensor.host`) as a copy's destination when its array is
    read-only or reaches some element twice (a broadcast view: stride 0): cuTENSORMg would write
    into it. Such an array is a fine source."""
    if tuple(dst.devices) != (int(mgb.CUTENSOR_MG_DEVICE_HOST),):
        return
    arr = dst.arrays[0]
    if not arr.flags.writeable:
        raise ValueError("dst: the host array is read-only, but the copy writes it")
    if overlapping(arr.shape, [s // arr.itemsize for s in arr.strides]):
        raise ValueError(
            f"dst: the host array's strides {arr.strides} reach some elements twice (a broadcast "
            "view?); a copy needs one element per index"
        )


class MgCopyPlan(CResource):
    """Copy ``src`` into ``dst`` (``cutensorMgCreateCopyDescriptor``/``CreateCopyPlan``): any pair
    of layouts, modes matched by label (default: position), extents equal."""

    _kind = "cuTENSORMg copy plan"

    def __init__(self, dst: MgTensor, src: MgTensor, *, modes_dst: Any = None,
                 modes_src: Any = None) -> None:  # fmt: skip
        if dst.handle is not src.handle:
            raise ValueError("dst and src must come from the same MgHandle")
        check_host_destination(dst)
        md, ms = copy_modes(dst, src, modes_dst, modes_src)
        handle = self.handle = dst.handle
        desc = mgb.cutensorMgCopyDescriptor_t()
        i32 = ctypes.c_int32
        raw_mg.cutensorMgCreateCopyDescriptor(
            handle, ctypes.byref(desc), dst, c_array(i32, md), src, c_array(i32, ms)
        )
        plan = mgb.cutensorMgCopyPlan_t()
        try:
            sizes, host = handle._per_device(ctypes.c_int64), ctypes.c_int64()
            raw_mg.cutensorMgCopyGetWorkspace(handle, desc, sizes, ctypes.byref(host))
            raw_mg.cutensorMgCreateCopyPlan(handle, ctypes.byref(plan), desc, sizes, host.value)
        finally:
            raw_mg.cutensorMgDestroyCopyDescriptor(desc)
        super().__init__(
            int(plan.value or 0), raw_mg.cutensorMgDestroyCopyPlan, parents=(handle, dst, src)
        )
        self.dst, self.src = dst, src
        self._ws = _Workspaces(handle, sizes, host.value)

    def execute(self) -> None:
        """``cutensorMgCopy`` on each device's default stream, then waits for the devices."""
        ws, host, streams = self._ws.pointers()
        raw_mg.cutensorMgCopy(
            self.handle, self, self.dst.pointers(), self.src.pointers(), ws, host, streams
        )
        _synchronize(self.handle.devices)


class MgContractionPlan(CResource):
    """``D = alpha A B + beta C`` over device tensors (``cutensorMgCreateContractionDescriptor``,
    ``...Find``, ``...GetWorkspace``, ``...Plan``); D is C (the header: "descC and descD as well
    as modesC and modesD must be identical")."""

    _kind = "cuTENSORMg contraction plan"

    def __init__(  # noqa: PLR0917 - (tensor, modes) pairs in the order of C and einsum
        self,
        a: MgTensor,
        modes_a: Any,
        b: MgTensor,
        modes_b: Any,
        c: MgTensor,
        modes_c: Any,
        *,
        compute_type: Any = None,
        workspace_preference: str = "default",
    ) -> None:
        handle = self.handle = c.handle
        for name, t in (("a", a), ("b", b), ("c", c)):
            if t.handle is not handle:
                raise ValueError(f"{name} comes from another MgHandle")
            if t.devices[0] < 0:
                raise ValueError(f"{name} is in host memory; cuTENSORMg contracts device tensors")
        if c.distribution.replication != 1:
            raise ValueError(
                f"c is replicated over {len(c.devices)} devices (a multiple of prod(device_count)"
                "); cutensorMg.h: replicated tensors can be used everywhere except as outputs "
                "for contractions"
            )
        (ma, mb, mc), compute, scalar_dtype = checked_contraction(
            a, modes_a, b, modes_b, c, modes_c, compute_type
        )
        if compute not in _COMPUTE:
            raise ValueError(f"cuTENSORMg has no compute type {compute}; it has {list(_COMPUTE)}")
        self.scalar_dtype = scalar_dtype
        ws_pref = workspace_preference_value(workspace_preference)
        i32 = ctypes.c_int32
        desc = mgb.cutensorMgContractionDescriptor_t()
        raw_mg.cutensorMgCreateContractionDescriptor(
            handle, ctypes.byref(desc), a, c_array(i32, ma), b, c_array(i32, mb),
            c, c_array(i32, mc), c, c_array(i32, mc), int(_COMPUTE[compute]),
        )  # fmt: skip
        find = mgb.cutensorMgContractionFind_t()
        plan = mgb.cutensorMgContractionPlan_t()
        try:
            raw_mg.cutensorMgCreateContractionFind(
                handle, ctypes.byref(find), int(mgb.CUTENSORMG_ALGO_DEFAULT)
            )
            try:
                sizes, host = handle._per_device(ctypes.c_int64), ctypes.c_int64()
                raw_mg.cutensorMgContractionGetWorkspace(
                    handle, desc, find, ws_pref, sizes, ctypes.byref(host)
                )
                raw_mg.cutensorMgCreateContractionPlan(
                    handle, ctypes.byref(plan), desc, find, sizes, host.value
                )
            finally:
                raw_mg.cutensorMgDestroyContractionFind(find)
        finally:
            raw_mg.cutensorMgDestroyContractionDescriptor(desc)
        super().__init__(
            int(plan.value or 0), raw_mg.cutensorMgDestroyContractionPlan,
            parents=(handle, a, b, c),
        )  # fmt: skip
        self.a, self.b, self.c = a, b, c
        self.compute_type = compute
        self._ws = _Workspaces(handle, sizes, host.value)

    def execute(self, alpha: Any = 1.0, beta: Any = 0.0) -> None:
        """``cutensorMgContraction`` on each device's default stream, then waits."""
        ws, host, streams = self._ws.pointers()
        al = scalar_array(alpha, self.scalar_dtype, "alpha")
        be = scalar_array(beta, self.scalar_dtype, "beta")
        c = self.c.pointers()
        raw_mg.cutensorMgContraction(
            self.handle, self, al.ctypes.data, self.a.pointers(), self.b.pointers(),
            be.ctypes.data, c, c, ws, host, streams,
        )  # fmt: skip
        _synchronize(self.handle.devices)
