"""Planning targets: a GPU (with the calling thread's handle), or device properties (deviceless)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from _nvbind.cuda import device_id_of, driver_library_found, driver_status, get_device

from .._versions import DEVICELESS_PLANS_SINCE, DEVICEPROP_SINCE
from ..deviceprops import DeviceProperties
from ..handle import get_handle

__all__ = []

_log = logging.getLogger("pycudnn")


# --------------------------------------------------------------------------------------------------
# Targets: a GPU, or device properties
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Target:
    props: DeviceProperties | None  # set on the descriptors (deviceless, or explicitly given)
    device_id: int | None  # the GPU plans are built on, when there is one
    fingerprint: str  # what identifies the target in cache keys
    note: str  # for error messages
    # The calling thread's handle for device_id: bound to the operation graph (cuDNN plans an
    # unbound graph without DEVICEPROP for an all-zero device: smVersion 0, ARCH_MISMATCH).
    handle: Any = None


def _target(device_properties: Any, device: Any, *, plans: bool = True) -> _Target:
    """The target of a planning call. ``plans=False`` for heuristics only (no execution plan is
    finalized), which device properties allow on older cuDNN than plans without a GPU do."""

    if device_properties is not None:
        if not isinstance(device_properties, DeviceProperties):
            raise TypeError(
                "device_properties must be a pycudnn.DeviceProperties (DeviceProperties.load(path)), "
                f"not {type(device_properties).__name__}"
            )
        # The driver library, not a GPU: no cuInit unless the answer below needs it.
        if not driver_library_found():
            st = driver_status()
            # cuDNN needs the driver library even without a GPU; without it, some versions say
            # SUBLIBRARY_LOADING_FAILED and others only "no engine" (9.10): say why here.
            raise RuntimeError(
                "deviceless planning needs the NVIDIA driver library libcuda.so.1 (no GPU is "
                f"needed), which could not be loaded: {st.reason}. On Debian install libcuda1 "
                "(scripts/install_libcuda.sh)"
            )
        _require_planning_for_props(plans=plans, gpu_usable=lambda: driver_status().usable)
        # The same fingerprint as the GPU itself gives (below): a plan cache directory filled
        # ahead of time from captured properties serves the real device.
        return _Target(device_properties, None, "device:" + device_properties.fingerprint, "")
    st = driver_status()
    if not st.usable:
        if device is not None:
            raise RuntimeError(f"device={device!r} was given but no GPU is usable: {st.reason}")
        return _Target(
            None,
            None,
            "no-device",
            f"no GPU is usable here ({st.reason}) and no device_properties were given: without "
            "either, cuDNN cannot materialize engine configs; pass device_properties= "
            "(DeviceProperties.load(FILE), captured on the target GPU) to plan devicelessly",
        )

    ordinal = device_id_of(device)
    get_device(ordinal).set_current()
    handle = get_handle(ordinal)
    try:
        fp = "device:" + DeviceProperties.for_device(ordinal).fingerprint
    except Exception as exc:  # fall back to what the driver says
        _log.debug("device properties of GPU %d unavailable (%s); keying by name", ordinal, exc)
        d = st.devices[ordinal] if ordinal < len(st.devices) else {}
        fp = f"gpu:{d.get('name')}:{d.get('compute_capability')}:{st.driver_version}"
    return _Target(None, ordinal, fp, "", handle)


def _require_planning_for_props(*, plans: bool, gpu_usable: Callable[[], bool]) -> None:
    """Refuse planning for device properties where the loaded cuDNN cannot: DEVICEPROP needs 9.8,
    execution plans for it without a GPU 9.10 (9.8 and 9.9 cannot load runtime-compiled kernels or
    serialize plans without one). ``gpu_usable`` is asked only where the answer matters: probing
    the driver calls cuInit, which leaks in libcuda each time it fails."""
    from .._lib import LIB

    LIB.require(DEVICEPROP_SINCE, "device properties (CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR)")
    if plans and LIB.version < DEVICELESS_PLANS_SINCE and not gpu_usable():
        LIB.require(
            DEVICELESS_PLANS_SINCE,
            "execution plans for device properties without a GPU (cuDNN 9.8 and 9.9 cannot load "
            "runtime-compiled kernels or serialize plans without one; on a GPU plan for the GPU)",
        )


def _deserialize_props(
    device_properties: Any, device: Any
) -> tuple[DeviceProperties | None, int | None]:
    """Device properties to deserialize with: given, or queried from the GPU; None (with the
    GPU's ordinal, whose handle is used instead) on a cuDNN older than DEVICEPROP. Never neither
    (finalizing a deserialized plan with neither DEVICEPROP nor a handle crashes cuDNN)."""
    from .._lib import LIB

    if device_properties is not None:
        if not isinstance(device_properties, DeviceProperties):
            raise TypeError(
                f"device_properties must be a pycudnn.DeviceProperties, not {type(device_properties).__name__}"
            )
        _require_planning_for_props(plans=True, gpu_usable=lambda: driver_status().usable)
        return device_properties, None
    st = driver_status()
    if not st.usable:
        if LIB.version < DEVICEPROP_SINCE:
            raise ValueError(
                f"loading a serialized plan needs a GPU with this cuDNN: no GPU is usable here "
                f"({st.reason}), and device properties need cuDNN >= 9.8 "
                f"(the loaded one is {'.'.join(map(str, LIB.version))})"
            )
        raise ValueError(
            f"loading a serialized plan needs the target's device properties: no GPU is usable "
            f"here ({st.reason}); pass device_properties=DeviceProperties.load(FILE)"
        )
    ordinal = device_id_of(device)
    get_device(ordinal).set_current()
    if LIB.version < DEVICEPROP_SINCE:
        return None, ordinal  # the plan is finalized with the GPU's handle instead
    return DeviceProperties.for_device(ordinal), ordinal


def check_runs_on(props: DeviceProperties | None, device_id: int) -> None:
    """Refuse to run a plan made for the device properties ``props`` on the GPU ``device_id``
    when the two differ in architecture or SM count (``ValueError``). cuDNN refuses such a
    plan deserialized for the device (``ARCH_MISMATCH``) but not one built for the properties and
    then executed there: its kernels and launch shapes are the properties' GPU's. A device the
    driver does not list (no GPU: stand-in handles) is not checked."""
    if props is None:
        return
    dev = next((d for d in driver_status().devices if d["ordinal"] == device_id), None)
    if dev is None:
        return
    cc, sms = tuple(dev["compute_capability"]), dev.get("multiprocessor_count")
    if cc != props.compute_capability or (sms and sms != props.multiprocessor_count):
        want = props.compute_capability
        raise ValueError(
            f"this plan was made for {props.device_name} (sm_{want[0]}{want[1]}, "
            f"{props.multiprocessor_count} SMs), but its arrays are on device {device_id}, "
            f"{dev['name']} (sm_{cc[0]}{cc[1]}, {sms} SMs): plan for this GPU (build without "
            "device_properties, or with this GPU's) or run it on a GPU the properties describe"
        )
