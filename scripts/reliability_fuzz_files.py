"""Fuzz targets of ``scripts/reliability.py`` for files, known-bad tables, the typed backend layer
and verification tolerances (registered in ``reliability_fuzz.TARGETS``).

- ``special_files``: a FIFO, ``/dev/zero``, a directory, a socket, a loop of links, a sparse file
  over the size limit, an unreadable or empty file, at every path the library reads or writes.
  A read that blocks is a hang the harness counts (each input has its time limit there), not a
  test run that never ends.
- ``known_bad_tables``: malformed tables as text and through ``PYCUDNN_KNOWN_BAD_ENGINES``; a
  table that loads must hold only what an entry can mean (checked here independently: a silent
  acceptance is an unexpected outcome).
- ``backend_typed``: hostile integer and enum values through ``BackendDescriptor.set`` for tensors
  and the operations that divide by their extents, then finalize (a SIGFPE is a crash).
- ``tolerance``: hostile ``Tolerance`` values and references with NaN/Inf into ``compare``; a
  check that passes must have measured something.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

# Only names defined before reliability_fuzz registers this module (see its end).
from reliability_fuzz import INTS, Context, junk, pointwise_graph


class SilentAcceptance(Exception):
    """Something wrong was accepted without an exception (counted as unexpected)."""


# -- special files ---------------------------------------------------------------------------------
_KINDS = ("fifo", "link_to_fifo", "dev_zero", "dev_null", "directory", "link_loop", "sparse_huge",
          "socket", "unreadable", "empty", "proc")  # fmt: skip


@contextlib.contextmanager
def _special(kind: str, where: Path, rng: random.Random) -> Iterator[Path]:
    """A path of ``kind`` in the fresh directory ``where``."""
    from _nvbind.files import MAX_FILE_BYTES

    where.mkdir(parents=True, exist_ok=True)
    path = where / "target.json"
    sock = None
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link_to_fifo":
        os.mkfifo(where / "fifo")
        path.symlink_to(where / "fifo")
    elif kind in ("dev_zero", "dev_null", "proc"):
        path.symlink_to(
            {"dev_zero": "/dev/zero", "dev_null": "/dev/null"}.get(kind, "/proc/self/maps")
        )
    elif kind == "directory":
        path.mkdir()
    elif kind == "link_loop":
        path.symlink_to(where / "other")
        (where / "other").symlink_to(path)
    elif kind == "sparse_huge":
        with open(path, "wb") as f:
            f.truncate(MAX_FILE_BYTES + 1 + rng.randrange(1 << 30))
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(os.fspath(path))
    elif kind == "unreadable":
        path.write_text("{}")
        path.chmod(0)
    elif kind == "empty":
        path.write_bytes(b"")
    try:
        yield path
    finally:
        if sock is not None:
            sock.close()
        shutil.rmtree(where, ignore_errors=True)


def _plan(ctx: Context) -> Any:
    """One built plan per worker, for the writers."""
    plan = getattr(ctx, "_files_plan", None)
    if plan is None:
        plan = pointwise_graph().build(device_properties=ctx.props, cache=False)
        ctx._files_plan = plan  # type: ignore[attr-defined]
    return plan


def special_files(rng: random.Random, ctx: Context) -> None:
    import pycudnn
    from _nvbind import files
    from _nvbind.merge_smoke import main as merge_smoke
    from pycudnn import known_bad
    from pycudnn.plan import PlanCache
    from pycudnn.verification import write_entries

    kind = rng.choice(_KINDS)
    where = ctx.tmp / f"special-{rng.getrandbits(48):x}"
    use = rng.choice(("read", "table", "env_table", "deviceprops", "plan_load", "merge_smoke",
                      "plan_save", "props_save", "write_entries", "plan_cache"))  # fmt: skip
    with _special(kind, where, rng) as path:
        calls: dict[str, Callable[[], Any]] = {
            "read": lambda: files.read_bytes(path, follow_symlinks=rng.random() < 0.5),
            "table": lambda: known_bad.load_table(path),
            "deviceprops": lambda: pycudnn.DeviceProperties.load(path),
            "plan_load": lambda: pycudnn.Plan.load(path, device_properties=ctx.props),
            "merge_smoke": lambda: merge_smoke([os.fspath(path), "0"]),
            "plan_save": lambda: _plan(ctx).save(path),
            "props_save": lambda: ctx.props.save(path),
            "write_entries": lambda: write_entries(path, []),
        }
        if use == "env_table":
            old = os.environ.get(known_bad.ENV_VAR)
            os.environ[known_bad.ENV_VAR] = os.fspath(path)
            try:
                known_bad.table()
            finally:
                if old is None:
                    os.environ.pop(known_bad.ENV_VAR, None)
                else:
                    os.environ[known_bad.ENV_VAR] = old
        elif use == "plan_cache":
            # The cache file of this graph replaced by the special file: the build must rebuild.
            directory = where / "cache"
            directory.mkdir()
            first = PlanCache(directory)
            pointwise_graph().build(device_properties=ctx.props, cache=first).close()
            (cached,) = directory.glob("*.json")
            cached.unlink()
            os.replace(path, cached)
            plan = pointwise_graph().build(device_properties=ctx.props, cache=PlanCache(directory))
            if plan.engine_id is None:
                raise SilentAcceptance("the plan cache served a plan without an engine")
            plan.close()
        else:
            calls[use]()


# -- known-bad tables ------------------------------------------------------------------------------
_GOOD_ENTRY: dict[str, Any] = {
    "engine_id": 10, "operation": "conv_fprop", "layouts": ["NHWC"], "input_dtypes": ["float16"],
    "cudnn_min": "9.0.0", "cudnn_max": None, "seen_wrong_in": ["9.19.0"], "found": "x", "advice": "",
}  # fmt: skip
_ENTRY_KEYS = set(_GOOD_ENTRY)
_LAYOUT_JUNK = ["nchw", "N C H W", "NCHW ", "NCHWC", "BMN", "NC/1HW1", "NC/32HW4", "NC/32HW32",
                "NHWC", "CHWN", "NDHWC", "ABCDEF", "", "layout", "NC/4DHW4", "NC/0HW0"]  # fmt: skip
_DTYPE_JUNK = ["fp16", "Float16", "half", "float16", "bfloat16", "float32", "int8", "FLOAT",
               "float8_e4m3fn", "", "float128", "bool"]  # fmt: skip
_VERSIONS = ["9.0.0", "9.19", "9.19.0", "10", "9.20.1", "9.x", "", "9.19.0.1", "-1", "09.1"]
_VALID_LAYOUT_SETS = ("NCHW", "NCDHW", "ABCDEF", "ABCDEFG", "ABCDEFGH")


def _layout_ok(name: str) -> bool:
    """Independent of the library's rule: the formats Tensor.format can give a rank-4+ tensor."""
    import re

    m = re.fullmatch(r"NC/(\d+)(D?HW)(\d+)", name)
    if m:
        return m.group(1) == m.group(3) and int(m.group(1)) > 1 and not m.group(1).startswith("0")
    return any(sorted(name) == sorted(s) for s in _VALID_LAYOUT_SETS)


def _mutated_entry(rng: random.Random) -> Any:
    e: dict[str, Any] = dict(_GOOD_ENTRY)
    for _ in range(rng.randint(0, 3)):
        r = rng.random()
        key = rng.choice([*_GOOD_ENTRY, "layout", "input_dtype", "cudnn_maximum", "comment", ""])
        if r < 0.25:
            e[key] = junk(rng)
        elif r < 0.45:
            e["layouts"] = [rng.choice(_LAYOUT_JUNK) for _ in range(rng.randint(0, 3))]
        elif r < 0.6:
            e["input_dtypes"] = [rng.choice(_DTYPE_JUNK) for _ in range(rng.randint(0, 3))]
        elif r < 0.75:
            e["cudnn_min"], e["cudnn_max"] = rng.choice(_VERSIONS), rng.choice([*_VERSIONS, None])
        elif r < 0.85:
            e["engine_id"] = rng.choice([*INTS, True, 1.0, "10"])
        elif r < 0.95:
            e.pop(key, None)
        else:
            return junk(rng)
    return e


def known_bad_tables(rng: random.Random, ctx: Context) -> None:
    from pycudnn import known_bad

    top: dict[str, Any] = {"schema": rng.choice([1, 1, 1, 1, True, 1.0, "1", 2, None]),
                           "entries": [_mutated_entry(rng) for _ in range(rng.randint(0, 4))]}  # fmt: skip
    if rng.random() < 0.1:
        top[rng.choice(["comment", "entry", "Schema"])] = junk(rng)
    text = json.dumps(top, default=repr)
    r = rng.random()
    if r < 0.1:  # deep nesting somewhere in an entry
        depth = rng.choice([17, 100, 1000, 100_000])
        text = text.replace('"found": "x"', '"found": ' + "[" * depth + "]" * depth, 1)
    elif r < 0.15:  # a repeated key
        text = text.replace('"engine_id": 10', '"engine_id": 10, "engine_id": 70', 1)
    elif r < 0.2:
        cut = rng.randrange(len(text) + 1)
        text = text[:cut]
    if rng.random() < 0.05:  # through the variable, as planning reads it
        path = ctx.tmp / f"table-{rng.getrandbits(48):x}.json"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        old = os.environ.get(known_bad.ENV_VAR)
        os.environ[known_bad.ENV_VAR] = os.fspath(path)
        try:
            pointwise_graph().build(device_properties=ctx.props, cache=False).close()
        finally:
            if old is None:
                os.environ.pop(known_bad.ENV_VAR, None)
            else:
                os.environ[known_bad.ENV_VAR] = old
            path.unlink()
        entries = known_bad.load_table(path=None, text=text)
    else:
        entries = known_bad.load_table(text=text)
    # Accepted: every entry must mean what it says (checked independently of the parser).
    data = json.loads(text)
    if set(data) != {"schema", "entries"} or type(data["schema"]) is not int:
        raise SilentAcceptance(f"a table with keys {sorted(data)} / schema {data['schema']!r}")
    for i, (raw, e) in enumerate(zip(data["entries"], entries, strict=True)):
        if not set(raw) <= _ENTRY_KEYS:
            raise SilentAcceptance(
                f"entries[{i}] with unknown keys {sorted(set(raw) - _ENTRY_KEYS)}"
            )
        if not all(_layout_ok(x) for x in e.layouts):
            raise SilentAcceptance(f"entries[{i}] with layouts {e.layouts}")
        if e.cudnn_max is not None and e.cudnn_max < e.cudnn_min:
            raise SilentAcceptance(f"entries[{i}] with cudnn_max below cudnn_min")
        if not all(isinstance(raw.get(k, ""), str) for k in ("found", "advice")):
            raise SilentAcceptance(f"entries[{i}] with a non-string found/advice")


# -- the typed backend layer -----------------------------------------------------------------------
def _hostile_int(rng: random.Random) -> int:
    return rng.choice([0, 0, -1, 1, 2, 3, 7, 32, *INTS[:16]])


def _tensor(rng: random.Random, uid: int, dims: list[int], dtype: str = "FLOAT") -> Any:
    from pycudnn.backend import BackendDescriptor

    if rng.random() < 0.2:
        dims = [_hostile_int(rng) if rng.random() < 0.3 else d for d in dims]
    t = BackendDescriptor("TENSOR")
    t.set("TENSOR_UNIQUE_ID", uid)
    t.set("TENSOR_DIMENSIONS", dims)
    strides, s = [], 1
    for d in reversed(dims):
        strides.insert(0, s)
        s = s * max(d, 1) % (1 << 62)
    if rng.random() < 0.1:
        strides = [_hostile_int(rng) for _ in dims]
    t.set("TENSOR_STRIDES", strides)
    t.set("TENSOR_BYTE_ALIGNMENT", 16 if rng.random() < 0.9 else _hostile_int(rng))
    t.set("TENSOR_DATA_TYPE", dtype)
    if rng.random() < 0.1:
        t.set("TENSOR_VECTOR_COUNT", _hostile_int(rng))
        t.set("TENSOR_VECTORIZED_DIMENSION", _hostile_int(rng))
    t.finalize()
    return t


def _op(kind: str, prefix: str, values: dict[str, Any]) -> Any:
    from pycudnn.backend import BackendDescriptor

    op = BackendDescriptor(kind)
    for key, value in values.items():
        op.set(
            prefix + key, value, attr_type="BACKEND_DESCRIPTOR" if hasattr(value, "ptr") else None
        )
    return op


def backend_typed(rng: random.Random, ctx: Context) -> None:
    from pycudnn import _bindings
    from pycudnn.backend import BackendDescriptor

    scenario = rng.choice(("matmul", "reduction", "quantize", "dequantize", "conv", "resample",
                           "pointwise", "random_attr"))  # fmt: skip
    if scenario == "random_attr":
        # Any integer or enum attribute of the descriptor type it belongs to, a hostile value.
        specs = [s for s in _bindings.ATTRIBUTES.values() if s.descriptor_type is not None]
        spec = rng.choice(specs)
        d = BackendDescriptor(spec.descriptor_type)
        value: Any = rng.choice(
            [_hostile_int(rng), [_hostile_int(rng)] * rng.randint(0, 9), junk(rng)]
        )
        atype = None if spec.attr_type is not None else rng.choice(["INT64", "INT32", "DOUBLE"])
        d.set(spec.name, value, attr_type=atype)
        d.finalize()
        return
    batch = rng.choice([1, 2, _hostile_int(rng)])
    if scenario == "matmul":
        m = BackendDescriptor("MATMUL")
        m.set("MATMUL_COMP_TYPE", "FLOAT")
        m.finalize()
        op = _op("OPERATION_MATMUL", "OPERATION_MATMUL_", {
            "ADESC": _tensor(rng, 1, [batch, 4, 8]), "BDESC": _tensor(rng, 2, [batch, 8, 4]),
            "CDESC": _tensor(rng, 3, [batch, 4, 4]), "DESC": m})  # fmt: skip
        if rng.random() < 0.3:
            op.set("OPERATION_MATMUL_IRREGULARLY_STRIDED_BATCH_COUNT", _hostile_int(rng))
    elif scenario == "reduction":
        r = BackendDescriptor("REDUCTION")
        r.set("REDUCTION_OPERATOR", rng.choice(["ADD", "MAX", "MUL", "AMAX", "NORM2"]))
        r.set("REDUCTION_COMP_TYPE", "FLOAT")
        r.finalize()
        op = _op("OPERATION_REDUCTION", "OPERATION_REDUCTION_", {
            "XDESC": _tensor(rng, 1, [batch, 4, 8]),
            "YDESC": _tensor(rng, 2, [batch, rng.choice([1, 4, 0, _hostile_int(rng)]), 1]), "DESC": r})  # fmt: skip
    elif scenario in ("quantize", "dequantize"):
        name = "QUANTIZE" if scenario == "quantize" else "DEQUANTIZE"
        pre = f"OPERATION_BLOCK_SCALE_{name}_"
        x_dt, y_dt = ("FLOAT", "FP8_E4M3") if scenario == "quantize" else ("FP8_E4M3", "FLOAT")
        values = {"XDESC": _tensor(rng, 1, [32, 64], x_dt), "YDESC": _tensor(rng, 2, [32, 64], y_dt),
                  "SCALE_DESC": _tensor(rng, 3, [32, rng.choice([2, 1, 64])], "FP8_E8M0")}  # fmt: skip
        op = _op(f"OPERATION_BLOCK_SCALE_{name}", pre, values)
        op.set(pre + "MATH_PREC", "FLOAT")
        if rng.random() < 0.8:
            op.set(pre + "BLOCK_SIZE", rng.choice([32, 16, _hostile_int(rng)]))
    elif scenario in ("conv", "resample"):
        nd = rng.choice([2, 2, 1, 3, _hostile_int(rng)])
        arrays = {k: [rng.choice([1, 1, 2, _hostile_int(rng)]) for _ in range(max(min(nd, 4), 0))]
                  for k in ("a", "b", "c", "d")}  # fmt: skip
        x = _tensor(rng, 1, [1, 8, 8, 8])
        y = _tensor(rng, 3, [1, 8, rng.choice([8, 4, 0]), 8])
        if scenario == "conv":
            c = BackendDescriptor("CONVOLUTION")
            c.set("CONVOLUTION_SPATIAL_DIMS", nd)
            c.set("CONVOLUTION_COMP_TYPE", "FLOAT")
            c.set("CONVOLUTION_CONV_MODE", "CROSS_CORRELATION")
            c.set("CONVOLUTION_DILATIONS", arrays["a"])
            c.set("CONVOLUTION_FILTER_STRIDES", arrays["b"])
            c.set("CONVOLUTION_PRE_PADDINGS", arrays["c"])
            c.set("CONVOLUTION_POST_PADDINGS", arrays["d"])
            c.finalize()
            op = _op("OPERATION_CONVOLUTION_FORWARD", "OPERATION_CONVOLUTION_FORWARD_", {
                "X": x, "W": _tensor(rng, 2, [8, 8, 3, 3]), "Y": y, "CONV_DESC": c})  # fmt: skip
            op.set("OPERATION_CONVOLUTION_FORWARD_ALPHA", 1.0, attr_type="FLOAT")
            op.set("OPERATION_CONVOLUTION_FORWARD_BETA", 0.0, attr_type="FLOAT")
        else:
            r = BackendDescriptor("RESAMPLE")
            r.set("RESAMPLE_MODE", rng.choice(["MAXPOOL", "AVGPOOL_INCLUDE_PADDING"]))
            r.set("RESAMPLE_COMP_TYPE", "FLOAT")
            r.set("RESAMPLE_SPATIAL_DIMS", nd)
            r.set("RESAMPLE_WINDOW_DIMS", arrays["a"])
            r.set("RESAMPLE_STRIDES", arrays["b"])
            r.set("RESAMPLE_PRE_PADDINGS", arrays["c"])
            r.set("RESAMPLE_POST_PADDINGS", arrays["d"])
            r.finalize()
            op = _op(
                "OPERATION_RESAMPLE_FWD",
                "OPERATION_RESAMPLE_FWD_",
                {"XDESC": x, "YDESC": y, "DESC": r},
            )
    else:
        pw = BackendDescriptor("POINTWISE")
        pw.set("POINTWISE_MODE", rng.choice(["RELU_FWD", "ADD", "GEN_INDEX", "IDENTITY"]))
        pw.set("POINTWISE_MATH_PREC", "FLOAT")
        if rng.random() < 0.3:
            pw.set("POINTWISE_AXIS", _hostile_int(rng))
        pw.finalize()
        dims = [batch, rng.choice([1, 4]), 8]
        op = _op("OPERATION_POINTWISE", "OPERATION_POINTWISE_", {
            "PW_DESCRIPTOR": pw, "XDESC": _tensor(rng, 1, dims), "YDESC": _tensor(rng, 2, dims)})  # fmt: skip
    op.finalize()
    g = BackendDescriptor("OPERATIONGRAPH")
    g.set("OPERATIONGRAPH_OPS", [op])
    g.finalize()


# -- verification tolerances -------------------------------------------------------------------------
_REALS = [0.0, 1e-3, 1.0, -1e-3, math.nan, math.inf, -math.inf, 10**400, 1e308, 5e-324, True, "1"]


def tolerance(rng: random.Random, ctx: Context) -> None:
    from pycudnn.verification import Tolerance, compare

    rtol = rng.choice([*_REALS, np.float32(1e-3), np.float64("nan"), junk(rng)])
    terms = rng.choice([(), (("a", rng.choice(_REALS)),), junk(rng)])
    tol = Tolerance(rtol, rng.choice([False, False, True, junk(rng)]), terms)
    shape = (rng.randint(1, 4), rng.randint(1, 5))
    ref = np.asarray(np.random.default_rng(rng.getrandbits(32)).standard_normal(shape))
    special = rng.choice([0.0, 0.1, 0.5, 1.0])
    mask = np.random.default_rng(rng.getrandbits(32)).random(shape) < special
    ref[mask] = rng.choice([math.nan, math.inf, -math.inf])
    got = ref + rng.choice([0.0, 1e-6, 1e-2, 1.0]) * rng.choice([1, -1])
    if rng.random() < 0.3:
        got[np.random.default_rng(rng.getrandbits(32)).random(shape) < 0.2] = rng.choice(
            [math.nan, math.inf, 0.0]
        )
    if rng.random() < 0.1:
        got = rng.choice([got.astype(np.float16), got.astype(np.float32), junk(rng)])
    check = compare("y", got, ref, tol)
    finite = np.isfinite(ref)
    if check.passed:
        if not finite.any():
            raise SilentAcceptance("passed against a reference that is NaN/Inf everywhere")
        if not (math.isfinite(check.tolerance.rtol) and check.tolerance.rtol >= 0):
            raise SilentAcceptance(f"passed with rtol {check.tolerance.rtol!r}")
        g = np.asarray(got, dtype=np.float64)
        if not np.array_equal(np.isnan(g[~finite]), np.isnan(ref[~finite])):
            raise SilentAcceptance("passed with NaN where the reference is not, or the reverse")


TARGETS: dict[str, Callable[[random.Random, Context], None]] = {
    "special_files": special_files,
    "known_bad_tables": known_bad_tables,
    "backend_typed": backend_typed,
    "tolerance": tolerance,
}
#: Inputs per unit of --fuzz. special_files plans in a fifth of its inputs (a plan-cache file
#: replaced, then a rebuild: ~0.3 s); the other three are milliseconds an input.
WEIGHTS: dict[str, float] = {
    "special_files": 0.5,
    "known_bad_tables": 4,
    "backend_typed": 10,
    "tolerance": 10,
}
