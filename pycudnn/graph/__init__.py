"""Fused cuDNN graphs in a few lines: tensors, operations, and the checks that catch mistakes early.

>>> g = pycudnn.Graph("conv_bias_relu")
>>> x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
>>> w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
>>> b = g.tensor([1, 32, 1, 1], fmt="NHWC", dtype="float16", name="bias")
>>> y = g.relu(g.add(g.conv_fprop(x, w, padding=1), b))
>>> plan = g.build()                                  # heuristics -> execution plan
>>> plan.execute({x: x_gpu, w: w_gpu, b: b_gpu, y: y_gpu})

Dims are given in logical order (N, C, [D,] H, W for convolutions; batch..., M, N for matmul); the
layout is the strides, or a format string (``fmt="NHWC"``) that becomes strides. Operations return
their output tensor with its dims computed (convolution output formula, matmul ``[..., M, N]``,
pointwise broadcast, reduction from ``axes``). An op output that only feeds other ops and is not
marked with :meth:`Tensor.set_output` becomes a *virtual* tensor (never in memory, fp32 by default);
one that feeds nothing is a graph output, in the graph's ``io_dtype`` or else the dtype of the
inputs it was computed from.

Every mistake the graph can see is reported when the operation is added, naming the operation and
the tensor: ``conv_fprop 'conv1': X has 64 channels but W expects 32 (W dims [32, 32, 3, 3])``.
What only cuDNN can judge is reported by :meth:`Graph.finalize` (or ``build``), with cuDNN's reason
and the operation's name.

Planning, execution, autotuning and caching are in :mod:`pycudnn.plan`; :meth:`Graph.build` and
:meth:`Graph.autotune` are the entry points.

Threads: cuDNN is thread-safe as long as threads do not use one handle at the same time, and
promises nothing about sharing descriptors or plans. So build, finalize and plan a graph on one
thread (several threads may each build their own graphs at once); share a
:class:`~pycudnn.DeviceProperties` or a :class:`~pycudnn.plan.PlanCache` freely (both lock); keep
a :class:`~pycudnn.Plan` to one thread at a time (the default plan cache is per thread for that
reason). Backend descriptors and plans cannot be copied (a copy would be a second owner of the
same cuDNN object): build another one.
"""

from __future__ import annotations

# The described graph's names, re-exported: Graph (an operation graph with the planning entry
# points) is the one this package adds.
from .. import opgraph as _opgraph
from ..opgraph import *  # noqa: F403
from .graph import Graph

__all__ = ["Graph"]
__all__ += _opgraph.__all__
