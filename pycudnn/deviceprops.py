"""Device properties for deviceless ("ahead-of-time") planning: ``CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR``.

cuDNN 9.8+ can run heuristics and build execution plans for a GPU it cannot see, from a JSON
description of that GPU. The description must be captured on the real device:

    python -m pycudnn deviceprops --save h100.json          # on the target GPU

and can then be used anywhere (the NVIDIA driver library ``libcuda.so.1`` must still be installed,
cuDNN loads it, but no GPU is needed)::

    props = pycudnn.DeviceProperties.load("h100.json")
    plan = graph.build(device_properties=props)
    plan.save("conv.plan.json")                             # later loaded on an H100

The JSON is validated in Python before cuDNN sees it (a missing key is named), because cuDNN's own
message for it is an opaque ``BAD_PARAM``. Values are never invented here: a JSON that did not come
from ``cudnnBackendGetAttribute(DEVICEPROP_JSON_REPRESENTATION)`` on a device is the caller's
responsibility.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, overload

from _nvbind.cuda import driver_status
from _nvbind.ffi import format_version
from _nvbind.files import read_text, write_text
from _nvbind.forksafe import fork_safe_lock
from _nvbind.lazy import cached_attribute
from _nvbind.resource import Closable

from . import log
from ._info import version
from ._plan_json import parse_json_for_cudnn, utf8_length
from ._versions import DEVICELESS_PLANS_SINCE, DEVICEPROP_SINCE
from .backend import BackendDescriptor
from .errors import CudnnError

__all__ = ["KNOWN_KEYS", "REQUIRED_KEYS", "VERSION_KEY", "DeviceProperties"]

#: Keys every cuDNN with DEVICEPROP writes and requires (cuDNN 9.19 writes exactly these 23; a
#: missing one fails finalize with ``!json_object.HasMember(key)``). The two grid/block entries
#: are 3-element integer lists and ``deviceName`` is a string; every other value is an integer.
#: The set a cuDNN version needs is that version's: later versions require more (cuDNN 9.27 also
#: needs ``memoryBusWidth``), so a file missing a key the *loaded* cuDNN needs is found by asking
#: it (see :meth:`DeviceProperties.descriptor`), never by one version's list.
REQUIRED_KEYS: tuple[str, ...] = (
    "maxGridSize",
    "maxBlockSize",
    "regsPerBlock",
    "multiProcessorCount",
    "warpSize",
    "maxSharedMemoryPerBlock",
    "maxSharedMemoryPerBlockOptin",
    "reservedSharedMemoryPerBlock",
    "maxRegistersPerSM",
    "maxCtasPerSM",
    "maxThreadsPerBlock",
    "maxThreadsPerSM",
    "pciDeviceId",
    "isTccDriver",
    "supportCoopLaunch",
    "totalGlobalMem",
    "smClockRateKHz",
    "memClockRateKHz",
    "l2CacheSize",
    "cudaDeviceId",
    "deviceVer",
    "driverVer",
    "deviceName",
)
#: Keys some cuDNN versions require beyond :data:`REQUIRED_KEYS` (integers).
_LATER_KEYS: tuple[str, ...] = ("memoryBusWidth",)
KNOWN_KEYS: tuple[str, ...] = REQUIRED_KEYS + _LATER_KEYS
#: The key under which a saved file records the cuDNN version that wrote it (e.g. 91900). It is
#: this library's, not cuDNN's: it is removed from the JSON cuDNN is given.
VERSION_KEY = "cudnnVersion"
_TRIPLES = ("maxGridSize", "maxBlockSize")
_STRINGS = ("deviceName",)
_MAX_NAME_BYTES = 255  # + the NUL: cudaDeviceProp::name is char[256]
# Keys that identify *which* device of a machine, not what it is: left out of the fingerprint so
# that two identical GPUs share cached plans.
_NOT_IN_FINGERPRINT = ("cudaDeviceId", VERSION_KEY)


#: Keys cuDNN reads as 64-bit ints (measured, cuDNN 9.27: values up to 2**63 - 1 finalize); every
#: other integer key is a C ``int`` in ``cudaDeviceProp`` and cuDNN refuses values from 2**31 on.
_INT64_KEYS = ("totalGlobalMem",)
_INT32_LIMIT = 2**31
_INT64_LIMIT = 2**63


#: Bounds tighter than the C type's, for the keys whose value cuDNN rounds up in a 32-bit int
#: while planning: near 2**31 the sum wraps negative, and the process dies inside cuDNN instead of
#: an error (measured, cuDNN 9.28: warpSize from 2**31 - 63 divides by zero planning an RMSNorm
#: backward graph, SIGFPE; l2CacheSize from 2**31 - 655359 aborts planning a LayerNorm, "Timing
#: model abort."). The bounds are far beyond any GPU's (every CUDA GPU has 32-thread warps, and
#: CUDA's blocks at most 1024 threads; the largest L2 cache is about 126 MiB).
_BOUNDS: dict[str, tuple[int, int, str]] = {
    "warpSize": (1, 1024, "a warp is at most a block, and a block at most 1024 threads"),
    "l2CacheSize": (0, 2**30, "1 GiB, far beyond any GPU's L2 cache"),
    # Not a crash: cuDNN 9.28 plans for a GPU of 0 SMs without a word (a hand-edited file).
    "multiProcessorCount": (1, _INT32_LIMIT - 1, "a GPU has at least one SM"),
}


def _is_int(v: Any) -> bool:
    # A JSON true is not an int to cuDNN: it refuses it with an opaque "!json_object.Is<T>()".
    return isinstance(v, int) and not isinstance(v, bool)


def _check_range(key: str, v: int) -> None:
    # cuDNN's JSON reader refuses a value beyond its field's C type with a message naming neither
    # the key nor the rule (the key is only in its log): name both here.
    limit = _INT64_LIMIT if key in _INT64_KEYS else _INT32_LIMIT
    if v >= limit:
        width = "64" if limit == _INT64_LIMIT else "32"
        raise ValueError(
            f"device-properties key {key!r} must fit a signed {width}-bit int (below "
            f"{limit}), got {v}"
        )


def validate_json(data: Mapping[str, Any]) -> None:
    """Check the keys and value types cuDNN needs; raise ``ValueError`` naming the first problem."""
    if not isinstance(data, Mapping):
        raise TypeError(f"device properties must be a JSON object, not {type(data).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise ValueError(
            f"device-properties JSON lacks the key {missing[0]!r}"
            + (
                f" (and {len(missing) - 1} more: {', '.join(missing[1:])})"
                if len(missing) > 1
                else ""
            )
            + "; capture a complete one on the target GPU with `python -m pycudnn deviceprops "
            "--save FILE`"
        )
    written = data.get(VERSION_KEY)
    if written is not None and (
        isinstance(written, bool) or not isinstance(written, int) or written < 90000
    ):
        raise ValueError(
            f"device-properties key {VERSION_KEY!r} must be the cuDNN version that wrote the file "
            f"(e.g. 91900), got {written!r}"
        )
    for key in (k for k in KNOWN_KEYS if k in data):
        v = data[key]
        if key in _TRIPLES:
            if not (isinstance(v, list) and len(v) == 3 and all(_is_int(x) and x > 0 for x in v)):
                raise ValueError(
                    f"device-properties key {key!r} must be a list of 3 positive ints, got {v!r}"
                )
            for x in v:
                _check_range(key, x)  # int[3] in cudaDeviceProp
        elif key in _STRINGS:
            if not isinstance(v, str):
                raise ValueError(f"device-properties key {key!r} must be a string, got {v!r}")
            # cuDNN copies the name into a fixed 256-byte buffer (cudaDeviceProp::name) without a
            # bound: a longer one corrupts memory and aborts or crashes the process (observed, 9.28).
            size = utf8_length(v, f"device-properties key {key!r}")
            if size > _MAX_NAME_BYTES:
                raise ValueError(
                    f"device-properties key {key!r} must be at most {_MAX_NAME_BYTES} bytes "
                    f"(UTF-8), got {size}"
                )
        elif not _is_int(v) or v < 0:
            raise ValueError(f"device-properties key {key!r} must be a non-negative int, got {v!r}")
        else:
            _check_range(key, v)
            low, high, why = _BOUNDS.get(key, (0, v, ""))
            if not low <= v <= high:
                raise ValueError(
                    f"device-properties key {key!r} must be from {low} to {high} ({why}), got {v}"
                )
    if data["deviceVer"] < 100 or data["deviceVer"] % 10:
        raise ValueError(
            f"device-properties key 'deviceVer' must be SM major*100 + minor*10 (e.g. 900 for sm_90), "
            f"got {data['deviceVer']!r}"
        )


class _class_or_instance:
    """A method callable on the class (``self`` is None) or on an instance: ``why_no_plans``
    answers for the process on the class, and for the process and the properties on an
    instance (an explicit descriptor, where a ``staticmethod`` would ignore the instance)."""

    def __init__(self, func: Callable[[Any], str | None]) -> None:
        self.func = func
        functools.update_wrapper(self, func)  # type: ignore[arg-type]

    def __get__(self, obj: Any, owner: Any = None) -> Callable[[], str | None]:
        func = self.func

        @functools.wraps(func)  # keeps the name and docstring for help() and the API docs
        def bound() -> str | None:
            return func(obj)

        return bound


class _IntProperty:
    """A read-only property of :class:`DeviceProperties`: the integer the captured properties hold
    under ``key`` (``doc`` is its docstring, followed by the key)."""

    def __init__(self, key: str, doc: str) -> None:
        self.key = key
        self.__doc__ = f"{doc} (``{key}``)."

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _IntProperty: ...

    @overload
    def __get__(self, obj: DeviceProperties, owner: type | None = None) -> int: ...

    def __get__(
        self, obj: DeviceProperties | None, owner: type | None = None
    ) -> int | _IntProperty:
        if obj is None:
            return self
        return int(obj._data[self.key])

    def __set__(self, obj: DeviceProperties, value: object) -> None:
        raise AttributeError(f"{self.key}: the captured device properties are read-only")


class DeviceProperties(Closable):
    """A GPU's properties as cuDNN sees them, and the finalized DEVICEPROP descriptor built from them.

    Create with :meth:`from_device` (on the GPU), :meth:`from_json` or :meth:`load`. Pass to
    ``Graph.build(device_properties=...)`` / ``Plan.from_json(..., device_properties=...)``. The
    object owns its descriptor: ``close()`` (or ``with``) releases it; plans built with it keep it
    alive.
    """

    def __init__(self, data: Mapping[str, Any], *, _descriptor: Any = None) -> None:
        validate_json(data)
        try:
            text = json.dumps(dict(data), separators=(",", ":"))
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"device properties cannot be written as JSON: {exc}") from None
        # Parsed back and checked again: json.dumps writes the keys 1 and "1" both as "1", and
        # the text cuDNN is given must not hold a key twice (it would read the first copy). The
        # parse is also the properties' own copy: the caller's lists (``maxGridSize``) are not
        # shared, so changing them later cannot change what is saved but not what cuDNN was given.
        self._data: dict[str, Any] = parse_json_for_cudnn(text, "the device-properties JSON")
        # What cuDNN is given: its own keys, without the version this library records.
        self._text = json.dumps(
            {k: v for k, v in self._data.items() if k != VERSION_KEY}, separators=(",", ":")
        )
        self._descriptor = _descriptor
        self._lock = fork_safe_lock(self, "_lock")

    @_class_or_instance
    def why_no_plans(self: DeviceProperties | None) -> str | None:
        """Why execution plans for device properties cannot be built in this process, or None
        when they can: they need the NVIDIA driver library ``libcuda.so.1`` (not a GPU), cuDNN
        9.8 (``CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR``) and, without a GPU, cuDNN 9.10.

        ``DeviceProperties.why_no_plans()`` asks about the process only: it loads cuDNN and calls
        nothing else in it. ``props.why_no_plans()`` also asks about these properties: it builds
        their ``DEVICEPROP`` descriptor (``cudnnBackendFinalize``), and says so when the loaded
        cuDNN refuses them, e.g. a key it requires that the file lacks (``memoryBusWidth`` from
        9.27 on)."""
        why = _why_no_plans_here()
        if why is not None or self is None:
            return why

        try:
            self.descriptor  # noqa: B018 - built (and kept) for what cuDNN says of it
        except (ValueError, CudnnError) as exc:
            return str(exc)
        return None

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def from_device(cls, ordinal: int = 0) -> DeviceProperties:
        """Query GPU ``ordinal`` (``DEVICEPROP_DEVICE_ID``, finalize, read the JSON). Needs the GPU."""
        if isinstance(ordinal, bool) or not isinstance(ordinal, int):
            raise TypeError(f"ordinal must be an int, not {ordinal!r}")
        if ordinal < 0:
            raise ValueError(f"ordinal must be non-negative, got {ordinal}")

        st = driver_status()
        if not st.usable:
            raise RuntimeError(
                f"capturing device properties needs the GPU itself: {st.reason}. Capture them on the "
                "target machine with `python -m pycudnn deviceprops --save FILE` and load the file "
                "here with DeviceProperties.load(FILE)"
            )
        if ordinal >= st.device_count:
            raise ValueError(f"no CUDA device {ordinal}: this machine has {st.device_count}")

        desc = BackendDescriptor("DEVICEPROP")
        try:
            desc.set("DEVICEPROP_DEVICE_ID", ordinal, attr_type="INT32")
            desc.finalize()
            text = desc.get("DEVICEPROP_JSON_REPRESENTATION", attr_type="CHAR")
        except BaseException:
            desc.close()
            raise
        data = json.loads(text)
        data[VERSION_KEY] = _loaded_version()
        return cls(data, _descriptor=desc)

    @classmethod
    def for_device(cls, ordinal: int = 0) -> DeviceProperties:
        """Like :meth:`from_device`, cached per process (device properties do not change)."""
        return _for_device(ordinal)

    @classmethod
    def from_json(cls, source: str | bytes | Mapping[str, Any]) -> DeviceProperties:
        """From a JSON text or an already parsed dict (validated; the descriptor is built lazily)."""
        if isinstance(source, (str, bytes, bytearray)):
            # Strict: a repeated key, a NUL or too deep a nesting is a ValueError (see
            # parse_json_for_cudnn), never a RecursionError or a silently dropped copy.
            data = parse_json_for_cudnn(source, "device-properties JSON")
        elif isinstance(source, Mapping):
            data = source
        else:
            raise TypeError(f"from_json takes a JSON string or a dict, not {type(source).__name__}")
        return cls(data)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> DeviceProperties:
        """Read a JSON file written by :meth:`save` (or ``python -m pycudnn deviceprops``)."""

        try:
            text = read_text(path, what="device-properties file")  # no FIFO, no /dev/zero
        except OSError as exc:
            raise OSError(
                f"cannot read device properties from {os.fspath(path)!r}: {exc}{_others(path, exc)}"
            ) from exc
        except UnicodeDecodeError as exc:
            raise ValueError(f"{os.fspath(path)}: not UTF-8 text ({exc})") from None
        try:
            return cls.from_json(text)
        except (ValueError, TypeError) as exc:  # TypeError: JSON that is not an object
            raise type(exc)(f"{os.fspath(path)}: {exc}") from None

    # -- output ------------------------------------------------------------------------------
    def to_json(self, *, indent: int | None = None) -> str:
        """The JSON text (as cuDNN wrote it, re-serialised), compact or indented by ``indent``:
        the same data either way, the version of cuDNN that wrote it included, so that
        ``from_json(props.to_json())`` equals ``props``."""
        if indent is None:
            return json.dumps(self._data, separators=(",", ":"))
        return json.dumps(self._data, indent=indent)

    def as_dict(self) -> dict[str, Any]:
        """A copy of the properties as cuDNN's JSON keys and values (a deep one: changing it
        leaves the properties as they are)."""
        data: dict[str, Any] = _fresh(self._data)
        return data

    @property
    def cudnn_version(self) -> int | None:
        """The cuDNN version that wrote these properties (e.g. 91900), when the file says."""
        v = self._data.get(VERSION_KEY)
        return int(v) if v is not None else None

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the JSON (indented, UTF-8) to ``path``, atomically (a temporary file renamed
        over it); a FIFO, device or directory at ``path`` is refused with an ``OSError``."""

        write_text(path, self.to_json(indent=2) + "\n", what="device-properties file")

    # -- the descriptor ----------------------------------------------------------------------
    @property
    def descriptor(self) -> Any:
        """The finalized ``CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR`` (built from the JSON on first use)."""
        with self._lock:
            desc = self._descriptor
            if desc is None or desc.closed:
                desc = self._descriptor = self._build_descriptor()
            return desc

    def _build_descriptor(self) -> Any:
        desc = BackendDescriptor("DEVICEPROP")
        try:
            desc.set("DEVICEPROP_JSON_REPRESENTATION", self._text, attr_type="CHAR")
            with log.capture(logging.ERROR) as records:
                try:
                    desc.finalize()
                except CudnnError as exc:
                    missing = self._missing_key() if exc.status // 1000 == 2 else None
                    if missing is not None:
                        raise ValueError(self._missing_key_message(missing)) from None
                    lines = _error_lines(records)
                    extra = ("; cuDNN log: " + " | ".join(lines)) if lines else ""
                    raise type(exc)(
                        exc.status,
                        exc.function,
                        f"device properties for {self.device_name!r} were refused: {exc.message}{extra}",
                    ) from None
        except BaseException:
            desc.close()
            raise
        return desc

    def _missing_key(self) -> str | None:
        """The key the loaded cuDNN needs that these properties lack, found by asking cuDNN.

        cuDNN's refusal of a missing key names no key (``!json_object.HasMember(key)``), and the
        keys it requires differ by version. So each known key the JSON lacks is added with a
        placeholder value to a throw-away copy: the one whose addition cuDNN accepts is the one
        it needs. The placeholder never reaches a descriptor that is kept.
        """

        absent = [k for k in KNOWN_KEYS if k not in self._data]
        base = {k: v for k, v in self._data.items() if k != VERSION_KEY}
        for key in absent:
            probe = BackendDescriptor("DEVICEPROP")
            try:
                probe.set(
                    "DEVICEPROP_JSON_REPRESENTATION", json.dumps({**base, key: 1}), attr_type="CHAR"
                )
                probe.finalize()
                return key
            except CudnnError:
                continue
            finally:
                probe.close()
        return None

    def _missing_key_message(self, key: str) -> str:
        loaded = _version_text(_loaded_version())
        written = self.cudnn_version
        writer = (
            f"cuDNN {_version_text(written)}"
            if written is not None
            else "a cuDNN version it does not record"
        )
        return (
            f"device properties for {self.device_name!r} lack the key {key!r}, which the loaded "
            f"cuDNN {loaded} requires; the file was written by {writer}. Capture it again on the "
            f"target GPU under cuDNN {loaded} (`python -m pycudnn deviceprops --save FILE`), or add "
            f"{key!r} with the value cudaGetDeviceProperties reports for that GPU"
        )

    def close(self) -> None:
        """Release the DEVICEPROP descriptor (plans that use it keep their own reference)."""
        desc, self._descriptor = self._descriptor, None
        if desc is not None:
            desc.close()

    # -- properties --------------------------------------------------------------------------
    @property
    def device_name(self) -> str:
        """The GPU's name (``deviceName``), e.g. "NVIDIA H100 80GB HBM3"."""
        return str(self._data["deviceName"])

    @property
    def compute_capability(self) -> tuple[int, int]:
        """``(major, minor)`` from ``deviceVer`` (major*100 + minor*10)."""
        v = int(self._data["deviceVer"])
        return v // 100, v % 100 // 10

    @property
    def sm_version(self) -> int:
        """E.g. 90 for compute capability 9.0."""
        major, minor = self.compute_capability
        return major * 10 + minor

    multiprocessor_count = _IntProperty("multiProcessorCount", "Number of SMs")
    total_memory = _IntProperty("totalGlobalMem", "Bytes of device memory")
    driver_version = _IntProperty("driverVer", "The driver's CUDA version, e.g. 12090 for 12.9")
    l2_cache_size = _IntProperty("l2CacheSize", "L2 cache size in bytes")
    max_shared_memory_per_block_optin = _IntProperty(
        "maxSharedMemoryPerBlockOptin", "Shared memory a block can opt in to, in bytes"
    )

    @cached_attribute  # the data never change: made once (30 us)
    def fingerprint(self) -> str:
        """A short hash of everything that can change a plan (not the device ordinal)."""
        data = {k: v for k, v in self._data.items() if k not in _NOT_IN_FINGERPRINT}
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def __getitem__(self, key: str) -> Any:
        return _fresh(self._data[key])  # a list (maxGridSize) is a copy: the data are read-only

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeviceProperties):
            return NotImplemented
        return self._data == other._data

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __copy__(self) -> Any:
        # A copy would share the DEVICEPROP descriptor (closing either would close it under the
        # other) while locking it with a lock of its own. deepcopy and pickle fail on the lock.
        raise TypeError(
            "DeviceProperties own a cuDNN descriptor and cannot be copied; use "
            "DeviceProperties.from_json(props.to_json()) for a second one"
        )

    def __repr__(self) -> str:
        major, minor = self.compute_capability
        return (
            f"<pycudnn.DeviceProperties {self.device_name!r} sm_{major}{minor} "
            f"{self.multiprocessor_count} SMs>"
        )


def _fresh(value: Any) -> Any:
    """A deep copy of a JSON value (through JSON: it nests as deeply as the parser allows, where
    ``copy.deepcopy`` recurses twice as deep)."""
    return json.loads(json.dumps(value)) if isinstance(value, (list, dict)) else value


def _others(path: str | os.PathLike[str], exc: OSError) -> str:
    """For a file that does not exist: the JSON files its folder does hold (a misspelt name is
    the usual cause), so the error shows what to load instead."""
    if not isinstance(exc, FileNotFoundError):
        return ""
    folder = Path(path).parent
    try:
        names = sorted(p.name for p in folder.glob("*.json") if p.is_file())
    except OSError:
        return ""
    if not folder.is_dir():
        return f"; the folder {os.fspath(folder)!r} does not exist either"
    listed = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    return f"; the JSON files in {os.fspath(folder)!r} are: {listed or 'none'}"


def _why_no_plans_here() -> str | None:
    """The process-wide part of :meth:`DeviceProperties.why_no_plans` (loads cuDNN only)."""

    from ._lib import LIB

    st = driver_status()
    if not st.library_found:
        return f"cuDNN needs the NVIDIA driver library libcuda.so.1 (no GPU): {st.reason}"
    loaded = format_version(LIB.version)
    if LIB.version < DEVICEPROP_SINCE:
        return (
            f"device properties need cuDNN {format_version(DEVICEPROP_SINCE)} or later "
            f"(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR); the loaded cuDNN is {loaded}"
        )
    if not st.usable and LIB.version < DEVICELESS_PLANS_SINCE:
        return (
            f"plans for device properties without a GPU need cuDNN "
            f"{format_version(DEVICELESS_PLANS_SINCE)} or later (9.8 and 9.9 cannot load "
            f"runtime-compiled kernels or serialize plans without one); the loaded cuDNN is "
            f"{loaded}"
        )
    return None


def _loaded_version() -> int:

    return version()


def _version_text(v: int) -> str:
    return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"


@functools.cache
def _for_device(ordinal: int) -> DeviceProperties:
    return DeviceProperties.from_device(ordinal)


def _error_lines(records: Any, limit: int = 6) -> list[str]:
    """The explanatory lines (``Error:``, ``Warning:``, ``Reason:``) of captured cuDNN log records,
    de-duplicated, at most ``limit`` of them (the first ones: they name the failure)."""
    out: list[str] = []
    for rec in records:
        # A message repeats its lines (a layernorm build: 326 lines, 6 different), so they are
        # told apart first, in C; the first `limit` explanatory lines are all that is kept.
        for raw in dict.fromkeys(str(rec.message).splitlines()):
            line = raw.strip()
            explains = line.startswith(("Error:", "Warning:")) or "Reason:" in line
            if explains and line not in out:
                out.append(line)
                if len(out) >= limit > 0:
                    return out[:limit]
    return out[:limit]
