"""The library's cuTENSOR calls, interpreted on the CPU as cuTENSOR's documentation defines them.

The interpreter lives in ``tests/cutensor_interpreter.py`` (kept apart to stay under 600 lines).
Every cuTENSOR function that planning and executing call is replaced by a stand-in reached through
a real ctypes round trip: a ``CFUNCTYPE`` callback with the prototype written from ``cutensor.h``
(pointers as addresses), called through a C function pointer with the library's prototype
(``_bindings.FUNCTIONS``), so each argument is converted to C and read back as cuTENSOR would
read it. The stand-ins record what the library passes (numModes, the int64 extents and strides in elements, the
``cudaDataType_t``, the alignment; each operand's descriptor, int32 mode array and unary
operator, the binary operators and the compute descriptor) and, at execute, read the scalars from
their host pointers in the operation's scalar type (what ``SCALAR_TYPE`` answered), read the
operands from the pointers in the C API's order through the recorded descriptors, compute the
result with NumPy as ``cutensor.h`` defines the operation, and write it through the output's
descriptor. The arrays are NumPy buffers handed to the library as DeviceArrays at their host
addresses; an address outside those buffers, an operand pointer below the alignment its
descriptor claims, or a mode whose extent differs between tensors is an error here. Mutating one
argument of the library (alpha and beta swapped, opA given for B, strides in bytes, float64
scalars for a float32 SCALAR_TYPE, opAB and opABC swapped, D for C at execute, an operator enum
off by one, einsum's "one" read as alpha) makes these tests fail.

Then random cases (contractions with batch, contracted and free modes, broadcasts, transposed,
strided and offset operands, every unary operator the library's tables allow per data type, the
binary and reduction operators, alpha/beta/gamma, fp16/bf16/fp32/fp64/complex64/complex128 with
their compute types) go through the public functions (:func:`pycutensor.contract`, ...,
:func:`pycutensor.einsum`; about 1,500 executes per run) and :meth:`Plan.execute` /
:meth:`Plan.launch` of operation objects, and the output buffer must hold NumPy's
answer computed from the user's arrays. What the undocumented ``SCALAR_TYPE`` of elementwise
operations, permutations and reductions is, is not known here: the stand-in answers by two rules
(the output's type, or the compute type's) and the library must follow either.

What this proves: the library's arguments mean, by cuTENSOR's documented semantics, what the
library's own documentation promises. What it cannot prove: anything about cuTENSOR itself (its
kernels, precision, NaN handling, the real ``SCALAR_TYPE`` answers): ``test_cutensor_gpu.py``.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pycutensor
from _nvbind import memory
from pycutensor import _lib
from pycutensor.operations import ElementwiseTrinary, Reduction
from pycutensor.tensor import TensorDescriptor
from tests.cutensor_interpreter import (
    ALL_DTYPES,
    BINARY,
    BINARY_BY_NAME,
    COMPUTE_PTR,
    DOMAIN,
    LAYOUTS,
    NP_OF,
    UNARY,
    UNARY_BY_NAME,
    Interpreter,
    _through_ctypes,
    assert_result,
    dtype_of,
    extents,
    like,
    make,
    modes,
    onto,
    operator_value,
    pick,
    rows,
    scalar,
    stand_in_handle,
    unary_ops,
    wide,
)
from tests.test_einsum_plan import WIDER, problems

CASES = 40


@pytest.fixture(params=["output", "compute"])
def cu(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Interpreter]:
    interp = Interpreter(request.param)
    for name, impl in interp.functions().items():
        monkeypatch.setitem(_lib.LIB._bound, name, _through_ctypes(name, impl, interp))
    for name, ptr in COMPUTE_PTR.items():
        monkeypatch.setitem(_lib._compute_descriptors, name, ptr)
    interp.handle = stand_in_handle()
    yield interp
    # every C object the library made is destroyed while the stand-ins are still in place
    interp.handle.clear_cached_operations()
    gc.collect()
    assert not interp.errors, interp.errors


# -- the functions on arrays --------------------------------------------------------------------
def test_contract(cu: Interpreter) -> None:
    rng = np.random.default_rng(1)
    h = cu.handle
    for case in range(CASES):
        *types, compute = pick(rng, rows("contraction", 3))
        da, db, dc = (dtype_of(NP_OF[t]) for t in types)
        batch, contracted, free_a, free_b = "b"[: rng.integers(2)], "kl"[: rng.integers(3)], \
            "ij"[: rng.integers(3)], "mn"[: rng.integers(3)]  # fmt: skip
        n = extents(rng, batch + contracted + free_a + free_b)
        la, lb, lc = (modes(rng, batch + contracted + free_a), modes(rng, batch + contracted + free_b),
                      modes(rng, batch + free_a + free_b))  # fmt: skip
        op_a, lo_a, hi_a = operator_value(rng, da)
        op_b, lo_b, hi_b = operator_value(rng, db)
        bcast = la.index("b") if "b" in la and rng.random() < 0.3 else None
        a, a_dev = make(cu, rng, tuple(n[c] for c in la), da, pick(rng, LAYOUTS), lo_a, hi_a, bcast)
        b, b_dev = make(cu, rng, tuple(n[c] for c in lb), db, pick(rng, LAYOUTS), lo_b, hi_b)
        c, c_dev = make(cu, rng, tuple(n[c] for c in lc), dc, pick(rng, LAYOUTS))
        alpha, beta = scalar(rng, dc, (1.0, 0.5, -1.25)), scalar(rng, dc, (0.0, 1.0, 0.75))
        c0 = wide(c)
        expected = alpha * np.einsum(f"{la},{lb}->{lc}", UNARY[UNARY_BY_NAME[op_a]](wide(a)),
                                     UNARY[UNARY_BY_NAME[op_b]](wide(b))) + beta * c0  # fmt: skip
        out, out_dev = like(cu, c) if rng.random() < 0.4 else (c, None)
        pycutensor.contract(a_dev, la, b_dev, lb, c_dev, lc, alpha=alpha, beta=beta, out=out_dev,
                            op_a=op_a, op_b=op_b, compute_type=compute, handle=h)  # fmt: skip
        what = (case, types, compute, la, lb, lc, op_a, op_b, alpha, beta)
        assert cu.executes[-1][1]["compute"] == compute, what
        assert_result(out, expected, what)


def test_elementwise(cu: Interpreter) -> None:
    rng = np.random.default_rng(2)
    h = cu.handle
    for case in range(2 * CASES):
        trinary = case % 2 == 1
        kind = "elementwise_trinary" if trinary else "elementwise_binary"
        *types, compute = pick(rng, rows(kind, 3 if trinary else 2))
        dts = [dtype_of(NP_OF[t]) for t in types]
        lo = modes(rng, "pqrs"[: rng.integers(1, 5)])
        n = extents(rng, lo)
        ins = [modes(rng, "".join(c for c in lo if rng.random() < 0.7)) for _ in dts[:-1]]
        ops = [operator_value(rng, dt) for dt in dts]
        arrays = [make(cu, rng, tuple(n[c] for c in lab), dt, pick(rng, LAYOUTS), o[1], o[2])
                  for lab, dt, o in zip([*ins, lo], dts, ops, strict=True)]  # fmt: skip
        real = all(dt.kind != "c" for dt in dts)
        binary = [pick(rng, ("add", "mul", "max", "min") if real else ("add", "mul"))
                  for _ in range(2 if trinary else 1)]  # fmt: skip
        sc = [scalar(rng, dts[-1], (1.0, 0.5, -1.5, 0.0)) for _ in dts]
        terms = [s * onto(UNARY[UNARY_BY_NAME[o[0]]](wide(x)), lab, lo)
                 for s, o, (x, _), lab in zip(sc, ops, arrays, [*ins, lo], strict=True)]  # fmt: skip
        expected = BINARY[BINARY_BY_NAME[binary[0]]](terms[0], terms[1])
        if trinary:
            expected = BINARY[BINARY_BY_NAME[binary[1]]](expected, terms[2])
        out, out_dev = like(cu, arrays[-1][0]) if rng.random() < 0.4 else (arrays[-1][0], None)
        devs = [d for _, d in arrays]
        if trinary:
            pycutensor.elementwise_trinary(
                devs[0], ins[0], devs[1], ins[1], devs[2], lo, alpha=sc[0], beta=sc[1],
                gamma=sc[2], out=out_dev, op_ab=binary[0], op_abc=binary[1], op_a=ops[0][0],
                op_b=ops[1][0], op_c=ops[2][0], compute_type=compute, handle=h)  # fmt: skip
        else:
            pycutensor.elementwise_binary(
                devs[0],
                ins[0],
                devs[1],
                lo,
                alpha=sc[0],
                gamma=sc[1],
                out=out_dev,
                op_ac=binary[0],
                op_a=ops[0][0],
                op_c=ops[1][0],
                compute_type=compute,
                handle=h,
            )
        what = (case, kind, types, compute, ins, lo, [o[0] for o in ops], binary, sc)
        assert cu.executes[-1][1]["compute"] == compute, what
        assert_result(out, expected, what)


def test_reduce(cu: Interpreter) -> None:
    rng = np.random.default_rng(3)
    h = cu.handle
    for case in range(CASES):
        *types, compute = pick(rng, rows("reduction", 2))
        da, dc = (dtype_of(NP_OF[t]) for t in types)
        kept, gone = "ij"[: rng.integers(3)], "kl"[: rng.integers(1, 3)]
        la, lc = modes(rng, kept + gone), modes(rng, kept)
        n = extents(rng, la)
        op_a, lo_a, hi_a = operator_value(rng, da)
        op_c, lo_c, hi_c = operator_value(rng, dc)
        real = da.kind != "c"
        op_reduce = pick(rng, ("add", "mul", "max", "min") if real else ("add", "mul"))
        a, a_dev = make(cu, rng, tuple(n[c] for c in la), da, pick(rng, LAYOUTS), lo_a, hi_a)
        c, c_dev = make(cu, rng, tuple(n[c] for c in lc), dc, pick(rng, LAYOUTS), lo_c, hi_c)
        alpha, beta = scalar(rng, dc, (1.0, 0.5, -2.0)), scalar(rng, dc, (0.0, 1.0, 0.25))
        value = UNARY[UNARY_BY_NAME[op_a]](wide(a))
        moved = np.einsum(f"{la}->{lc}{''.join(x for x in la if x not in lc)}", value)
        flat = moved.reshape([*moved.shape[: len(lc)], -1])
        reduced = BINARY[BINARY_BY_NAME[op_reduce]].reduce(flat, axis=-1)
        expected = alpha * reduced + beta * UNARY[UNARY_BY_NAME[op_c]](wide(c))
        out, out_dev = like(cu, c) if rng.random() < 0.4 else (c, None)
        pycutensor.reduce(a_dev, la, c_dev, lc, alpha=alpha, beta=beta, out=out_dev,
                          op_reduce=op_reduce, op_a=op_a, op_c=op_c, compute_type=compute,
                          handle=h)  # fmt: skip
        what = (case, types, compute, la, lc, op_a, op_c, op_reduce, alpha, beta)
        assert cu.executes[-1][1]["compute"] == compute, what
        assert_result(out, expected, what)


def test_permute(cu: Interpreter) -> None:
    rng = np.random.default_rng(4)
    h = cu.handle
    for case in range(CASES):
        *types, compute = pick(rng, rows("permutation", 2))
        da, db = (dtype_of(NP_OF[t]) for t in types)
        lb = modes(rng, "pqrs"[: rng.integers(1, 5)])
        la = modes(rng, "".join(c for c in lb if rng.random() < 0.8))
        n = extents(rng, lb)
        op_a, lo_a, hi_a = operator_value(rng, da)
        a, a_dev = make(cu, rng, tuple(n[c] for c in la), da, pick(rng, LAYOUTS), lo_a, hi_a)
        b, b_dev = make(cu, rng, tuple(n[c] for c in lb), db, pick(rng, LAYOUTS))
        alpha = scalar(rng, db, (1.0, 0.5, -2.0))
        expected = alpha * onto(UNARY[UNARY_BY_NAME[op_a]](wide(a)), la, lb)
        expected = expected + np.zeros(b.shape)
        pycutensor.permute(a_dev, la, b_dev, lb, alpha=alpha, op_a=op_a, compute_type=compute,
                           handle=h)  # fmt: skip
        what = (case, types, compute, la, lb, op_a, alpha)
        assert cu.executes[-1][1]["compute"] == compute, what
        assert_result(b, expected, what)


def test_contract_trinary(cu: Interpreter) -> None:
    rng = np.random.default_rng(5)
    h = cu.handle
    for case in range(CASES // 2):
        *types, compute = pick(rng, rows("contraction_trinary", 4))
        dt = dtype_of(NP_OF[types[0]])
        la, lb, lc, ld = modes(rng, "ikx"), modes(rng, "kjy"[: rng.integers(2, 4)]), \
            modes(rng, "xm"), modes(rng, "ijm")  # fmt: skip
        n = extents(rng, "ijkmxy")
        ops = [operator_value(rng, dt) for _ in range(4)]
        arrays = [make(cu, rng, tuple(n[c] for c in lab), dt, pick(rng, LAYOUTS), o[1], o[2])
                  for lab, o in zip((la, lb, lc), ops, strict=False)]  # fmt: skip
        d, d_dev = make(cu, rng, tuple(n[c] for c in ld), dt, pick(rng, LAYOUTS), *ops[3][1:])
        alpha, beta = scalar(rng, dt, (1.0, 0.5)), scalar(rng, dt, (0.0, 1.0, 0.75))
        values = [
            UNARY[UNARY_BY_NAME[o[0]]](wide(x)) for o, (x, _) in zip(ops, arrays, strict=False)
        ]
        op_d = UNARY[UNARY_BY_NAME[ops[3][0]]]
        expected = alpha * np.einsum(f"{la},{lb},{lc}->{ld}", *values) + beta * op_d(wide(d))
        devs = [x for _, x in arrays]
        pycutensor.contract_trinary(devs[0], la, devs[1], lb, devs[2], lc, d_dev, ld, alpha=alpha,
                                    beta=beta, op_a=ops[0][0], op_b=ops[1][0], op_c=ops[2][0], op_d=ops[3][0],
                                    compute_type=compute, handle=h)  # fmt: skip
        what = (case, types, compute, la, lb, lc, ld, [o[0] for o in ops], alpha, beta)
        assert_result(d, expected, what)


# -- einsum: its program's steps, each a cuTENSOR call ------------------------------------------
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(problem=problems(), layouts=st.lists(st.sampled_from(LAYOUTS), min_size=5, max_size=5),
       scalars=st.sampled_from([(1.0, 0.0), (0.5, 0.0), (-2.0, 1.0), (1.0, 0.25)]),
       wider=st.booleans())  # fmt: skip
def test_einsum(cu: Interpreter, monkeypatch: pytest.MonkeyPatch, problem: Any,  # noqa: PLR0917
                layouts: list[str], scalars: tuple[float, float], wider: bool) -> None:  # fmt: skip
    subscripts, arrays, optimize = problem
    if optimize == "path-of-numpy":
        optimize = "greedy"
    # intermediates and workspace: the program's block from the device pool, here a host buffer
    monkeypatch.setattr(memory, "workspace", lambda n, **kw: cu.buffer(n).ctypes.data)
    rng = np.random.default_rng(0)
    try:
        want = np.einsum(subscripts, *(wide(a) for a in arrays))
    except ValueError:
        return
    result = np.result_type(*arrays)
    out_dtype = np.dtype(WIDER[result.name][-1]) if wider and result.name in WIDER else result
    alpha, beta = scalars if out_dtype == result else (scalars[0], 0.0)
    devs = [make(cu, rng, a.shape, a.dtype, layouts[i % 4], values=a)[1]
            for i, a in enumerate(arrays)]  # fmt: skip
    out, out_dev = make(cu, rng, np.shape(want), out_dtype, layouts[4])
    expected = alpha * want + beta * wide(out)
    pycutensor.einsum(subscripts, *devs, out=out_dev, alpha=alpha, beta=beta, optimize=optimize,
                      handle=cu.handle)  # fmt: skip
    assert not cu.errors, cu.errors
    assert_result(out, expected, (subscripts, [a.shape for a in arrays], out_dtype, scalars))


# -- operation objects and plans ----------------------------------------------------------------
def column_major(cu: Interpreter, rng: np.random.Generator, shape: tuple[int, ...], dtype: Any,  # noqa: PLR0917
                 low: float = -1.0, high: float = 1.0) -> tuple[np.ndarray, Any]:  # fmt: skip
    """An array laid out as a descriptor made without strides describes it (first mode fastest)."""
    return make(cu, rng, shape, dtype, "f", low, high)


@pytest.mark.parametrize("how", ["execute", "execute-d", "launch"])
def test_operation_objects(cu: Interpreter, how: str) -> None:
    rng = np.random.default_rng(6)
    h = cu.handle
    for case in range(12):
        dt = dtype_of(pick(rng, ALL_DTYPES))
        real = dt.kind != "c"
        n = {c: int(rng.integers(2, 5)) for c in "ijkl"}
        ops = [operator_value(rng, dt) for _ in range(3)]
        kind = ("contraction", "reduction", "elementwise_binary", "elementwise_trinary",
                "permutation")[case % 5]  # fmt: skip
        labels = {"contraction": ("ikl", "lkj", "ij"), "reduction": ("kil", "i"),
                  "elementwise_binary": ("ji", "ij"), "elementwise_trinary": ("j", "ji", "ij"),
                  "permutation": ("ijk", "kji")}[kind]  # fmt: skip
        arrays = [column_major(cu, rng, tuple(n[c] for c in lab), dt, o[1], o[2])
                  for lab, o in zip(labels, ops, strict=False)]  # fmt: skip
        descs = [TensorDescriptor(h, x.shape, None, dt) for x, _ in arrays]
        pairs = [(d, lab) for d, lab in zip(descs, labels, strict=True)]
        sc = [scalar(rng, dt, (1.0, 0.5, -1.5)) for _ in range(3)]
        v = [UNARY[UNARY_BY_NAME[o[0]]](wide(x)) for o, (x, _) in zip(ops, arrays, strict=False)]
        x0 = [wide(x) for x, _ in arrays]
        binary = pick(rng, ("add", "mul", "max", "min") if real else ("add", "mul"))
        if kind == "contraction":
            op: Any = pycutensor.Contraction(*pairs[0], *pairs[1], *pairs[2], op_a=ops[0][0],
                                             op_b=ops[1][0])  # fmt: skip
            scalars = {"alpha": sc[0], "beta": sc[1]}
            expected = sc[0] * np.einsum("ikl,lkj->ij", v[0], v[1]) + sc[1] * x0[2]
        elif kind == "reduction":
            op = Reduction(*pairs[0], *pairs[1], op_reduce=binary, op_a=ops[0][0], op_c=ops[1][0])
            scalars = {"alpha": sc[0], "beta": sc[1]}
            moved = np.einsum("kil->ikl", v[0]).reshape(n["i"], -1)
            expected = sc[0] * BINARY[BINARY_BY_NAME[binary]].reduce(moved, axis=-1) + sc[1] * v[1]
        elif kind == "elementwise_binary":
            op = pycutensor.ElementwiseBinary(*pairs[0], *pairs[1], op_ac=binary, op_a=ops[0][0],
                                              op_c=ops[1][0])  # fmt: skip
            scalars = {"alpha": sc[0], "gamma": sc[1]}
            expected = BINARY[BINARY_BY_NAME[binary]](sc[0] * v[0].T, sc[1] * v[1])
        elif kind == "elementwise_trinary":
            op = ElementwiseTrinary(*pairs[0], *pairs[1], *pairs[2], op_ab="add", op_abc=binary,
                                    op_a=ops[0][0], op_b=ops[1][0], op_c=ops[2][0])  # fmt: skip
            scalars = {"alpha": sc[0], "beta": sc[1], "gamma": sc[2]}
            ab = sc[0] * v[0][None, :] + sc[1] * v[1].T
            expected = BINARY[BINARY_BY_NAME[binary]](ab, sc[2] * v[2])
        else:
            op = pycutensor.Permutation(*pairs[0], *pairs[1], op_a=ops[0][0])
            scalars = {"alpha": sc[0]}
            expected = sc[0] * np.einsum("ijk->kji", v[0])
        out_arr = arrays[-1][0]
        devs = [d for _, d in arrays]
        with op, op.plan() as plan:
            if how == "execute":
                plan.execute(*devs, **scalars)
            elif how == "execute-d" and op.output_shares_descriptor:
                out_arr, out_dev = like(cu, out_arr)
                plan.execute(*devs, out_dev, **scalars)
            else:
                ptrs = [d.ptr for d in devs]
                if op.output_shares_descriptor:
                    ptrs.append(ptrs[-1])
                plan.launch(ptrs, [scalars[k] for k in op.scalar_names])
        for d in descs:
            d.close()
        assert_result(out_arr, expected, (case, kind, dt, [o[0] for o in ops], binary, sc))


def test_every_operator_in_every_slot(cu: Interpreter) -> None:
    """Each unary operator the library's table allows per data type, as opA of a permutation and
    opC of a reduction; each binary operator as opAB, opABC and opReduce."""
    rng = np.random.default_rng(7)
    h = cu.handle
    for name in ALL_DTYPES:
        dt = dtype_of(name)
        for op in sorted(unary_ops(dt)):
            low, high = DOMAIN.get(op, (-1.0, 1.0))
            f = UNARY[UNARY_BY_NAME[op]]
            a, a_dev = make(cu, rng, (3, 2), dt, "perm", low, high)
            b, b_dev = make(cu, rng, (2, 3), dt)
            pycutensor.permute(a_dev, "ij", b_dev, "ji", alpha=2.0, op_a=op, handle=h)
            assert_result(b, 2.0 * f(wide(a)).T, (name, op, "op_a"))
            c, c_dev = make(cu, rng, (2,), dt, "c", low, high)
            c0 = f(wide(c))
            pycutensor.reduce(a_dev, "ij", c_dev, "j", alpha=1.0, beta=0.5, op_c=op, handle=h)
            assert_result(c, wide(a).sum(axis=0) + 0.5 * c0, (name, op, "op_c"))
    for ab in BINARY_BY_NAME:
        for abc in BINARY_BY_NAME:
            (a, a_dev), (b, b_dev), (c, c_dev) = (make(cu, rng, (4,), np.float32) for _ in "abc")
            expected = BINARY[BINARY_BY_NAME[abc]](
                BINARY[BINARY_BY_NAME[ab]](wide(a), -wide(b)), 0.5 * wide(c)
            )
            pycutensor.elementwise_trinary(a_dev, "i", b_dev, "i", c_dev, "i", beta=-1.0,
                                           gamma=0.5, op_ab=ab, op_abc=abc, handle=h)  # fmt: skip
            assert_result(c, expected, (ab, abc))
        a, a_dev = make(cu, rng, (3, 5), np.float64)
        d, d_dev = make(cu, rng, (3,), np.float64)
        pycutensor.reduce(a_dev, "ij", d_dev, "i", op_reduce=ab, handle=h)
        assert_result(d, BINARY[BINARY_BY_NAME[ab]].reduce(wide(a), axis=1), ("reduce", ab))
