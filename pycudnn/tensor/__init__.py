"""Legacy cuDNN descriptors: tensors, filters, convolutions, pooling, activations, reductions.

Each class owns one C descriptor (a :class:`~_nvbind.resource.CResource`): ``close()``,
``with`` and garbage collection destroy it once. Arguments are checked in Python before C is
called, with messages that name the argument and the rule; what the library reports back is read
back from it (``dims``, ``strides``, ``size_in_bytes``...).

Dims are always given in logical order (``N, C, [D,] H, W``; ``K, C, [T,] R, S`` for filters). A
layout is given either as explicit strides (in elements) or as a format string of
:mod:`pycudnn.layout` (``"NCHW"``, ``"NHWC"``, ``"CHWN"``, ``"NCDHW"``, ``"NC/32HW32"``...).

cuDNN 9 deprecates every descriptor here except :class:`TensorDescriptor` (the graph API replaces
them); they still work, and the first use of each emits one ``DeprecationWarning`` per process.

:func:`check_operand` is the validation every pycudnn operation applies to its array arguments.

One module per kind, imports pointing one way: ``_common`` (argument checks, C calls, data
types) <- ``descriptor`` (tensors) <- ``filter`` <- ``convolution``; ``pooling``, ``activation``,
``op_tensor``, ``reduce`` and ``operand`` build on the first two or three.
"""

from __future__ import annotations

from ._common import TensorCoreWarning, legacy_data_type
from .activation import ActivationDescriptor
from .convolution import ConvolutionDescriptor
from .descriptor import TensorDescriptor
from .filter import FilterDescriptor
from .op_tensor import OpTensorDescriptor
from .operand import check_operand
from .pooling import PoolingDescriptor
from .reduce import ReduceTensorDescriptor

__all__ = [
    "ActivationDescriptor",
    "ConvolutionDescriptor",
    "FilterDescriptor",
    "OpTensorDescriptor",
    "PoolingDescriptor",
    "ReduceTensorDescriptor",
    "TensorCoreWarning",
    "TensorDescriptor",
    "check_operand",
    "legacy_data_type",
]
