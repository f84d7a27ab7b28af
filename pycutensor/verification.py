"""Numbers checked, not trusted: cuTENSOR's algorithms verified against NumPy.

An operation is described by an :class:`OpSpec` (its kind, the mode labels, extents and data type
of each operand, the unary and binary operators, the scalars and the compute type), made by hand
or read from a :class:`pycutensor.operations.Operation` with :func:`spec_from_operation`.
:func:`reference` computes the result in float64 (complex128 for complex data) with
``np.einsum`` and NumPy's functions, independently of cuTENSOR; :func:`tolerance` follows the same
rules as :mod:`pycudnn.verification.tolerance` (data types, compute type, reduction length), on
the unit roundoffs and :class:`Tolerance` of the shared runtime (``_nvbind.comparison``).

``python -m pycutensor verify`` runs every case of :func:`cases` with every algorithm
(``CUTENSOR_ALGO_DEFAULT``, ``DEFAULT_PATIENT``, ``GETT``, ``TGETT``, ``TTGT``, and the JIT where
the GPU has compute capability 8.0 or newer) on this GPU and exits non-zero when any result is
wrong. An algorithm cuTENSOR refuses for a problem (``NOT_SUPPORTED``) is listed, not counted as
wrong.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import string
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from _nvbind.cli import add_verify_arguments, progress_bar
from _nvbind.comparison import (
    APPROX,
    SAFETY,
    TF32,
    OutputCheck,
    Tolerance,
    compare,
    is_float,
    unit_roundoff,
)
from _nvbind.cuda import require_cuda_core
from _nvbind.device_array import DeviceArray
from _nvbind.dtypes import as_numpy_dtype
from _nvbind.report import devices_report, print_json, select_verify_cases

from . import operations
from ._info import version_tuple
from .errors import CutensorError, CutensorNotSupportedError
from .plan import PlanPreference

__all__ = [
    "ALGORITHMS",
    "OpSpec",
    "add_arguments",
    "cases",
    "make_operands",
    "reference",
    "run",
    "spec_from_operation",
    "tolerance",
    "verify_case",
]

#: The algorithm choices every case runs under: (label, PlanPreference keyword arguments).
ALGORITHMS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("default", {"algo": "default"}),
    ("default_patient", {"algo": "default_patient"}),
    ("gett", {"algo": "gett"}),
    ("tgett", {"algo": "tgett"}),
    ("ttgt", {"algo": "ttgt"}),
    ("jit", {"algo": "default", "jit": "default"}),
)

_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "identity": lambda x: x,
    "sqrt": np.sqrt,
    "rcp": lambda x: 1.0 / x,
    "relu": lambda x: np.maximum(x, 0),
    "conj": np.conj,
    "sigmoid": lambda x: 0.5 * (1.0 + np.tanh(0.5 * x)),
    "tanh": np.tanh,
    "exp": np.exp,
    "log": np.log,
    "abs": np.abs,
    "neg": np.negative,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "ceil": np.ceil,
    "floor": np.floor,
    "mish": lambda x: x * np.tanh(np.logaddexp(0.0, x)),
    "swish": lambda x: x * 0.5 * (1.0 + np.tanh(0.5 * x)),
    "soft_plus": lambda x: np.logaddexp(0.0, x),
    "soft_sign": lambda x: x / (1.0 + np.abs(x)),
}
_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "mul": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
}
_SUMS = frozenset({"contraction", "contraction_trinary", "reduction"})
_EXACT_UNARY = frozenset({"identity", "relu", "conj", "abs", "neg", "ceil", "floor"})
# Input domains: operators defined only for positive (or at least one) arguments.
_POSITIVE = frozenset({"sqrt", "rcp", "log"})
_AT_LEAST_ONE = frozenset({"acosh"})
_UNIT = frozenset({"asin", "acos", "atanh"})


@dataclasses.dataclass(frozen=True)
class OpSpec:
    """What a cuTENSOR operation computes, as plain data.

    ``kind``: ``contraction``, ``contraction_trinary``, ``reduction``, ``elementwise_binary``,
    ``elementwise_trinary`` or ``permutation``. ``modes`` and ``dtypes``: per operand, in the C
    API's order with the output last (contraction: A, B, C; reduction: A, C; permutation: A, B).
    ``unary``: one operator name per input operand; ``binary``: ``op_reduce``, ``op_ac`` or
    ``op_ab``/``op_abc``. ``scalars``: alpha, beta, gamma as the kind takes them.
    """

    name: str
    kind: str
    modes: tuple[str, ...]
    extents: Mapping[str, int]
    dtypes: tuple[str, ...]
    unary: tuple[str, ...] = ()
    binary: tuple[str, ...] = ()
    scalars: Mapping[str, float] = dataclasses.field(default_factory=dict)
    compute_type: str | None = None
    quick: bool = False

    def shape(self, i: int) -> tuple[int, ...]:
        return tuple(self.extents[m] for m in self.modes[i])

    def op(self, i: int) -> str:
        return self.unary[i] if i < len(self.unary) else "identity"


def spec_from_operation(op: Any, name: str = "") -> OpSpec:
    """The :class:`OpSpec` of a :class:`pycutensor.operations.Operation` (its kind, operands'
    mode labels, extents and dtypes, unary and binary operators, compute type)."""
    letters: dict[Any, str] = {}
    modes, extents, dtypes = [], {}, []
    described = op.operands[: len(op.operands) - (1 if op.output_shares_descriptor else 0)]
    for operand in described:
        labels = []
        for label, extent in zip(operand.labels, operand.descriptor.extents, strict=True):
            letter = letters.setdefault(label, string.ascii_letters[len(letters)])
            extents[letter] = int(extent)
            labels.append(letter)
        modes.append("".join(labels))
        dtypes.append(np.dtype(operand.spec.dtype).name)
    return OpSpec(
        name or op.kind,
        op.kind,
        tuple(modes),
        extents,
        tuple(dtypes),
        tuple(u.lower() for u in op.unary_operators),
        tuple(b.lower() for b in op.binary_operators),
        dict(op.scalar_defaults),
        op.compute_type,
    )


def _dtype(name: str) -> np.dtype:

    return as_numpy_dtype(name)


def make_operands(spec: OpSpec, seed: int = 0) -> list[np.ndarray]:
    """Seeded operands (every input, then the output's initial contents), in their data types.

    Values are uniform in [-1, 1] scaled by ``K**-0.25`` for inputs of contractions and
    reductions (``K`` contracted or reduced elements, so that sums stay near 1), kept in the
    domain of the unary operator applied to them.
    """
    rng = np.random.default_rng(seed)
    k = _reduction_length(spec)
    out = []
    for i, dt in enumerate(spec.dtypes):
        shape = spec.shape(i)
        op = spec.op(i)
        u = rng.uniform(-1.0, 1.0, size=shape)
        if op in _POSITIVE:
            u = 0.5 + 0.75 * (u + 1.0)
        elif op in _AT_LEAST_ONE:
            u = 1.5 + 0.5 * u
        elif op in _UNIT:
            u = 0.9 * u
        elif spec.kind in _SUMS and i < len(spec.modes) - 1:
            u = u * k**-0.25
        d = _dtype(dt)
        if d.kind == "c":
            u = u + 1j * rng.uniform(-1.0, 1.0, size=shape) * (k**-0.25 if k > 1 else 1.0)
        out.append(u.astype(d))
    return out


def _reduction_length(spec: OpSpec) -> int:
    if spec.kind not in ("contraction", "contraction_trinary", "reduction"):
        return 1
    out = set(spec.modes[-1])
    inputs = set().union(*map(set, spec.modes[:-1]))
    return math.prod(spec.extents[m] for m in inputs - out) or 1


def reference(spec: OpSpec, operands: Sequence[Any]) -> np.ndarray:
    """The operation's result in float64 (complex128 for complex data), from NumPy alone."""
    ctype = np.complex128 if any(_dtype(d).kind == "c" for d in spec.dtypes) else np.float64
    vals = [np.asarray(v).astype(ctype) for v in operands]
    ins = [_UNARY[spec.op(i)](v) for i, v in enumerate(vals[:-1])]
    s = {"alpha": 1.0, "beta": 0.0, "gamma": 1.0, **spec.scalars}
    out_modes = spec.modes[-1]
    if spec.kind in ("contraction", "contraction_trinary"):
        sub = ",".join(spec.modes[:-1]) + "->" + out_modes
        core = np.einsum(sub, *ins)
        last = vals[-1] if spec.kind == "contraction" else _UNARY[spec.op(len(vals) - 1)](vals[-1])
        out: np.ndarray = s["alpha"] * core + s["beta"] * last
        return out
    if spec.kind == "reduction":
        a_modes = spec.modes[0]
        axes = tuple(i for i, m in enumerate(a_modes) if m not in out_modes)
        fns: dict[str, Any] = {"add": np.sum, "mul": np.prod, "max": np.max, "min": np.min}
        red = fns[spec.binary[0]](ins[0], axis=axes)
        kept = "".join(m for m in a_modes if m in out_modes)
        red = np.einsum(f"{kept}->{out_modes}", red)
        c = _UNARY[spec.op(1)](vals[-1])
        out = s["alpha"] * red + s["beta"] * c
        return out
    if spec.kind == "permutation":
        out = s["alpha"] * np.einsum(f"{spec.modes[0]}->{out_modes}", ins[0])
        return out

    def lift(i: int, v: np.ndarray) -> np.ndarray:  # broadcast an operand to the output's modes
        shape = [spec.extents[m] if m in spec.modes[i] else 1 for m in out_modes]
        order = "".join(m for m in out_modes if m in spec.modes[i])
        out: np.ndarray = np.einsum(f"{spec.modes[i]}->{order}", v).reshape(shape)
        return out

    c = _UNARY[spec.op(len(vals) - 1)](vals[-1])
    if spec.kind == "elementwise_binary":
        return _BINARY[spec.binary[0]](s["alpha"] * lift(0, ins[0]), s["gamma"] * c)
    ab = _BINARY[spec.binary[0]](s["alpha"] * lift(0, ins[0]), s["beta"] * lift(1, ins[1]))
    return _BINARY[spec.binary[1]](ab, s["gamma"] * c)


def _compute_roundoff(compute: str | None, data: np.dtype) -> tuple[float, str]:
    """How the math reads its operands under cuTENSOR's compute descriptor."""
    if compute in (None, "32F", "64F", "3XTF32"):
        return 0.0, "exact"
    if compute in ("TF32", "9X16BF"):
        return TF32, compute.lower()
    if compute == "16F":
        return max(
            unit_roundoff(np.float16), unit_roundoff(data) if is_float(data) else 0.0
        ), "fp16"
    if compute == "16BF":
        return unit_roundoff(_dtype("bfloat16")), "bf16"
    return 0.0, compute.lower()


def tolerance(spec: OpSpec) -> Tolerance:
    """``SAFETY * (u(out) + (2+sqrt(K))*u(inputs as the compute type reads them) + u(acc)*K +
    approx)``, as in :mod:`pycudnn.verification.tolerance`;
    ``K`` (the contracted or reduced length) grows linearly: cuTENSOR's kernels use tensor cores."""
    out = _dtype(spec.dtypes[-1])
    real = np.dtype(out.char.lower()) if out.kind == "c" else out
    data = _dtype(spec.dtypes[0])
    data_real = np.dtype(data.char.lower()) if data.kind == "c" else data
    u_in, how = _compute_roundoff(spec.compute_type, data_real)
    acc = unit_roundoff(np.float64 if real == np.float64 else np.float32)
    k = _reduction_length(spec)
    if spec.kind == "reduction" and spec.binary[0] in ("max", "min"):
        k = 1
    terms = [
        (f"{real.name} output", unit_roundoff(real)),
        (f"inputs as {how} (2+sqrt({k}))x", u_in * (2 + math.sqrt(k))),
        (f"accumulation x {k}", acc * k if k > 1 else 0.0),
    ]
    approx = sum(APPROX for op in spec.unary if op not in _EXACT_UNARY)
    terms.append(("approximate math", approx))
    if real.kind in "iu":
        return Tolerance(0.0, True, ())
    return Tolerance(SAFETY * sum(v for _, v in terms), False, tuple(terms))


def cases(quick: bool = False) -> list[OpSpec]:
    """The standard set: contractions (GEMM-like, batched, the user guide's 4-mode, 3-mode) in
    fp16, bf16, fp32, fp64 and complex64; reductions; elementwise binary and trinary with
    broadcasting and unary operators; permutations with a data-type conversion."""
    e = {"m": 48, "n": 40, "k": 32, "b": 3, "h": 4, "u": 5, "v": 6, "c": 7}
    out = []
    for dt in ("float16", "bfloat16", "float32", "float64", "complex64"):
        out.append(OpSpec(f"gemm-{dt}", "contraction", ("mk", "kn", "mn"), e, (dt,) * 3,
                          scalars={"alpha": 1.0, "beta": 0.0}, quick=dt == "float32"))  # fmt: skip
    out.append(OpSpec("batched-fp32", "contraction", ("bmk", "bkn", "bmn"), e, ("float32",) * 3,
                      scalars={"alpha": 0.5, "beta": 0.25}, quick=True))  # fmt: skip
    out.append(OpSpec("4mode-fp32", "contraction", ("mhkn", "ukvh", "munv"),
                      {"m": 12, "h": 8, "k": 8, "n": 12, "u": 12, "v": 8}, ("float32",) * 3))  # fmt: skip
    out.append(OpSpec("3mode-fp16", "contraction", ("mkc", "ckn", "nm"), e, ("float16",) * 3))
    out.append(OpSpec("tf32-fp32", "contraction", ("mk", "kn", "mn"), e, ("float32",) * 3,
                      compute_type="TF32"))  # fmt: skip
    out.append(OpSpec("reduce_add-fp32", "reduction", ("mkn", "n"), e, ("float32",) * 2,
                      binary=("add",), quick=True))  # fmt: skip
    out.append(OpSpec("reduce_max-fp16", "reduction", ("mkn", "mn"), e, ("float16",) * 2,
                      binary=("max",)))  # fmt: skip
    out.append(OpSpec("add_broadcast-fp32", "elementwise_binary", ("n", "mn"), e,
                      ("float32",) * 2, unary=("identity", "relu"), binary=("add",),
                      scalars={"alpha": 2.0, "gamma": -1.0}, quick=True))  # fmt: skip
    out.append(OpSpec("mul_tanh-fp16", "elementwise_binary", ("mn", "nm"), e, ("float16",) * 2,
                      unary=("tanh", "identity"), binary=("mul",)))  # fmt: skip
    out.append(OpSpec("trinary-fp32", "elementwise_trinary", ("mn", "m", "nm"), e,
                      ("float32",) * 3, unary=("exp", "identity", "sqrt"),
                      binary=("add", "max"), scalars={"alpha": 1.0, "beta": 0.5, "gamma": 1.0}))  # fmt: skip
    out.append(OpSpec("permute-fp32", "permutation", ("mkn", "nmk"), e, ("float32",) * 2,
                      scalars={"alpha": 1.5}, quick=True))  # fmt: skip
    out.append(OpSpec("permute-fp16-to-fp32", "permutation", ("mkn", "knm"), e,
                      ("float16", "float32")))  # fmt: skip
    return [c for c in out if c.quick] if quick else out


# -- running on the GPU --------------------------------------------------------------------------

_FUNCTIONS = {
    "contraction": "contract",
    "reduction": "reduce",
    "elementwise_binary": "elementwise_binary",
    "elementwise_trinary": "elementwise_trinary",
    "permutation": "permute",
}
_TAKES_PREFERENCE = frozenset({"contraction", "reduction"})
# The keyword of each operand's unary operator, and of the binary operators, per kind.
_UNARY_ROLES = {
    "contraction": ("op_a", "op_b"),
    "contraction_trinary": ("op_a", "op_b", "op_c", "op_d"),
    "reduction": ("op_a", "op_c"),
    "elementwise_binary": ("op_a", "op_c"),
    "elementwise_trinary": ("op_a", "op_b", "op_c"),
    "permutation": ("op_a",),
}
_BINARY_ROLES = {
    "reduction": ("op_reduce",),
    "elementwise_binary": ("op_ac",),
    "elementwise_trinary": ("op_ab", "op_abc"),
}


def _execute(spec: OpSpec, operands: Sequence[np.ndarray], preference: Any) -> np.ndarray:

    arrays = [DeviceArray.from_numpy(v) for v in operands]
    try:
        args: list[Any] = []
        for a, m in zip(arrays, spec.modes, strict=True):
            args += [a, m]
        kw: dict[str, Any] = dict(spec.scalars)
        kw.update(zip(_UNARY_ROLES[spec.kind], spec.unary, strict=False))
        kw.update(zip(_BINARY_ROLES.get(spec.kind, ()), spec.binary, strict=False))
        if spec.compute_type is not None:
            kw["compute_type"] = spec.compute_type
        if spec.kind in _TAKES_PREFERENCE:
            kw["preference"] = preference
        function: Callable[..., Any] = getattr(operations, _FUNCTIONS[spec.kind])
        function(*args, **kw)
        return arrays[-1].to_numpy()
    finally:
        for a in arrays:
            a.close()


def verify_case(spec: OpSpec, *, seed: int = 0) -> list[dict[str, Any]]:
    """Every algorithm of :data:`ALGORITHMS` on ``spec`` (one run for the kinds that take no
    plan preference), each compared with :func:`reference`. Needs a GPU."""

    operands = make_operands(spec, seed)
    ref = reference(spec, operands)
    tol = tolerance(spec)
    major = int(require_cuda_core().Device().compute_capability[0])
    rows = []
    algos = ALGORITHMS if spec.kind in _TAKES_PREFERENCE else (("default", {}),)
    for label, kwargs in algos:
        if kwargs.get("jit") and major < 8:
            continue
        row: dict[str, Any] = {"case": spec.name, "algorithm": label}
        start = time.perf_counter()
        try:
            got = _execute(spec, operands, PlanPreference(**kwargs) if kwargs else None)
        except CutensorNotSupportedError as exc:
            row.update(status="not supported", error=str(exc).splitlines()[0])
        except CutensorError as exc:
            row.update(status="error", error=str(exc).splitlines()[0])
        else:
            check: OutputCheck = compare(spec.name, got, ref, tol)
            row.update(
                # "not verified": a tolerance that cannot tell (see OutputCheck.unverifiable)
                status={"unverified": "not verified"}.get(check.verdict, check.verdict),
                max_abs_error=check.max_abs_error,
                max_rel_error=check.max_rel_error,
                tolerance=tol.rtol,
                nonfinite=check.nonfinite,
            )
            if check.verdict == "unverified":
                row["error"] = check.unverifiable
        row["seconds"] = round(time.perf_counter() - start, 4)
        rows.append(row)
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m pycutensor verify``."""
    add_verify_arguments(parser, quick="the CI subset", listing="list the cases and exit")


def run(args: argparse.Namespace) -> int:
    """``python -m pycutensor verify``: the exit status is 1 when any result is wrong, 3 without a
    GPU, 2 when ``--filter`` matches no case; ``--json`` prints one JSON document, ``--list`` too."""

    selected = select_verify_cases(
        args,
        cases(args.quick),
        "pycutensor",
        listed=lambda c: {"name": c.name, "kind": c.kind, "modes": list(c.modes)},
        line=lambda c: f"{c.name:<24} {c.kind:<20} {' '.join(c.modes)}",
        needs="verify executes on a GPU",
    )
    if isinstance(selected, int):
        return selected
    bar = progress_bar(len(selected), not args.no_progress and not args.json)
    start = time.perf_counter()
    rows = []
    for spec in selected:
        rows.extend(verify_case(spec, seed=args.seed))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    wrong = [r for r in rows if r["status"] in ("fail", "error")]
    # "not supported" runs compared nothing: counted apart, and a run that compared nothing at
    # all has not passed (a CI job must not go green on it)
    compared = sum(1 for r in rows if r["status"] in ("pass", "fail"))
    # what the numbers were measured on (the cases run on the current device, 0)
    machine = {"cutensor": ".".join(map(str, version_tuple())), **devices_report()}
    report = {**machine, "rows": rows, "runs": len(rows), "compared": compared,
              "wrong": len(wrong), "passed": not wrong and compared > 0,
              "seconds": round(time.perf_counter() - start, 2)}  # fmt: skip
    code = 0 if report["passed"] else 1
    if args.json:
        print_json({"command": "verify", "exit_code": code, **report})
    else:
        for r in rows:
            detail = (
                f"rel {r['max_rel_error']:.3g} (tol {r['tolerance']:.2g})"
                if "max_rel_error" in r
                else r.get("error", "")
            )
            print(f"{r['case']:<24} {r['algorithm']:<16} {r['status']:<14} {detail}")
        verdict = (
            f"{len(wrong)} WRONG" if wrong
            else "all right" if compared else "NOTHING COMPARED (every run was not supported)"
        )  # fmt: skip
        devices = machine["devices"]
        on = f"cuTENSOR {machine['cutensor']} on {devices[0]['name'] if devices else 'no GPU'}"
        print(f"\n{on}: {len(rows)} runs ({compared} compared), {verdict} ({report['seconds']} s)")
    return code
