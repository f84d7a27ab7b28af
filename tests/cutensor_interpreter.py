"""A CPU interpreter of the cuTENSOR calls pycutensor makes, for ``test_cutensor_call_semantics.py``
(which says what it proves): stand-ins for the raw functions that record their arguments and compute
each execute with NumPy as ``cutensor.h`` defines it, and the arrays and helpers its tests use."""

from __future__ import annotations

import ctypes
import string
import threading
import traceback
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from _nvbind.resource import CResource
from pycutensor import _bindings, tables
from pycutensor.handle import DEFAULT_PLAN_CACHE_SIZE, Handle, OperationCache
from tests.standins import fake_device_array

# -- cuTENSOR's constants, from the headers (not from the bindings under test) -------------------
# cudaDataType_t (library_types.h, which cutensor/types.h's CUTENSOR_R_* constants alias).
DTYPES = {0: np.dtype(np.float32), 1: np.dtype(np.float64), 2: np.dtype(np.float16),
          4: np.dtype(np.complex64), 5: np.dtype(np.complex128),
          14: np.dtype(ml_dtypes.bfloat16)}  # fmt: skip
TYPE_VALUE = {dt: v for v, dt in DTYPES.items()}
# cutensorOperator_t (cutensor/types.h 2.8).
UNARY: dict[int, Callable[[Any], Any]] = {
    1: lambda x: x, 2: np.sqrt, 8: lambda x: np.maximum(x, 0), 9: np.conj, 10: lambda x: 1 / x,
    11: lambda x: 1 / (1 + np.exp(-x)), 12: np.tanh, 22: np.exp, 23: np.log, 24: np.abs,
    25: np.negative, 26: np.sin, 27: np.cos, 28: np.tan, 29: np.sinh, 30: np.cosh,
    31: np.arcsin, 32: np.arccos, 33: np.arctan, 34: np.arcsinh, 35: np.arccosh,
    36: np.arctanh, 37: np.ceil, 38: np.floor,
    39: lambda x: x * np.tanh(np.log1p(np.exp(x))),  # MISH: x*tanh(softplus(x))
    40: lambda x: x / (1 + np.exp(-x)),  # SWISH: x*sigmoid(x)
    41: lambda x: np.log(np.exp(x) + 1),  # SOFT_PLUS
    42: lambda x: x / (np.abs(x) + 1),  # SOFT_SIGN
}  # fmt: skip
UNARY_BY_NAME = {"identity": 1, "sqrt": 2, "relu": 8, "conj": 9, "rcp": 10, "sigmoid": 11,
                 "tanh": 12, "exp": 22, "log": 23, "abs": 24, "neg": 25, "sin": 26, "cos": 27,
                 "tan": 28, "sinh": 29, "cosh": 30, "asin": 31, "acos": 32, "atan": 33,
                 "asinh": 34, "acosh": 35, "atanh": 36, "ceil": 37, "floor": 38, "mish": 39,
                 "swish": 40, "soft_plus": 41, "soft_sign": 42}  # fmt: skip
BINARY = {3: np.add, 5: np.multiply, 6: np.maximum, 7: np.minimum}
BINARY_BY_NAME = {"add": 3, "mul": 5, "max": 6, "min": 7}
SCALAR_TYPE_ATTR, REQUIRED_WORKSPACE = (
    1,
    0,
)  # ..._DESCRIPTOR_SCALAR_TYPE, CUTENSOR_PLAN_REQUIRED_WORKSPACE
COMPUTE_PTR = {name: 0xC0DE_0000 + 0x10 * i for i, name in enumerate(tables.COMPUTE_TYPES)}
COMPUTE_NAME = {p: n for n, p in COMPUTE_PTR.items()}
F32, F64, C32, C64 = 0, 1, 4, 5


class CallError(AssertionError):
    """An argument cuTENSOR would reject or misread."""


class Interpreter:
    """What cuTENSOR would hold and do, for the calls the library makes."""

    def __init__(self, scalar_rule: str) -> None:
        self.scalar_rule = (
            scalar_rule  # "output" or "compute": SCALAR_TYPE of the undocumented kinds
        )
        self.errors: list[str] = []
        self.objects: dict[int, Any] = {}
        self.next = 0x10_0000
        self.buffers: list[tuple[int, int]] = []
        self.executes: list[tuple[str, dict[str, Any]]] = []
        self.keep: list[Any] = []
        self.handle: Handle

    def new(self, value: Any) -> int:
        self.next += 0x100
        self.objects[self.next] = value
        return self.next

    def get(self, ptr: int | None, kind: str) -> Any:
        obj = self.objects.get(ptr or 0)
        if obj is None or obj[0] != kind:
            raise CallError(f"0x{ptr or 0:x} is no live {kind}")
        return obj

    # -- memory ---------------------------------------------------------------------------------
    def buffer(self, nbytes: int) -> np.ndarray:
        """A 256-byte aligned host buffer that execute calls may address."""
        raw = np.zeros(nbytes + 512, np.uint8)
        start = -raw.ctypes.data % 256
        buf = raw[start : start + nbytes + 256]
        self.keep.append(raw)
        self.buffers.append((buf.ctypes.data, buf.ctypes.data + buf.nbytes))
        return buf

    def tensor(self, ptr: int | None, desc: Any) -> np.ndarray:
        _, extents, strides, dtype, alignment = desc
        if not ptr:
            raise CallError("a NULL tensor pointer")
        if ptr % alignment:
            raise CallError(f"pointer 0x{ptr:x} below its descriptor's alignment {alignment}")
        span = (
            sum((n - 1) * s for n, s in zip(extents, strides, strict=True)) + 1
        ) * dtype.itemsize
        if not any(lo <= ptr and ptr + span <= hi for lo, hi in self.buffers):
            raise CallError(f"0x{ptr:x} + {span} bytes is outside every buffer")
        flat = np.frombuffer((ctypes.c_char * span).from_address(ptr), dtype=dtype)
        return np.lib.stride_tricks.as_strided(flat, extents, [s * dtype.itemsize for s in strides])

    def scalar(self, ptr: int | None, op: Any) -> Any:
        dt = DTYPES[self.scalar_type(op)]
        if not ptr:
            raise CallError("a NULL scalar pointer")
        return np.frombuffer((ctypes.c_char * dt.itemsize).from_address(ptr), dtype=dt)[0]

    def scalar_type(self, op: Any) -> int:
        kind, tensors, _, compute = op
        out = tensors[-1][0][3]
        complex_ = out.kind == "c"
        if kind.startswith("contraction") or self.scalar_rule == "output":
            # the contraction tables' typeScalar column: R_32F for 16-bit data, else C's (D's) type
            if out.itemsize == 2:
                return F32
            return TYPE_VALUE[out]
        wide = compute == "64F"
        if compute in ("16F", "16BF") and not complex_:
            return 2 if compute == "16F" else 14
        return (C64 if wide else C32) if complex_ else (F64 if wide else F32)

    # -- the C functions ---------------------------------------------------------------------------
    def functions(self) -> dict[str, Callable[..., int]]:
        """The stand-ins, taking every argument as cutensor.h declares it (pointers as addresses)."""

        def put(addr: int, value: int, ctype: Any = ctypes.c_uint64) -> None:
            if not addr:
                raise CallError("a NULL out-parameter")
            ctype.from_address(addr).value = value

        def create_tensor(  # noqa: PLR0917 - cutensor.h's arguments
            h: int, out: int, n: int, ext: int, st: int, dt: int, al: int
        ) -> int:
            if dt not in DTYPES:
                raise CallError(f"data type {dt}")
            extents = tuple((ctypes.c_int64 * n).from_address(ext)) if n else ()
            strides = tuple((ctypes.c_int64 * n).from_address(st)) if n else ()
            if any(e <= 0 for e in extents) or any(s <= 0 for s in strides):
                raise CallError(f"extents {extents} strides {strides}")
            put(out, self.new(("tensor", extents, strides, DTYPES[dt], al)))
            return 0

        def operand(d: int, modes: int, op: int | None = 1) -> tuple[Any, tuple[int, ...], int]:
            desc = self.get(d, "tensor")
            if op not in UNARY:
                raise CallError(f"unary operator {op}")
            n = len(desc[1])
            return desc, tuple((ctypes.c_int32 * n).from_address(modes)) if n else (), int(op or 0)

        def creator(kind: str, shape: str) -> Callable[..., int]:
            # shape: per tensor "u" (descriptor, modes, unary op) or "o" (the output: no op), then
            # "b" per binary operator, then the compute descriptor
            def create(h: int, out: int, *args: Any) -> int:
                tensors, binary, i = [], [], 0
                for part in shape:
                    if part == "u":
                        tensors.append(operand(args[i], args[i + 1], args[i + 2]))
                        i += 3
                    elif part == "o":
                        tensors.append(operand(args[i], args[i + 1]))
                        i += 2
                    else:
                        if args[i] not in BINARY:
                            raise CallError(f"binary operator {args[i]}")
                        binary.append(int(args[i]))
                        i += 1
                compute = COMPUTE_NAME.get(args[i])
                if compute is None:
                    raise CallError(f"compute descriptor {args[i]}")
                self.check_modes(kind, tensors)
                put(out, self.new(("op", (kind, tuple(tensors), tuple(binary), compute))))
                return 0

            return create

        def get_attribute(h: int, op: int, attr: int, buf: int, size: int) -> int:
            desc = self.get(op, "op")[1]
            if attr == SCALAR_TYPE_ATTR:
                if size != 4:
                    raise CallError(f"SCALAR_TYPE read with {size} bytes")
                put(buf, self.scalar_type(desc), ctypes.c_int32)
            else:
                ctypes.memset(buf, 0, size)
            return 0

        def create_preference(h: int, out: int, algo: int, jit: int) -> int:
            put(out, self.new(("pref", algo, jit)))
            return 0

        def create_plan(h: int, out: int, op: int, pref: int, limit: int) -> int:
            self.get(pref, "pref")
            put(out, self.new(("plan", self.get(op, "op"))))
            return 0

        def plan_attribute(h: int, plan: int, attr: int, buf: int, size: int) -> int:
            self.get(plan, "plan")
            ctypes.memset(buf, 0, size)  # CUTENSOR_PLAN_REQUIRED_WORKSPACE: none
            return 0

        def estimate(h: int, op: int, pref: int, which: int, out: int) -> int:
            self.get(op, "op")
            put(out, 0)
            return 0

        def destroy(ptr: int | None) -> int:
            if self.objects.pop(ptr or 0, None) is None:
                raise CallError(f"destroying 0x{ptr or 0:x}, no live object")
            return 0

        fns: dict[str, Callable[..., int]] = {
            "cutensorCreateTensorDescriptor": create_tensor,
            "cutensorCreateContraction": creator("contraction", "uuuo"),
            "cutensorCreateContractionTrinary": creator("contraction_trinary", "uuuuo"),
            "cutensorCreateReduction": creator("reduction", "uuob"),
            "cutensorCreateElementwiseBinary": creator("elementwise_binary", "uuob"),
            "cutensorCreateElementwiseTrinary": creator("elementwise_trinary", "uuuobb"),
            "cutensorCreatePermutation": creator("permutation", "uo"),
            "cutensorOperationDescriptorGetAttribute": get_attribute,
            "cutensorOperationDescriptorSetAttribute": lambda *a: 0,
            "cutensorCreatePlanPreference": create_preference,
            "cutensorPlanPreferenceSetAttribute": lambda *a: 0,
            "cutensorEstimateWorkspaceSize": estimate,
            "cutensorCreatePlan": create_plan,
            "cutensorPlanGetAttribute": plan_attribute,
            "cutensorDestroyTensorDescriptor": destroy,
            "cutensorDestroyOperationDescriptor": destroy,
            "cutensorDestroyPlanPreference": destroy,
            "cutensorDestroyPlan": destroy,
        }
        # The execute calls, each with its arguments in cutensor.h's order.
        fns["cutensorContract"] = lambda h, p, al, a, b, be, c, d, w, n, s: self.execute(
            p, "contraction", (al, be), (a, b, c), d
        )
        fns["cutensorContractTrinary"] = lambda h, p, al, a, b, c, be, d, e, w, n, s: self.execute(
            p, "contraction_trinary", (al, be), (a, b, c, d), e
        )
        fns["cutensorReduce"] = lambda h, p, al, a, be, c, d, w, n, s: self.execute(
            p, "reduction", (al, be), (a, c), d
        )
        fns["cutensorElementwiseBinaryExecute"] = lambda h, p, al, a, g, c, d, s: self.execute(
            p, "elementwise_binary", (al, g), (a, c), d
        )
        fns["cutensorElementwiseTrinaryExecute"] = lambda h, p, al, a, be, b, g, c, d, s: (
            self.execute(p, "elementwise_trinary", (al, be, g), (a, b, c), d)
        )
        fns["cutensorPermute"] = lambda h, p, al, a, b, s: self.execute(
            p, "permutation", (al,), (a,), b
        )
        return fns

    def check_modes(self, kind: str, tensors: list[Any]) -> None:
        extent: dict[int, int] = {}
        for desc, modes, _ in tensors:
            if len(set(modes)) != len(modes):
                raise CallError(f"a mode twice in {modes}")
            for m, n in zip(modes, desc[1], strict=True):
                if extent.setdefault(m, n) != n:
                    raise CallError(f"mode {m} has extents {extent[m]} and {n}")
        *inputs, (out_desc, out_modes, _) = tensors
        last_desc, last_modes, _ = inputs[-1]
        if kind != "permutation" and (last_desc is not out_desc or last_modes != out_modes):
            # cutensor.h: descD must be identical to descC (modeD to modeC) "for now"
            raise CallError(f"{kind}: the output is not described by the last input's descriptor")
        elementwise = kind.startswith("elementwise") or kind == "permutation"
        if elementwise and not all(set(m) <= set(out_modes) for _, m, _ in inputs):
            raise CallError(f"{kind}: an input mode missing from the output")

    # -- execute: cutensor.h's definitions --------------------------------------------------------
    def execute(self, plan: int, kind: str, scalar_ptrs: tuple[Any, ...], inputs: tuple[Any, ...],
                out_ptr: Any) -> int:  # fmt: skip
        op = self.get(plan, "plan")[1][1]
        if op[0] != kind:
            raise CallError(f"{kind} executed with a plan of a {op[0]}")
        _, tensors, binary, compute = op
        scalars = [self.scalar(p, op) for p in scalar_ptrs]
        out_desc, out_modes, _ = tensors[-1]
        arrays = []
        for ptr, (desc, modes, unary), sc in zip(inputs, tensors, self.input_scalars(kind, scalars),
                                                  strict=False):  # fmt: skip
            # "If alpha is zero, A is not read and the corresponding unary operator is not applied"
            if sc is not None and sc == 0:
                arrays.append(None)
                continue
            value = self.tensor(ptr, desc).astype(
                np.complex128 if desc[3].kind == "c" else np.float64
            )
            arrays.append((UNARY[unary](value), modes))
        result = self.compute(kind, scalars, arrays, out_modes, binary)
        target = self.tensor(out_ptr, out_desc)
        for ptr, (desc, _, _) in zip(inputs, tensors, strict=False):
            if ptr != out_ptr and _overlap(ptr, desc, out_ptr, out_desc):
                raise CallError("an input overlaps the output")
        if out_desc[3].kind != "c":
            result = np.real(result)
        target[...] = np.asarray(result).astype(out_desc[3])
        self.executes.append((kind, {"compute": compute, "scalars": scalars}))
        return 0

    @staticmethod
    def input_scalars(kind: str, s: list[Any]) -> list[Any]:
        """The scalar scaling each input (None: the product's alpha, which scales no one input)."""
        s = [*s, None, None]
        return {"contraction": [None, None, s[1]], "contraction_trinary": [None] * 3 + [s[1]],
                "reduction": [s[0], s[1]], "elementwise_binary": [s[0], s[1]],
                "elementwise_trinary": [s[0], s[1], s[2]], "permutation": [s[0]]}[kind]  # fmt: skip

    @staticmethod
    def compute(kind: str, s: list[Any], arrays: list[Any], out_modes: tuple[int, ...],
                binary: tuple[int, ...]) -> Any:  # fmt: skip
        letters = {m: string.ascii_letters[i] for i, m in
                   enumerate(sorted({m for a in arrays if a for m in a[1]} | set(out_modes)))}  # fmt: skip
        out = "".join(letters[m] for m in out_modes)

        def into_out(a: Any) -> Any:  # an operand over the output's modes (broadcast where absent)
            if a is None:
                return 0.0
            value, modes = a
            full = [letters[m] for m in out_modes if m in modes]
            moved = np.einsum("".join(letters[m] for m in modes) + "->" + "".join(full), value)
            shape = [moved.shape[full.index(letters[m])] if m in modes else 1 for m in out_modes]
            return moved.reshape(shape)

        def term(scalar: Any, a: Any) -> Any:
            return 0.0 if a is None else scalar * into_out(a)

        if kind in ("contraction", "contraction_trinary"):
            *factors, addend = arrays
            spec = ",".join("".join(letters[m] for m in a[1]) for a in factors) + "->" + out
            return s[0] * np.einsum(spec, *(a[0] for a in factors)) + term(s[1], addend)
        if kind == "reduction":
            value, modes = arrays[0] if arrays[0] is not None else (None, ())
            if value is None:
                return term(s[1], arrays[1])
            kept = [m for m in modes if m in out_modes]
            gone = [m for m in modes if m not in out_modes]
            order = [modes.index(m) for m in kept + gone]
            flat = np.transpose(value, order).reshape(
                [value.shape[modes.index(m)] for m in kept] + [-1]
            )
            reduced = BINARY[binary[0]].reduce(flat, axis=-1)
            return s[0] * into_out((reduced, tuple(kept))) + term(s[1], arrays[1])
        if kind == "permutation":
            return term(s[0], arrays[0]) + np.zeros([1] * len(out_modes))
        x = BINARY[binary[0]](term(s[0], arrays[0]), term(s[1], arrays[1]))
        if kind == "elementwise_trinary":
            x = BINARY[binary[1]](x, term(s[2], arrays[2]))
        return x


def _overlap(p: int, d: Any, q: int, e: Any) -> bool:
    def span(ptr: int, desc: Any) -> tuple[int, int]:
        n = sum((x - 1) * s for x, s in zip(desc[1], desc[2], strict=True)) + 1
        return ptr, ptr + n * desc[3].itemsize

    (a, b), (c, d2) = span(p, d), span(q, e)
    return a < d2 and c < b


# -- the stand-ins in place ---------------------------------------------------------------------
# cutensor.h's prototypes, written from the header (not the generated bindings): "p" a pointer or
# opaque handle, "u" uint32_t, "e" an enum (int), "q" uint64_t or size_t; "ppe" is a tensor's
# descriptor, modes and unary operator.
HEADER = {
    "cutensorCreateTensorDescriptor": "ppuppeu",
    "cutensorCreateContraction": "pp" + "ppe" * 3 + "ppp",
    "cutensorCreateContractionTrinary": "pp" + "ppe" * 4 + "ppp",
    "cutensorCreateReduction": "pp" + "ppe" * 2 + "ppep",
    "cutensorCreateElementwiseBinary": "pp" + "ppe" * 2 + "ppep",
    "cutensorCreateElementwiseTrinary": "pp" + "ppe" * 3 + "ppeep",
    "cutensorCreatePermutation": "pp" + "ppe" + "ppp",
    "cutensorOperationDescriptorGetAttribute": "ppepq",
    "cutensorOperationDescriptorSetAttribute": "ppepq",
    "cutensorCreatePlanPreference": "ppee",
    "cutensorPlanPreferenceSetAttribute": "ppepq",
    "cutensorEstimateWorkspaceSize": "pppep",
    "cutensorCreatePlan": "ppppq",
    "cutensorPlanGetAttribute": "ppepq",
    "cutensorDestroyTensorDescriptor": "p",
    "cutensorDestroyOperationDescriptor": "p",
    "cutensorDestroyPlanPreference": "p",
    "cutensorDestroyPlan": "p",
    "cutensorContract": "pppppppppqp",
    "cutensorContractTrinary": "ppppppppppqp",
    "cutensorReduce": "ppppppppqp",
    "cutensorElementwiseBinaryExecute": "pppppppp",
    "cutensorElementwiseTrinaryExecute": "pppppppppp",
    "cutensorPermute": "pppppp",
}
C_TYPES = {"p": ctypes.c_void_p, "u": ctypes.c_uint32, "e": ctypes.c_int, "q": ctypes.c_uint64}


def _through_ctypes(name: str, impl: Callable[..., int], interp: Interpreter) -> Any:
    """``impl`` as a C function with cutensor.h's prototype, called through a C function pointer
    whose prototype is the library's (``_bindings.FUNCTIONS``): the arguments cross as C values."""
    spec = _bindings.FUNCTIONS[name]
    header = [C_TYPES[c] for c in HEADER[name]]
    assert [ctypes.sizeof(t) for t in spec.argtypes] == [ctypes.sizeof(t) for t in header], name

    def call(*args: Any) -> int:
        try:
            return impl(*args)
        except Exception as exc:
            where = traceback.extract_tb(exc.__traceback__)[-1]
            interp.errors.append(f"{name}: {exc!r} (line {where.lineno})")
            return 7  # CUTENSOR_STATUS_INVALID_VALUE

    callback = ctypes.CFUNCTYPE(ctypes.c_int, *header)(call)
    interp.keep.append(callback)
    caller = ctypes.CFUNCTYPE(spec.restype, *spec.argtypes)
    return caller(ctypes.cast(callback, ctypes.c_void_p).value)


def stand_in_handle() -> Handle:
    """An open Handle on device 0 that never held a real ``cutensorHandle_t``."""
    h = Handle.__new__(Handle)
    CResource.__init__(h, 0x1000, None, owned=False)
    h.device_id, h._device, h._lock, h._owned = 0, None, threading.Lock(), []
    h._plan_cache_size, h._disable_plan_cache = DEFAULT_PLAN_CACHE_SIZE, None
    h._operations, h._compute_capability, h._default_preference = OperationCache(128), (9, 0), None
    h.activate = lambda: None  # type: ignore[method-assign]
    h.restore = lambda previous: None  # type: ignore[method-assign]
    return h


# -- arrays -------------------------------------------------------------------------------------
LAYOUTS = ("c", "f", "perm", "gap", "offset")


def make(cu: Interpreter, rng: np.random.Generator, shape: tuple[int, ...], dtype: Any,  # noqa: PLR0917
         layout: str = "c", low: float = -1.0, high: float = 1.0,
         bcast: int | None = None, values: Any = None) -> tuple[np.ndarray, Any]:  # fmt: skip
    """A host array of ``shape`` in ``layout`` (stride 0 along axis ``bcast``) holding ``values``
    (None: random ones from ``low`` to ``high``), and its DeviceArray stand-in."""
    dt = np.dtype(dtype)
    full = shape
    if bcast is not None:
        shape = tuple(1 if i == bcast else n for i, n in enumerate(shape))
    nd = len(shape)
    order = list(range(nd))
    if layout == "f":
        order = order[::-1]
    elif layout == "perm":
        order = [int(i) for i in rng.permutation(nd)]
    gap = 2 if layout == "gap" and nd else 1
    base_shape = [shape[i] * (gap if k == 0 else 1) for k, i in enumerate(order)]
    offset = 1 if layout == "offset" else 0
    size = int(np.prod(base_shape)) + offset
    buf = cu.buffer(size * dt.itemsize)
    flat = buf[: size * dt.itemsize].view(dt)
    base = flat[offset:].reshape(base_shape)
    if gap > 1:
        base = base[::gap]
    arr = np.transpose(base, np.argsort(order)) if nd else base
    if values is None:
        values = rng.uniform(low, high, shape)
        if dt.kind == "c":
            values = values + 1j * rng.uniform(low, high, shape)
    arr[...] = np.asarray(values).astype(dt)
    if bcast is not None:
        arr = np.broadcast_to(arr, full)
    return arr, device(arr)


def like(cu: Interpreter, arr: np.ndarray) -> tuple[np.ndarray, Any]:
    """Another array laid out exactly as ``arr`` (same strides), zero-filled."""
    span = sum((n - 1) * s for n, s in zip(arr.shape, arr.strides, strict=True)) + arr.itemsize
    flat = cu.buffer(span)[:span]
    out = np.lib.stride_tricks.as_strided(flat.view(arr.dtype), arr.shape, arr.strides)
    return out, device(out)


def device(arr: np.ndarray) -> Any:
    strides = tuple(s // arr.itemsize for s in arr.strides)
    return fake_device_array(arr.shape, arr.dtype, ptr=arr.ctypes.data, strides=strides)


def wide(a: np.ndarray) -> np.ndarray:
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


TOL = {"float16": 2e-2, "bfloat16": 6e-2, "float32": 2e-5, "float64": 1e-12,
       "complex64": 2e-5, "complex128": 1e-12}  # fmt: skip


def assert_result(got: np.ndarray, expected: Any, what: Any) -> None:
    exp = np.asarray(expected)
    if got.dtype.kind != "c":
        exp = np.real(exp)
    exp = exp.astype(got.dtype).astype(np.complex128)
    tol = TOL[got.dtype.name]
    np.testing.assert_allclose(got.astype(np.complex128), exp, rtol=tol, atol=tol * 4,
                               err_msg=str(what))  # fmt: skip


REAL_DTYPES = ("float16", "bfloat16", "float32", "float64")
ALL_DTYPES = (*REAL_DTYPES, "complex64", "complex128")
# each unary operator's domain, to keep NumPy's answers finite
DOMAIN = {"acosh": (1.1, 2.0), "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atanh": (-0.9, 0.9),
          "sqrt": (0.1, 2.0), "log": (0.1, 2.0), "rcp": (0.5, 2.0), "tan": (-1.0, 1.0)}  # fmt: skip


def dtype_of(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def unary_ops(dtype: np.dtype) -> list[str]:
    type_name = {"float16": "R_16F", "bfloat16": "R_16BF", "float32": "R_32F",
                 "float64": "R_64F", "complex64": "C_32F", "complex128": "C_64F"}[dtype.name]  # fmt: skip
    return sorted(tables.UNARY_OPERATORS_BY_DATA_TYPE[type_name])


def onto(x: Any, labels: str, out: str) -> Any:
    """``x`` (labels ``labels``) over the labels ``out``, broadcast where it lacks one."""
    kept = "".join(c for c in out if c in labels)
    moved = np.einsum(f"{labels}->{kept}", x)
    return moved.reshape([moved.shape[kept.index(c)] if c in kept else 1 for c in out])


def pick(rng: np.random.Generator, items: Any) -> Any:
    return items[int(rng.integers(len(items)))]


def operator_value(rng: np.random.Generator, dtype: np.dtype) -> tuple[str, float, float]:
    """A unary operator the library's table allows for ``dtype`` and the range its input takes."""
    name = pick(rng, unary_ops(dtype))
    low, high = DOMAIN.get(name, (-1.0, 1.0))
    return name, low, high


def scalar(rng: np.random.Generator, dtype: np.dtype, choices: tuple[float, ...]) -> Any:
    value = pick(rng, choices)
    if dtype.kind == "c" and value not in (0.0, 1.0) and rng.random() < 0.7:
        return complex(value, pick(rng, (0.5, -0.25)))
    return value


def modes(rng: np.random.Generator, labels: str) -> str:
    return "".join(labels[i] for i in rng.permutation(len(labels)))


def extents(rng: np.random.Generator, labels: str) -> dict[str, int]:
    return {c: int(rng.integers(1, 5)) for c in labels}


def rows(kind: str, n_types: int) -> list[tuple[str, ...]]:
    """The library's supported (types..., compute) rows whose data types are all NumPy types here."""
    known = {"R_16F", "R_16BF", "R_32F", "R_64F", "C_32F", "C_64F"}
    plain = {"32F", "64F", "16F", "16BF"}  # the emulated ones compute the same values, less exactly
    return [r for r in tables.KINDS[kind].table
            if set(r[:n_types]) <= known and r[-1] in plain]  # fmt: skip


NP_OF = {"R_16F": "float16", "R_16BF": "bfloat16", "R_32F": "float32", "R_64F": "float64",
         "C_32F": "complex64", "C_64F": "complex128"}  # fmt: skip
