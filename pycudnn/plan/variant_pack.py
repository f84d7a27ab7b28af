"""Variant packs: the pointers and workspace of one execution, built once per set of pointers and cached."""

from __future__ import annotations

import collections
import functools
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from _nvbind.arrays import array_view
from _nvbind.cuda import stream_handle
from _nvbind.dtypes import dtype_name
from _nvbind.memory import workspace

from ..backend import BackendDescriptor
from ..handle import Handle
from .slots import _Slot

__all__ = ["VariantPacks"]

_VARIANT_PACK_CACHE_SIZE = 16  # pointer sets kept per plan

_log = logging.getLogger("pycudnn")


class VariantPacks:
    """The variant-pack half of :class:`~pycudnn.plan.Plan` (its state is set by ``Plan.__init__``)."""

    _slots: list[_Slot]
    uids: tuple[int, ...]
    workspace_size: int
    _order: tuple[int, ...]
    _device_id: int | None
    _vpacks: collections.OrderedDict[Any, tuple[Any, int, BackendDescriptor]]
    _vp_canonical: dict[Any, tuple[Any, int, BackendDescriptor]]
    _last: tuple[Any, ...]
    variant_pack_builds: int
    _ws_checked: tuple[Any, ...] | None = None  # (ptr, shape, strides, dtype, device): big enough

    def _raw_pointers(self, pointers: tuple[Any, ...], workspace: Any) -> list[Any]:
        """Check the pointers given to :meth:`execute_raw`; by-value slots get the plan's buffer."""
        if len(pointers) != len(self._slots):
            raise ValueError(
                f"execute_raw takes {len(self._slots)} pointers (uids {list(self.uids)}), got "
                f"{len(pointers)}"
            )
        ptrs = list(pointers)
        for i, s in enumerate(self._slots):
            p = ptrs[i]
            if s.by_value:
                if p is not None and p != 0:
                    raise ValueError(
                        f"execute_raw: tensor '{s.name}' (uid {s.uid}) is a by-value scalar: pass "
                        "None and set its value with plan.set_scalar()"
                    )
                ptrs[i] = int(s.scalar.ctypes.data)
            elif isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < 2**64:
                raise TypeError(
                    f"execute_raw: pointer {i} (tensor '{s.name}', uid {s.uid}) must be a device "
                    f"address as a non-negative 64-bit int, got {p!r}"
                )
        if (
            isinstance(workspace, bool)
            or not isinstance(workspace, int)
            or not 0 <= workspace < 2**64
        ):
            raise TypeError(
                f"execute_raw: workspace must be a device address as a non-negative 64-bit int "
                f"(0 for none), got {workspace!r}"
            )
        if self.workspace_size and not workspace:
            raise ValueError(
                f"execute_raw: the plan needs a workspace of {self.workspace_size} bytes"
            )
        return ptrs

    def _wrong_device(self, handle: Any, device_id: int) -> None:
        raise ValueError(
            f"the handle is on device {handle.device_id} but these arrays are on device {device_id}; "
            "a handle never changes device: pass handle=None or a handle of the arrays' device"
        )

    def _user_workspace(self, workspace: Any) -> int:
        if isinstance(workspace, int):
            raise TypeError(
                "workspace must be a buffer or array whose size can be checked (a cuda.core Buffer, "
                "a DeviceArray, a CuPy/PyTorch array), not a bare pointer; use execute_raw for raw "
                "pointers"
            )
        size = getattr(workspace, "size", None)
        handle = getattr(workspace, "handle", None)
        if (
            handle is not None
            and isinstance(size, int)
            and not hasattr(workspace, "__cuda_array_interface__")
        ):
            ptr, nbytes = int(handle), size  # a cuda.core Buffer
        else:
            view = array_view(workspace, "workspace", -1)  # never read by the host: no ordering
            # The extent is worked out once per layout (the same workspace comes every call).
            sig = view[:5]
            if sig == self._ws_checked:
                return int(view.ptr)
            if view.device_id < 0:
                raise ValueError("workspace is in host memory; it must be device memory")
            ptr, nbytes = view.ptr, view.span_bytes()
            if nbytes >= self.workspace_size:
                self._ws_checked = sig
        if nbytes < self.workspace_size:
            raise ValueError(
                f"workspace has {nbytes} bytes but the plan needs {self.workspace_size}"
            )
        return ptr

    def _new_variant_pack(
        self, key: Any, values: Iterable[Any], handle: Any, stream: Any
    ) -> tuple[Any, int, BackendDescriptor]:
        """Validate the arrays of ``key`` (``(order, descriptions, workspace)``, the descriptions
        read by the execute path, already stream-ordered), then build and cache a variant pack."""
        ptrs = [0] * len(self._slots)
        for s_index, sig in zip(self._order, key[1], strict=True):
            slot = self._slots[s_index]
            if slot.by_value:
                ptrs[s_index] = int(slot.scalar.ctypes.data)
                continue
            ptrs[s_index] = self._validate(slot, sig, handle.device_id)
        for i, slot in enumerate(self._slots):
            if slot.by_value and not ptrs[i]:
                ptrs[i] = int(slot.scalar.ctypes.data)
        if self._device_id is None:
            self._device_id = handle.device_id
        return self._store_variant_pack(key, ptrs, key[2], handle.device_id)

    def _validate(self, slot: _Slot, sig: tuple[Any, ...], device_id: int) -> int:
        """Check one array's description (an :class:`ArrayView`'s first six fields) against its
        tensor; returns its pointer."""
        what = f"tensor '{slot.name}'"
        ptr, shape, strides, dtype, array_device, readonly = sig
        if array_device < 0:
            raise ValueError(
                f"{what}: the array is in host memory; cuDNN executes on device arrays"
            )
        if array_device != device_id:
            raise ValueError(
                f"{what}: the array is on device {array_device} but the handle is on device "
                f"{device_id}"
            )
        if slot.dtype is not None and dtype != slot.dtype:
            raise TypeError(
                f"{what}: the array is {dtype_name(dtype)} but the graph says "
                f"{dtype_name(slot.dtype)}"
            )
        if tuple(shape) != tuple(slot.dims):
            hint = ""
            if slot.tensor is not None and slot.tensor.is_vectorized:
                hint = (
                    f" (the packed [N, C/x, H, W, x] array of this {slot.tensor.format} tensor, "
                    f"e.g. layout.to_format(a, {slot.tensor.format!r}).reshape(tensor.array_shape))"
                )
            raise ValueError(
                f"{what}: the array has shape {list(shape)} but the graph says "
                f"{list(slot.dims)}{hint}"
            )
        for i, (n, got, want) in enumerate(zip(slot.dims, strides, slot.strides, strict=True)):
            if n > 1 and got != want:
                raise ValueError(
                    f"{what}: the array has strides {list(strides)} (elements) but the graph "
                    f"says {list(slot.strides)} (dim {i} differs); make the layouts agree"
                )
        if ptr % slot.alignment:
            raise ValueError(
                f"{what}: the data pointer 0x{ptr:x} is not aligned to the {slot.alignment} "
                "bytes the graph promises (set alignment= on the tensor to promise less)"
            )
        if slot.is_output and readonly:
            raise ValueError(f"{what}: the array is read-only but the plan writes it")
        return int(ptr)

    def _store_variant_pack(
        self, key: Any, ptrs: Sequence[int], workspace: int, device_id: int
    ) -> tuple[Any, int, BackendDescriptor]:
        # The same pointers given under other keys or in another order share one pack.
        canonical = (tuple(ptrs), workspace)
        entry = self._vp_canonical.get(canonical)
        if entry is None or entry[1] != device_id:
            vp = BackendDescriptor("VARIANT_PACK")
            try:
                vp.set("VARIANT_PACK_UNIQUE_IDS", self.uids, attr_type="INT64")
                vp.set(
                    "VARIANT_PACK_DATA_POINTERS", [p or None for p in ptrs], attr_type="VOID_PTR"
                )
                vp.set("VARIANT_PACK_WORKSPACE", workspace or None, attr_type="VOID_PTR")
                vp.finalize()
            except BaseException:
                vp.close()
                raise
            # The pack holds raw pointers only; the by-value buffers it points at live in the
            # slots. c_void_p objects pass through ctypes' argument conversion without work.
            entry = (vp._as_parameter_, device_id, vp)
            self._vp_canonical[canonical] = entry
            self.variant_pack_builds += 1
        self._vpacks[key] = entry
        while len(self._vpacks) > _VARIANT_PACK_CACHE_SIZE:
            _, evicted = self._vpacks.popitem(last=False)
            if self._last[3] is evicted:
                self._last = (None, None, None, None)
            if not any(e is evicted for e in self._vpacks.values()):
                self._vp_canonical = {
                    k: e for k, e in self._vp_canonical.items() if e is not evicted
                }
                evicted[2].close()
        return entry


@functools.cache
def _Handle() -> type:

    return Handle


def _stream_handle(stream: Any) -> int:

    return stream_handle(stream)


def _workspace(nbytes: int, device: Any, stream: Any) -> int:

    return workspace(nbytes, device=device, stream=stream)
