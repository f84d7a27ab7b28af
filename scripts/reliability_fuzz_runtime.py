"""Fuzz targets of the runtime surfaces: the array and stream protocols, the libraries' environment
variables (their logging ones included), and ``os.fork()`` while threads plan.

``arrays``: DLPack producers whose capsule fields are random (dims, shape and strides arrays,
data pointer, byte offset, type, device, DLPack version) and CUDA-array-interface dicts mutated
key by key, into every array-taking entry point. ``streams``: stream objects of every protocol,
with a model of what each must give (a handle, a TypeError or a ValueError), so that a silent
acceptance is caught, not only a crash. ``envvars`` and ``fork`` run each input in a child process
(the variables are read when a library loads; a fork needs threads): the child's crash or hang is
passed on to the harness as this worker's own, so it is counted as one.
"""

from __future__ import annotations

import ctypes
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from reliability_fuzz import INTS, PROPS_FILE, REPO, Context, junk

#: A child that takes longer than this is hung (the harness's own limit is 60 s an input).
CHILD_LIMIT_S = 45.0


# -- arrays ------------------------------------------------------------------------------------------
class _FuzzDLPack:
    """A DLPack producer whose capsule carries random fields (host memory behind it when valid)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.a = np.zeros(64, np.float32)
        self.keep: list[Any] = []
        self.device: Any = (
            (1, 0)
            if rng.random() < 0.7
            else rng.choice(
                [(2, 0), (1, rng.choice(INTS)), (rng.choice(INTS), 0), junk(rng), (13, 0), (3, 0)]
            )
        )
        self.raises = rng.random() < 0.03

    def __dlpack_device__(self) -> Any:
        if self.raises and self.rng.random() < 0.5:
            raise RuntimeError("producer's device query failed")
        return self.device

    def __dlpack__(self, **kwargs: Any) -> Any:
        from _nvbind import dlpack as dl

        rng = self.rng
        if self.raises:
            raise rng.choice([RuntimeError("export failed"), BufferError("cannot"), MemoryError()])
        if rng.random() < 0.03:
            return rng.choice([None, object(), b"capsule", junk(rng)])
        device = self.device if isinstance(self.device, tuple) and len(self.device) == 2 else (1, 0)
        try:
            dev = tuple(int(v) % 2**31 for v in device)
        except (TypeError, ValueError):
            dev = (1, 0)
        capsule = dl.export_dlpack(
            self.a.ctypes.data, (4, 4), (4, 1), self.a.dtype, dev, owner=self.a, versioned=True
        )
        get = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_GetPointer", ctypes.pythonapi)
        )
        managed = dl._DLManagedTensorVersioned.from_address(get(capsule, b"dltensor_versioned"))
        t = managed.dl_tensor
        for _ in range(rng.randint(1, 3)):
            self._damage(rng, managed, t)
        return capsule

    def _damage(self, rng: random.Random, managed: Any, t: Any) -> None:
        field = rng.choice(
            ["ndim", "shape", "strides", "data", "offset", "dtype", "device", "version", "none"]
        )
        if field == "ndim":
            t.ndim = rng.choice([0, 1, 2, 3, 8, 64, 65, -1, -(2**31), 2**31 - 1, 1000])
        if field in ("ndim", "shape", "strides"):
            n = max(0, min(int(t.ndim), 64))
            if field != "strides":
                values = [rng.choice([0, 1, 2, 4, *INTS]) % 2**63 for _ in range(n)]
                if rng.random() < 0.3:
                    values = [-v for v in values]
                arr = (ctypes.c_int64 * max(n, 1))(*values)
                self.keep.append(arr)
                t.shape = None if rng.random() < 0.15 else ctypes.cast(arr, type(t.shape))
            values = [rng.choice([-1, 0, 1, 4, 16, 2**40, 2**62, -(2**62)]) for _ in range(n)]
            arr = (ctypes.c_int64 * max(n, 1))(*values)
            self.keep.append(arr)
            t.strides = None if rng.random() < 0.3 else ctypes.cast(arr, type(t.strides))
        elif field == "data":
            t.data = rng.choice([None, 1, 2**63, 2**64 - 4, self.a.ctypes.data + 3])
        elif field == "offset":
            t.byte_offset = rng.choice([0, 4, 2**63, 2**64 - 1])
        elif field == "dtype":
            t.dtype.code = rng.choice([0, 1, 2, 4, 5, 6, 10, 99, 255])
            t.dtype.bits = rng.choice([0, 1, 8, 16, 24, 32, 64, 255])
            t.dtype.lanes = rng.choice([1, 1, 0, 2, 65535])
        elif field == "device":
            t.device.device_type = rng.choice([1, 2, 3, 13, 0, 99])
            t.device.device_id = rng.choice([0, 1, -1, 2**31 - 1])
        elif field == "version":
            managed.version.major = rng.choice([0, 1, 2, 99, 2**32 - 1])
            managed.version.minor = rng.choice([0, 1, 2**32 - 1])


class _Interface:
    def __init__(self, iface: Any, raises: bool) -> None:
        self._iface, self._raises = iface, raises

    @property
    def __cuda_array_interface__(self) -> Any:
        if self._raises:
            raise RuntimeError("the producer's property failed")
        return self._iface


def _fuzz_interface(rng: random.Random) -> _Interface:
    iface: dict[str, Any] = {
        "shape": (4, 4),
        "typestr": "<f4",
        "data": (0x7F0000000000, False),
        "version": 3,
        "strides": None,
        "stream": None,
    }
    values = {
        "shape": lambda: rng.choice([(), (0,), (4, -1), (2**63, 1), (1,) * 70, [4, 4], (4.0,)]),
        "typestr": lambda: rng.choice(["<f2", ">f4", "|V2", "<f0", "garbage", "<c8", 42, ""]),
        "data": lambda: rng.choice([(0, False), (2**64 - 4, True), (-1, False), (1.5, 0), None]),
        "version": lambda: rng.choice([0, 1, 2, 4, -1, "3", True, None]),
        "strides": lambda: rng.choice([(16, 4), (4,), (2**62, 4), (-(2**63), 4), (6, 4), "x"]),
        "stream": lambda: rng.choice([1, 2, 0, -1, 2**64, 1.5, True, "1", 0x7F00]),
        "mask": lambda: rng.choice([None, object(), True]),
        "descr": lambda: rng.choice([5, [("", "<f4")], [("a", "<f4"), ("b", "<f4")], "x"]),
    }
    for _ in range(rng.randint(0, 3)):
        key = rng.choice(list(values))
        iface[key] = values[key]() if rng.random() < 0.85 else junk(rng)
    if rng.random() < 0.05:
        del iface[rng.choice(list(iface))]
    outer: Any = iface if rng.random() < 0.95 else junk(rng)
    return _Interface(outer, rng.random() < 0.02)


_PLANS: dict[int, Any] = {}


def _plan(ctx: Context) -> Any:
    # One small convolution plan per worker, built once (the entry point that executes plans).
    if id(ctx) not in _PLANS:
        import pycudnn

        g = pycudnn.Graph("conv")
        x = g.tensor([1, 8, 4, 4], fmt="NHWC", dtype="float16", name="x")
        w = g.tensor([8, 8, 1, 1], fmt="NHWC", dtype="float16", name="w")
        g.conv_fprop(x, w, name="conv")
        _PLANS[id(ctx)] = g.build(device_properties=ctx.props, cache=False)
    return _PLANS[id(ctx)]


def _no_gpu_refusal(exc: RuntimeError) -> bool:
    """The documented refusal of a well-formed device array on a machine without a usable GPU."""
    from _nvbind.cuda import driver_status

    text = str(exc)
    return not driver_status().usable and ("which device its memory is on" in text or "GPU" in text)


def arrays(rng: random.Random, ctx: Context) -> None:
    import pycudnn
    import pycutensor
    from _nvbind.arrays import as_array_view
    from pycudnn import DeviceArray

    obj: Any = _FuzzDLPack(rng) if rng.random() < 0.6 else _fuzz_interface(rng)
    entry = rng.choice(["view", "tensor_like", "from_array", "from_dlpack", "einsum", "contract",
                        "execute"])  # fmt: skip
    # Entry points that run work get host (kDLCPU) producers only: one accepted by mistake is then
    # refused as host memory instead of handing a random pointer to a GPU.
    if entry in ("einsum", "contract", "execute") and not (
        isinstance(obj, _FuzzDLPack) and obj.device == (1, 0)
    ):
        entry = "view"
    calls: dict[str, Callable[[], Any]] = {
        "view": lambda: as_array_view(obj, name="x", stream_ptr=rng.choice([None, 0, 7])),
        "tensor_like": lambda: pycudnn.Graph().tensor_like(obj),
        "from_array": lambda: DeviceArray.from_array(obj),
        "from_dlpack": lambda: DeviceArray.from_dlpack(obj),
        "einsum": lambda: pycutensor.einsum("ij->ji", obj),
        "contract": lambda: pycutensor.contract(obj, "ij", obj, "jk", obj, "ik"),
        "execute": lambda: _plan(ctx).execute({"x": obj, "w": obj, "conv.y": obj}),
    }
    try:
        calls[entry]()
    except RuntimeError as exc:
        if not _no_gpu_refusal(exc):  # a well-formed array, which this machine cannot use
            raise


# -- streams -----------------------------------------------------------------------------------------
class _Stream:
    def __init__(self, value: Any, method: bool = True) -> None:
        if method:
            self.__cuda_stream__ = lambda: _raise_or(value)
        else:
            self.__cuda_stream__ = value


class _TorchStream:
    def __init__(self, value: Any) -> None:
        self.cuda_stream = value


def _raise_or(value: Any) -> Any:
    if isinstance(value, BaseException):
        raise value
    return value


def _is_handle_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _model(kind: str, value: Any) -> int | type[Exception]:
    """What stream_handle must give for a stream built as (kind, value)."""
    if kind == "plain":
        if value is None:
            return 0
        if not _is_handle_int(value):
            return TypeError
        return int(value) if 0 <= value < 2**64 else ValueError
    if kind == "torch":
        if not _is_handle_int(value):
            return TypeError
        return int(value) if 0 <= value < 2**64 else ValueError
    if kind == "attribute":
        return TypeError
    if isinstance(value, BaseException):
        return ValueError
    if not (isinstance(value, tuple) and len(value) == 2 and all(map(_is_handle_int, value))):
        return TypeError
    if value[0] != 0 or not 0 <= value[1] < 2**64:
        return ValueError
    return int(value[1])


def streams(rng: random.Random, ctx: Context) -> None:
    from _nvbind.cuda import stream_handle

    handles = [0, 1, 2, 7, 2**64 - 1, 2**64, -1, 1.9, True, "12", b"12", None, np.int64(5),
               np.uint64(2**64 - 1), np.bool_(True), float("nan"), 10**30]  # fmt: skip
    kind = rng.choice(["plain", "protocol", "protocol", "torch", "attribute"])
    value: Any = rng.choice(handles)
    if kind == "protocol":
        shape = rng.random()
        if shape < 0.6:
            value = (rng.choice([0, 0, 0, 1, -1, 2.0, True, "0"]), rng.choice(handles))
        elif shape < 0.8:
            value = rng.choice([(0,), (0, 1, 2), [0, 5], 5, None, "0,5", RuntimeError("closed")])
    stream = {
        "plain": lambda: value,
        "protocol": lambda: _Stream(value),
        "torch": lambda: _TorchStream(value),
        "attribute": lambda: _Stream((0, 5), method=False),
    }[kind]()
    want = _model(kind, value)
    try:
        got: Any = stream_handle(stream)
    except (TypeError, ValueError) as exc:
        got = type(exc)
        if isinstance(want, int) or not issubclass(got, want):
            raise AssertionError(
                f"{kind} stream {value!r}: {got.__name__} ({exc}), want {want}"
            ) from exc
        raise
    if got != want:  # a silent acceptance, or the wrong handle: the campaign must see it
        raise AssertionError(f"{kind} stream {value!r} gave handle {got!r}, want {want}")


# -- environment variables (each input in a child; stdout sometimes a closed pipe or /dev/full) ---------------------------------------------------
_ENV_CHILD = """
import os, sys
refused = (ValueError, TypeError, KeyError, OSError, ImportError, NotImplementedError, RuntimeError)
try:
    import pycudnn, pycutensor
    pycudnn.version()
    if os.environ.get("FUZZ_BUILD") == "1":
        g = pycudnn.Graph("t")
        a = g.tensor([1, 16, 16], dtype="float16", name="a")
        b = g.tensor([1, 16, 16], dtype="float16", name="b")
        g.matmul(a, b, name="mm")
        g.build(device_properties=pycudnn.DeviceProperties.load(sys.argv[1]), cache=False)
except refused as exc:
    pass
try:
    pycutensor.version()
    pycutensor.parse_einsum("ij->ji", (2, 3))
except refused as exc:
    pass
"""


def _env_paths(ctx: Context) -> dict[str, str]:
    """Odd destinations made once per worker: a FIFO, a directory, a file in a missing one."""
    fifo = ctx.tmp / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    plain = ctx.tmp / "plain.log"
    plain.touch()
    return {
        "fifo": str(fifo),
        "dir": str(ctx.tmp),
        "missing": str(ctx.tmp / "missing" / "x.log"),
        "under_file": str(plain / "x.log"),
        "file": str(ctx.tmp / "ok-%i.log"),
        "full": "/dev/full",
        "null": "/dev/null",
        "stdout_dev": "/dev/stdout",
    }


def _sublibrary() -> str:
    from pycudnn._lib import LIB

    directory = os.path.dirname(LIB.path)
    names = sorted(n for n in os.listdir(directory) if n.startswith("libcudnn_"))
    return os.path.join(directory, names[0]) if names else LIB.path


def _run_child(argv: list[str], env: dict[str, str], stdout: Any, cwd: Any) -> None:
    """Run a child; its crash or hang becomes this worker's (the harness counts it there)."""
    proc = subprocess.Popen(
        argv, stdout=stdout, stderr=subprocess.PIPE, env=env, cwd=cwd, text=True
    )
    try:
        _, err = proc.communicate(timeout=CHILD_LIMIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        time.sleep(3600)  # a hang of this input: the harness's timeout reports it
        return
    if proc.returncode < 0:
        sys.stderr.write(err[-2000:])
        sys.stderr.flush()
        os.kill(os.getpid(), -proc.returncode)  # the same signal: counted as this input's crash
        time.sleep(5)
    if proc.returncode:
        raise AssertionError(f"the child failed ({proc.returncode}): {err[-300:]}")


def envvars(rng: random.Random, ctx: Context) -> None:
    paths = _env_paths(ctx)
    levels = ["0", "1", "2", "3", "5", "-1", "x", "", "99999999999", " 2"]
    dests = [*paths.values(), "stdout", "stderr", "STDOUT", ""]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDNN_", "CUTENSOR_"))}
    env["PYTHONPATH"] = str(REPO)
    choices: dict[str, Callable[[], str]] = {
        "CUDNN_LOGLEVEL_DBG": lambda: rng.choice(levels),
        "CUDNN_LOGINFO_DBG": lambda: rng.choice(levels),
        "CUDNN_LOGERR_DBG": lambda: rng.choice(levels),
        "CUDNN_LOGDEST_DBG": lambda: rng.choice(dests),
        "CUTENSOR_LOG_LEVEL": lambda: rng.choice(levels),
        "CUTENSOR_LOG_MASK": lambda: rng.choice(levels),
        "CUTENSOR_LOG_FILE": lambda: rng.choice(dests),
        "PYCUDNN_LIBRARY": lambda: rng.choice(
            [_sublibrary(), paths["dir"], paths["missing"], paths["null"], paths["fifo"], ""]
        ),
        "PYCUDNN_KNOWN_BAD_ENGINES": lambda: rng.choice([paths["dir"], paths["null"], "x"]),
    }
    for name in rng.sample(list(choices), rng.randint(1, 4)):
        env[name] = choices[name]()
    env["FUZZ_BUILD"] = "1" if rng.random() < 0.2 else "0"
    out = rng.random()
    if out < 0.1:  # stdout a pipe whose reader has gone
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            _run_child([sys.executable, "-c", _ENV_CHILD, str(PROPS_FILE)], env, write_end, ctx.tmp)
        finally:
            os.close(write_end)
        return
    with open("/dev/full" if out < 0.15 else os.devnull, "w") as sink:
        _run_child([sys.executable, "-c", _ENV_CHILD, str(PROPS_FILE)], env, sink, ctx.tmp)


# -- fork with threads (each input in a child) -------------------------------------------------------
_FORK_CHILD = """
import os, sys, threading, time
import pycudnn
from _nvbind.cuda import driver_status

props = pycudnn.DeviceProperties.load(sys.argv[1])
threads_n, forks, work, ending = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]


def build(i):
    g = pycudnn.Graph(f"g{i}")
    c = 8 * (1 + i % 2)
    x = g.tensor([1, c, 8, 8], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([c, c, 3, 3], fmt="NHWC", dtype="float16", name="w")
    g.conv_fprop(x, w, padding=1, name="conv")
    g.build(device_properties=props, cache=False).close()


stop = threading.Event()


def loop(k):
    i = k
    while not stop.is_set():
        if work in ("build", "mixed"):
            build(i)
        if work in ("probe", "mixed"):
            driver_status()
        i += 1


build(0)
ts = [threading.Thread(target=loop, args=(k,), daemon=True) for k in range(threads_n)]
for t in ts:
    t.start()
for _ in range(forks):
    time.sleep(0.1)
    pid = os.fork()
    if pid == 0:
        build(99)
        if ending == "exit":
            sys.exit(0)
        if ending == "return":
            stop.set()  # the child's threads do not exist; leave the loop and end normally
            break
        os._exit(0)
    start = time.monotonic()
    while not os.waitpid(pid, os.WNOHANG)[0]:
        if time.monotonic() - start > 30:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            print("child hung", file=sys.stderr)
            os.kill(os.getpid(), 9)
        time.sleep(0.01)
stop.set()
for t in ts:
    t.join(timeout=30)
"""


def fork(rng: random.Random, ctx: Context) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [
        sys.executable, "-c", _FORK_CHILD, str(PROPS_FILE), str(rng.randint(1, 4)),
        str(rng.randint(1, 2)), rng.choice(["build", "probe", "mixed"]),
        rng.choice(["exit", "return", "_exit"]),
    ]  # fmt: skip
    with open(os.devnull, "w") as sink:
        _run_child(argv, env, sink, ctx.tmp)


TARGETS: dict[str, Callable[[random.Random, Context], None]] = {
    "fork": fork, "envvars": envvars, "arrays": arrays, "streams": streams,
}  # fmt: skip
#: A child process per input for envvars (~1 s) and fork (~3 s): few of them.
WEIGHTS: dict[str, float] = {"arrays": 4, "streams": 4, "envvars": 0.1, "fork": 0.01}
