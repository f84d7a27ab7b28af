"""Variant packs: the pointers and workspace of one execution, built once per set of pointers and
cached by the :class:`VariantPackCache` each :class:`~pycudnn.plan.Plan` owns."""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

from _nvbind.arrays import array_view
from _nvbind.dtypes import dtype_name
from _nvbind.lazy_numpy import np
from _nvbind.strides import element_extent

from ..backend import BackendDescriptor
from .slots import _Slot

__all__ = ["VariantPackCache", "wrong_device"]

_VARIANT_PACK_CACHE_SIZE = 16  # pointer sets kept per plan

#: A cached pack: its ``c_void_p`` (passed to ``cudnnBackendExecute`` without conversion work),
#: the device it was built for, and the descriptor that owns it.
Entry = tuple[Any, int, BackendDescriptor]


def wrong_device(handle: Any, device_id: int) -> None:
    """Refuse a handle whose device is not the one the arrays (the variant pack) are on."""
    raise ValueError(
        f"the handle is on device {handle.device_id} but these arrays are on device {device_id}; "
        "a handle never changes device: pass handle=None or a handle of the arrays' device"
    )


def _memory(sig: tuple[Any, ...]) -> Any:
    """A NumPy view of the memory an array description reaches, for :func:`np.shares_memory`,
    which compares addresses only: nothing is read, so device addresses are fine."""
    ptr, shape, strides, dtype = sig[:4]
    item = np.dtype(dtype).itemsize

    class Memory:
        def __init__(self) -> None:
            self.__array_interface__ = {
                "shape": tuple(shape),
                "typestr": f"|V{item}",
                "data": (int(ptr), True),
                "strides": tuple(st * item for st in strides),
                "version": 3,
            }

    return np.asarray(Memory())


def _meet(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether two array descriptions (pointer, shape, strides, dtype, ...) reach a common byte:
    their byte ranges first, then exactly (two views interleaved in one buffer are apart)."""
    ranges = []
    for ptr, shape, strides, dtype in (a[:4], b[:4]):
        lo, span = element_extent(shape, strides)
        if not span:
            return False  # an empty array reaches no memory
        item = np.dtype(dtype).itemsize
        ranges.append((ptr + lo * item, ptr + (lo + span) * item))
    (a_lo, a_hi), (b_lo, b_hi) = ranges
    if a_hi <= b_lo or b_hi <= a_lo:
        return False
    # A bounded search (NumPy's stubs name only its two special values, -1 and 0, for max_work;
    # any positive bound is documented and taken): past it, TooHardError.
    work: Any = 10**6
    try:
        return bool(np.shares_memory(_memory(a), _memory(b), max_work=work))
    except np.exceptions.TooHardError:
        return True  # undecided: the conservative answer


def check_apart(arrays: Sequence[tuple[_Slot, tuple[Any, ...]]]) -> None:
    """Refuse an output whose memory meets another array's of the same call (an input's or
    another output's): cuDNN reads the inputs while it writes the outputs, so an overlap
    computes from values already overwritten, and two outputs written over each other leave
    one of them wrong. Inputs may share memory with each other, and an input may lie in the
    output its slot's ``in_place_of`` names (a concatenation's in-place input, which already is
    its slice of the output)."""
    for i, (slot, sig) in enumerate(arrays):
        if not slot.is_output:
            continue
        for j, (other, other_sig) in enumerate(arrays):
            if j == i or (other.is_output and j < i):
                continue  # each pair of outputs once
            if other.in_place_of == slot.uid:
                continue
            if _meet(sig, other_sig):
                role = "output" if other.is_output else "input"
                raise ValueError(
                    f"tensor '{slot.name}': the output array overlaps the {role} array of "
                    f"tensor '{other.name}' in memory (cuDNN reads its inputs while it writes "
                    "its outputs); give each output memory of its own"
                )


class VariantPackCache:
    """The variant packs (``CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR``) of one execution plan, keyed
    by what the execute paths read of their arguments, the last :data:`_VARIANT_PACK_CACHE_SIZE`
    kept: the arrays are checked against the plan's tensors when a key is first seen.

    ``entries`` (key to :data:`Entry`, least recently used first) and ``last`` (``(descriptions,
    workspace, order, entry)`` of the last execute) are read by :meth:`Plan.execute` itself, the
    hot path, which looks them up without a method call; ``builds`` counts the packs built.
    """

    __slots__ = (
        "_canonical",
        "_slots",
        "_uids",
        "_ws_checked",
        "builds",
        "entries",
        "last",
        "size",
        "ws_device",
    )

    def __init__(self, slots: list[_Slot], uids: tuple[int, ...], workspace_size: int) -> None:
        self._slots = slots
        self._uids = uids
        self.size = workspace_size  # bytes of workspace the plan needs
        self.entries: collections.OrderedDict[Any, Entry] = collections.OrderedDict()
        # (pointers, workspace) to its entry: the same pointers under other keys share one pack
        self._canonical: dict[Any, Entry] = {}
        self.last: tuple[Any, ...] = (None, None, None, None)
        self.builds = 0
        # (ptr, shape, strides, dtype, device, read-only) of the last workspace= checked
        self._ws_checked: tuple[Any, ...] | None = None
        self.ws_device: tuple[int, Any] = (0, None)  # the last workspace= address, its device

    def close(self) -> None:
        """Release every pack (``cudnnBackendDestroyDescriptor``)."""
        for _, _, vp in self.entries.values():
            vp.close()
        self.entries.clear()
        self._canonical.clear()
        self.last = (None, None, None, None)

    def raw_pointers(self, pointers: tuple[Any, ...], workspace: Any) -> list[Any]:
        """Check the pointers given to :meth:`execute_raw`; by-value slots get the plan's buffer."""
        if len(pointers) != len(self._slots):
            raise ValueError(
                f"execute_raw takes {len(self._slots)} pointers (uids {list(self._uids)}), got "
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
        if self.size and not workspace:
            raise ValueError(f"execute_raw: the plan needs a workspace of {self.size} bytes")
        return ptrs

    def user_workspace(self, workspace: Any, stream_ptr: int = -1) -> int:
        """The address of a caller's ``workspace=`` once its extent is checked against the
        plan's need (a bare int is refused: its size cannot be checked). ``stream_ptr``: the
        stream cuDNN writes it on, ordered after the array's own (-1: none, a CUDA graph's)."""
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
            device = getattr(workspace, "device_id", None)
        else:
            # cuDNN writes it on stream_ptr, ordered after its allocation as the tensors are
            view = array_view(workspace, "workspace", stream_ptr)
            # The extent is worked out once per layout (the same workspace comes every call).
            sig = view[:6]
            if sig == self._ws_checked:
                # its device is compared when a pack is built: the last workspace's, this one
                self.ws_device = (view.ptr, view.device_id)
                return int(view.ptr)
            if view.device_id < 0:
                raise ValueError("workspace is in host memory; it must be device memory")
            if view.readonly:
                raise ValueError("workspace is read-only; cuDNN writes it")
            if element_extent(view.shape, view.strides)[0]:  # cuDNN writes [ptr, ptr + size)
                raise ValueError("workspace has negative strides: its memory does not start at it")
            ptr, nbytes, device = view.ptr, view.span_bytes(), view.device_id
            if nbytes >= self.size:
                self._ws_checked = sig
        if nbytes < self.size:
            raise ValueError(f"workspace has {nbytes} bytes but the plan needs {self.size}")
        self.ws_device = (ptr, device)  # compared with the handle's when a pack is built
        return ptr

    def graph_workspace(self, workspace: Any) -> int:
        """The address of a CUDA graph call's ``workspace=`` (:meth:`user_workspace`), required
        when the plan needs one: the graph keeps the pointer, so a per-call workspace would be
        gone when the graph is launched."""
        if workspace is not None:
            return self.user_workspace(workspace)
        if self.size:
            raise ValueError(
                f"this plan needs a {self.size}-byte workspace: pass workspace= (a buffer that "
                "outlives the CUDA graph; the graph keeps its pointer)"
            )
        return 0

    def build(self, key: Any, device_id: int) -> Entry:
        """Validate the arrays of ``key`` (``(order, descriptions, workspace)``, the descriptions
        read by the execute path, already stream-ordered), then build and cache a variant pack."""
        ws_ptr, ws_device = self.ws_device
        if ws_ptr == key[2] and ws_device is not None and int(ws_device) != device_id:
            raise ValueError(
                f"workspace: the memory is on device {ws_device} but the handle is on device "
                f"{device_id}"
            )
        ptrs = [0] * len(self._slots)
        arrays = []
        for s_index, sig in zip(key[0], key[1], strict=True):
            slot = self._slots[s_index]
            if slot.by_value:
                ptrs[s_index] = int(slot.scalar.ctypes.data)
                continue
            ptrs[s_index] = self.validate(slot, sig, device_id)
            arrays.append((slot, sig))
        check_apart(arrays)
        if key[2] and self.size:  # cuDNN writes [workspace, workspace + size) as it runs
            space = (key[2], (self.size,), (1,), np.dtype(np.uint8))
            for slot, sig in arrays:
                if _meet(space, sig):
                    raise ValueError(
                        f"workspace overlaps the array of tensor '{slot.name}' in memory (cuDNN "
                        "writes the workspace while it runs); give it memory of its own"
                    )
        for i, slot in enumerate(self._slots):
            if slot.by_value and not ptrs[i]:
                ptrs[i] = int(slot.scalar.ctypes.data)
        return self.store(key, ptrs, key[2], device_id)

    def validate(self, slot: _Slot, sig: tuple[Any, ...], device_id: int) -> int:
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

    def store(self, key: Any, ptrs: Sequence[int], workspace: int, device_id: int) -> Entry:
        # The same pointers given under other keys or in another order share one pack.
        canonical = (tuple(ptrs), workspace)
        entry = self._canonical.get(canonical)
        if entry is None or entry[1] != device_id:
            vp = BackendDescriptor("VARIANT_PACK")
            try:
                vp.set("VARIANT_PACK_UNIQUE_IDS", self._uids, attr_type="INT64")
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
            self._canonical[canonical] = entry
            self.builds += 1
        self.entries[key] = entry
        while len(self.entries) > _VARIANT_PACK_CACHE_SIZE:
            _, evicted = self.entries.popitem(last=False)
            if self.last[3] is evicted:
                self.last = (None, None, None, None)
            if not any(e is evicted for e in self.entries.values()):
                self._canonical = {k: e for k, e in self._canonical.items() if e is not evicted}
                # not closed here: a call that read it before the eviction may still launch it;
                # the descriptor's finalizer destroys it when the last reference goes
        return entry

    def touch(self, key: Any) -> None:
        """Mark ``key``'s pack as the most recently used (it may have been evicted since it was
        read, by a call on another thread: then there is nothing to mark)."""
        try:
            self.entries.move_to_end(key)
        except KeyError:
            pass
