"""Legacy (pre-graph) cuDNN operations as Python functions over arrays.

Each function takes arrays (``DeviceArray``, or any array with DLPack or
``__cuda_array_interface__``: CuPy, PyTorch, JAX, Numba), builds the legacy descriptors from their
shapes, strides and dtypes, checks everything in Python first (see
:func:`pycudnn.tensor.check_operand`), and runs the cuDNN call. Each ends with the keywords of
:class:`LaunchKeywords` (the blending scalars ``alpha`` and ``beta``, the ``handle`` and the
``stream`` to run on), documented and given their defaults once, there.

Results follow cuDNN's blending rule ``y = alpha * op(x) + beta * y``. When ``y`` is not given a
``DeviceArray`` is allocated in the memory order of the input (so NHWC in, NHWC out) and ``beta``
must be 0. The scalars are passed as host ``float`` for float, half and bfloat16 data and as
``double`` for double data, as cuDNN requires.

cuDNN 9 deprecates most of these functions in favour of the graph API (:class:`pycudnn.Graph`);
they still work, and each emits one ``DeprecationWarning`` per process on first use.
:func:`softmax_forward` and :func:`softmax_backward` are not deprecated.

The backward routines take the forward's settings and arrays in the C functions' argument order
(``activation_backward(y, dy, x)``, ``pooling_backward(y, dy, x)``) and return the gradient
(``dx``, ``dw`` or ``db``), allocated when not given, under the same blending rule.

One module per family, each importing only ``_common`` and ``_launch`` (the launch keywords):
``convolution``, ``activation`` (with softmax), ``pooling``, ``transform`` (layout transforms,
tensor add, op-tensor), ``reduce``; ``convolution_backward`` (data, filter and bias gradients)
also reuses ``convolution``'s descriptor helpers. ``smoke`` holds the CLI's smoke checks.
"""

from __future__ import annotations

from ._launch import LaunchKeywords
from .activation import (
    ActivationKeywords,
    activation_backward,
    activation_forward,
    softmax_backward,
    softmax_forward,
)
from .convolution import convolution_forward
from .convolution_backward import (
    convolution_backward_bias,
    convolution_backward_data,
    convolution_backward_filter,
)
from .pooling import PoolingKeywords, pooling_backward, pooling_forward
from .reduce import reduce_tensor
from .smoke import smoke_checks
from .transform import add_tensor, op_tensor, transform_tensor

__all__ = [
    "ActivationKeywords",
    "LaunchKeywords",
    "PoolingKeywords",
    "activation_backward",
    "activation_forward",
    "add_tensor",
    "convolution_backward_bias",
    "convolution_backward_data",
    "convolution_backward_filter",
    "convolution_forward",
    "op_tensor",
    "pooling_backward",
    "pooling_forward",
    "reduce_tensor",
    "smoke_checks",
    "softmax_backward",
    "softmax_forward",
    "transform_tensor",
]
