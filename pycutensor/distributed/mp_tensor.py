"""The per-rank side of cuTENSORMp: :class:`MpHandle` (``cutensorMpCreate`` on a communicator)
and :class:`DistributedTensor` (``cutensorMpCreateTensorDescriptor``: global extents, the process
grid per mode, block sizes, and the local shard this rank holds, sized from cuTENSORMp's answers).
The collective plans over them are in :mod:`pycutensor.distributed.mp`.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from _nvbind.arrays import array_view
from _nvbind.cuda import get_device, stream_handle
from _nvbind.device_array import DeviceArray
from _nvbind.resource import ClosedError, CResource

from .. import _bindings_mp as mpb
from .. import raw_mp
from ..tensor import data_type_name, data_type_value, dtype_of_data_type
from ._common import c_array, int64s, require_gpu
from .comm import Communicator
from .layout import Distributed, Distribution

__all__ = ["DistributedTensor", "MpHandle"]


class MpHandle(CResource):
    """``cutensorMpHandle_t``: cuTENSORMp's context on one rank (``cutensorMpCreate``), bound to
    a communicator, this rank's device and a stream."""

    _kind = "cuTENSORMp handle"

    def __init__(
        self, comm: Communicator, *, device: int | None = None, stream: Any = None
    ) -> None:
        if not isinstance(comm, Communicator):
            raise TypeError(f"comm must be a pycutensor.distributed.Communicator, not {comm!r}")
        require_gpu("a cuTENSORMp handle")
        self.comm = comm
        self.device_id = comm.device_id if device is None else int(device)
        self.stream = stream
        self._stream_ptr = stream_handle(stream)

        get_device(self.device_id).set_current()  # NCCL and cuTENSORMp work on the current device
        handle = mpb.cutensorMpHandle_t()
        raw_mp.cutensorMpCreate(ctypes.byref(handle), comm.ptr, self.device_id, self._stream_ptr)
        super().__init__(int(handle.value or 0), raw_mp.cutensorMpDestroy, parents=(comm,))

    @property
    def _as_parameter_(self) -> ctypes.c_void_p:
        # Every cuTENSORMp call given this handle reaches NCCL through it: one made after the
        # communicator was destroyed would use freed memory, so it is refused here, as a cuTENSOR
        # plan refuses a closed handle.
        if self.comm._ptr is None:
            raise ClosedError(
                "the communicator of this cuTENSORMp handle is closed: close the handle, and "
                "what uses it, before its communicator"
            )
        parameter: ctypes.c_void_p = super()._as_parameter_
        return parameter

    @property
    def rank(self) -> int:
        """This process's rank: the communicator's."""
        return self.comm.rank

    @property
    def size(self) -> int:
        """How many ranks the communicator has."""
        return self.comm.size

    def clear_operation_cache(self) -> None:
        """``cutensorMpClearOperationCache``: drop communication resources (registered
        workspaces) cached by the handle; synchronize its streams first."""
        raw_mp.cutensorMpClearOperationCache(self)


def _get_attribute(handle: MpHandle, desc: CResource, attr: int, ctype: Any, count: int) -> Any:
    buf = (ctype * count)()  # the raw layer checks sizeInBytes against the array's size
    raw_mp.cutensorMpTensorDescriptorGetAttribute(handle, desc, attr, buf, ctypes.sizeof(buf))
    return tuple(int(v) for v in buf)


class DistributedTensor(Distributed, CResource):
    """A tensor spread over the ranks of a communicator: ``cutensorMpTensorDescriptor_t`` plus this
    rank's local shard (a device array).

    ``ranks_per_mode`` is the process grid (1: the mode is replicated; default: every mode
    replicated), ``block_sizes`` the block-cyclic block per mode (None or 0: near-even contiguous
    slices), ``nranks``/``ranks`` the participating ranks (default: every rank of the
    communicator; ranks beyond the grid's size hold replicas). ``local`` is the shard: a 1-D
    contiguous device array given, or allocated with the storage size that cuTENSORMp reports
    (None on a rank that holds nothing).
    """

    _kind = "cuTENSORMp tensor descriptor"

    def __init__(
        self,
        handle: MpHandle,
        extents: Sequence[int],
        dtype: Any = np.float32,
        *,
        ranks_per_mode: Sequence[int] | None = None,
        block_sizes: Sequence[int] | None = None,
        nranks: int | None = None,
        ranks: Sequence[int] | None = None,
        local: Any = None,
    ) -> None:
        if not isinstance(handle, MpHandle):
            raise TypeError(f"handle must be an MpHandle, not {type(handle).__name__}")
        ext = tuple(extents)
        per = tuple(ranks_per_mode) if ranks_per_mode is not None else (1,) * len(ext)
        if nranks is None:  # every rank of the communicator (C takes no default)
            nranks = handle.size if ranks is None else len(ranks)
        # The documented rules, checked on the host first (each names the argument).
        self.distribution = Distribution(
            ext, per, None if block_sizes is None else tuple(block_sizes), nranks,
            None if ranks is None else tuple(ranks),
        )  # fmt: skip
        assert self.distribution.ranks is not None
        outside = [r for r in self.distribution.ranks if r >= handle.size]
        if outside:
            raise ValueError(
                f"ranks {outside} are not in the communicator, which has {handle.size} ranks"
            )
        self.data_type = data_type_name(dtype)
        self.dtype = dtype_of_data_type(self.data_type)
        self.handle = handle
        d = self.distribution
        assert d.ranks is not None and d.nranks is not None and d.block_sizes is not None
        desc = mpb.cutensorMpTensorDescriptor_t()
        raw_mp.cutensorMpCreateTensorDescriptor(
            handle, ctypes.byref(desc), d.ndim, int64s(d.extents), None,
            int64s(d.block_sizes), None, int64s(d.ranks_per_mode), d.nranks,
            c_array(ctypes.c_int32, d.ranks), data_type_value(self.data_type),
        )  # fmt: skip
        super().__init__(
            int(desc.value or 0), raw_mp.cutensorMpDestroyTensorDescriptor, parents=(handle,)
        )
        # What this rank holds, as cuTENSORMp realised it (never computed here).
        n = d.ndim
        attr = mpb.cutensorMpTensorDescriptorAttribute_t
        self.local_extents = _get_attribute(handle, self, attr.LOCAL_EXTENT, ctypes.c_int64, n)
        self.local_strides = _get_attribute(
            handle, self, attr.LOCAL_ELEMENT_STRIDE, ctypes.c_int64, n
        )
        self.local_block_sizes = _get_attribute(
            handle, self, attr.LOCAL_BLOCK_SIZE, ctypes.c_int64, n
        )
        self.local_block_strides = _get_attribute(
            handle, self, attr.LOCAL_BLOCK_STRIDE, ctypes.c_int64, n
        )
        (self.local_storage_bytes,) = _get_attribute(
            handle, self, attr.LOCAL_STORAGE_SIZE, ctypes.c_uint64, 1
        )
        self.local = self._shard(local)

    def _shard(self, local: Any) -> Any:

        elements = -(-self.local_storage_bytes // self.dtype.itemsize)
        if local is None:
            if not elements:
                return None
            return DeviceArray.empty(elements, self.dtype, device=self.handle.device_id)
        view = array_view(local, "local")
        if not view.is_device or view.device_id != self.handle.device_id:
            raise ValueError(
                f"local must be device memory on this rank's device {self.handle.device_id}"
            )
        if view.dtype != self.dtype:
            raise TypeError(f"local has dtype {view.dtype}, the tensor {self.dtype}")
        if view.ndim != 1 or view.strides != (1,) or view.shape[0] < elements:
            # cuTENSORMp addresses the shard by element offsets from its start.
            raise ValueError(
                f"local must be a 1-D contiguous device array of at least {elements} elements "
                f"(the {self.local_storage_bytes} bytes cuTENSORMp stores this rank's shard in); "
                f"got shape {view.shape}, strides {view.strides}"
            )
        return local

    @property
    def data_ptr(self) -> int:
        """Device address of the local shard (0 on a rank that holds nothing)."""
        if self.local is None:
            return 0

        return array_view(self.local, "local").ptr

    def local_offsets(self) -> np.ndarray:
        """Element offsets of the shard's elements in its buffer (local extents' shape), by the
        header's formula ``sum_i(floor(l_i / B_i) * blockStride_i + (l_i % B_i) * stride_i)``
        with the values cuTENSORMp reported."""
        offsets = np.zeros(self.local_extents, dtype=np.int64)
        for i, (n, b, bs, es) in enumerate(
            zip(self.local_extents, self.local_block_sizes, self.local_block_strides,
                self.local_strides, strict=True)
        ):  # fmt: skip
            local = np.arange(n, dtype=np.int64)
            shape = [1] * self.ndim
            shape[i] = n
            block = max(b, 1)
            offsets = offsets + ((local // block) * bs + (local % block) * es).reshape(shape)
        return offsets

    def local_to_numpy(self) -> np.ndarray:
        """This rank's shard as a NumPy array of its local extents (waits for the copy)."""
        if self.local is None or not math.prod(self.local_extents):
            return np.empty(self.local_extents, dtype=self.dtype)

        flat = DeviceArray.from_array(self.local).to_numpy().reshape(-1)
        out: np.ndarray = flat[self.local_offsets()]
        return out

    def local_from_numpy(self, shard: np.ndarray) -> None:
        """Write this rank's shard (local extents) into its buffer (waits for the copy)."""
        shard = np.asarray(shard, dtype=self.dtype)
        if shard.shape != self.local_extents:
            raise ValueError(f"shard has shape {shard.shape}, local extents {self.local_extents}")
        if self.local is None:
            return

        arr = DeviceArray.from_array(self.local)
        flat = arr.to_numpy().reshape(-1)
        flat[self.local_offsets()] = shard
        arr.copy_from_numpy(flat.reshape(arr.shape))

    def __repr__(self) -> str:
        d = self.distribution
        return (
            f"<DistributedTensor {self.data_type} extents {d.extents} grid {d.ranks_per_mode} "
            f"blocks {d.block_sizes}; rank {self.handle.rank} holds {self.local_extents}>"
        )
