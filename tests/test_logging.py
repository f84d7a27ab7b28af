"""cuDNN and cuTENSOR log entries reach Python's logging (CPU tier)."""

from __future__ import annotations

import ctypes
import logging
import subprocess
from pathlib import Path

import pytest
from children import run_python

import pycudnn
import pycutensor
from pycudnn import raw


def _fail_a_descriptor() -> None:
    desc = ctypes.c_void_p()
    raw.cudnnCreateTensorDescriptor(ctypes.byref(desc))
    try:
        with pytest.raises(pycudnn.CudnnBadParamError):
            raw.cudnnSetTensorNdDescriptor(
                desc, raw.CUDNN_DATA_FLOAT, 1, (ctypes.c_int * 1)(4), (ctypes.c_int * 1)(1)
            )
    finally:
        raw.cudnnDestroyTensorDescriptor(desc)


def test_cudnn_error_reaches_python_logger_with_whole_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from pycudnn import log

    caplog.set_level(logging.DEBUG, logger="pycudnn")
    pycudnn.enable_logging(logging.WARNING)
    try:
        assert log.is_enabled()
        _fail_a_descriptor()
    finally:
        pycudnn.disable_logging()
    assert not log.is_enabled()
    errors = [r for r in caplog.records if r.name == "pycudnn.cudnn" and r.levelno == logging.ERROR]
    assert errors, "cuDNN's error entry did not reach logging"
    text = errors[-1].getMessage()
    # cuDNN's message is several NUL-separated lines: all of them must be kept.
    assert "cudnnSetTensorNdDescriptor" in text and "CUDNN_STATUS_BAD_PARAM" in text
    assert text.count("\n") >= 2


def _create_and_destroy_a_descriptor() -> None:
    desc = ctypes.c_void_p()
    raw.cudnnCreateTensorDescriptor(ctypes.byref(desc))
    raw.cudnnDestroyTensorDescriptor(desc)


def test_cudnn_info_entries_only_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="pycudnn")

    def infos() -> list[logging.LogRecord]:
        return [
            r
            for r in caplog.records
            if r.name == "pycudnn.cudnn"
            and r.levelno == logging.DEBUG
            and "cudnnCreateTensorDescriptor" in r.getMessage()
        ]

    # At WARNING cuDNN's per-call INFO entries must not be forwarded ...
    pycudnn.enable_logging(logging.WARNING)
    try:
        _create_and_destroy_a_descriptor()
    finally:
        pycudnn.disable_logging()
    assert infos() == []
    # ... at DEBUG they are.
    pycudnn.enable_logging(logging.DEBUG)
    try:
        pycudnn.raw.cudnnGetVersion()
        _create_and_destroy_a_descriptor()
    finally:
        pycudnn.disable_logging()
    assert infos()


def test_capture_collects_this_threads_entries_without_forwarding(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from pycudnn.log import capture

    caplog.set_level(logging.DEBUG, logger="pycudnn")
    with capture() as records:
        _fail_a_descriptor()
    assert any(r.status == 2000 and "nbDims" in r.message for r in records)
    assert not [r for r in caplog.records if r.name == "pycudnn.cudnn"]


def test_cutensor_error_reaches_python_logger(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="pycutensor")
    pycutensor.enable_logging(1)
    try:
        with pytest.raises(pycutensor.CutensorInvalidValueError):
            pycutensor.raw.cutensorCreatePlanPreference(
                None, ctypes.byref(ctypes.c_void_p()), -1, 0
            )
    finally:
        pycutensor.disable_logging()
    records = [r for r in caplog.records if r.name == "pycutensor.cutensor"]
    assert any("cutensorCreatePlanPreference" in r.getMessage() for r in records)
    with pytest.raises(ValueError, match="level"):
        pycutensor.enable_logging(9)


_PROBE = """
import ctypes, sys
from pycudnn import raw, log

def fail():
    d = ctypes.c_void_p()
    raw.cudnnCreateTensorDescriptor(ctypes.byref(d))
    try:
        raw.cudnnSetTensorNdDescriptor(d, 0, 1, (ctypes.c_int * 1)(4), (ctypes.c_int * 1)(1))
    except Exception:
        pass
    raw.cudnnDestroyTensorDescriptor(d)

with log.capture():
    fail()
print("AFTER", file=sys.stderr, flush=True)
fail()
"""


@pytest.mark.parametrize(
    ("env", "prints_after"), [({}, False), ({"CUDNN_LOGLEVEL_DBG": "1"}, True)]
)
def test_releasing_the_callback_keeps_cudnn_quiet_unless_its_env_asks(
    env: dict[str, str], prints_after: bool
) -> None:
    # Unregistering (cudnnSetCallback(0, NULL, NULL)) makes cuDNN print every later error to
    # stderr; with none of cuDNN's logging variables set it must stay as quiet as it started, and
    # with them set their output must come back once the callback is released.
    import os
    import sys
    from pathlib import Path

    clean = {k: v for k, v in os.environ.items() if not k.startswith("CUDNN_LOG")}
    full_env = {**clean, "PYTHONPATH": str(Path(__file__).resolve().parent.parent), **env}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    after = proc.stderr.split("AFTER", 1)[1]
    assert ("CUDNN_STATUS_BAD_PARAM" in after) is prints_after, proc.stderr


_HANDLER_CALLS_CUDNN = """
import logging, sys
import pycudnn

class CallsCudnn(logging.Handler):
    def emit(self, record):
        pycudnn.TensorDescriptor([1, 2, 3, 4]).close()  # cuDNN calls from inside logging

logger = logging.getLogger("pycudnn")
logger.addHandler(CallsCudnn())
logger.setLevel(logging.DEBUG)
if sys.argv[1] == "forwarded":
    pycudnn.enable_logging(logging.DEBUG)  # every cuDNN call logs an entry
pycudnn.TensorDescriptor([1, 2, 3, 4])  # the first call also loads the library (logged)
print("returned")
"""


@pytest.mark.parametrize("when", ["first load", "forwarded"])
def test_a_logging_handler_may_call_cudnn(when: str) -> None:
    # Both hung: the load's debug line was logged under the load lock, and each forwarded entry
    # made the handler's own call log another entry.
    done = run_python(_HANDLER_CALLS_CUDNN, when, timeout=60)  # a hang fails with the stacks
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "returned"


_HANDLER_CONFIGURES_LOGGING = """
import logging, sys
import pycudnn
from pycudnn import log, raw

if sys.argv[2] == "loaded":
    raw.cudnnGetVersion()

class Configures(logging.Handler):
    def emit(self, record):
        if sys.argv[1] == "capture":  # what building a plan does
            with log.capture():
                pass
        elif sys.argv[1] == "enable":
            pycudnn.enable_logging(logging.DEBUG)
        else:
            pycudnn.disable_logging()

logger = logging.getLogger("pycudnn")
logger.addHandler(Configures())
logger.setLevel(logging.DEBUG)
pycudnn.enable_logging(logging.DEBUG)
pycudnn.enable_logging(logging.DEBUG)  # cudnnSetCallback's own entry, with forwarding on
with log.capture():
    pycudnn.TensorDescriptor([1, 2, 3, 4]).close()
print("returned")
"""


@pytest.mark.parametrize("loaded", ["loaded", "first load"])
@pytest.mark.parametrize("does", ["capture", "enable", "disable"])
def test_a_logging_handler_may_configure_cudnns_logging(does: str, loaded: str) -> None:
    # All hung: cudnnSetCallback logs an entry (and the library's load a line) while the lock
    # that guards the registration is held, and the handler's own call waited for that lock.
    done = run_python(_HANDLER_CONFIGURES_LOGGING, does, loaded, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "returned"


_HANDLER_CALLS_CUTENSOR = """
import ctypes, logging, sys
import pycutensor
from pycutensor import raw

def fail():
    try:
        raw.cutensorCreatePlanPreference(None, ctypes.byref(ctypes.c_void_p()), -1, 0)
    except pycutensor.CutensorInvalidValueError:
        pass

emitted = []

class CallsCutensor(logging.Handler):
    def emit(self, record):
        emitted.append(record.getMessage())
        fail()  # cuTENSOR calls from inside logging: each logs entries of its own

logger = logging.getLogger("pycutensor")
logger.addHandler(CallsCutensor())
logger.setLevel(logging.DEBUG)
pycutensor.enable_logging(int(sys.argv[1]))
fail()
print(len(emitted))
"""


@pytest.mark.parametrize("level", [1, 5])
def test_a_logging_handler_may_call_cutensor(level: int) -> None:
    # Each forwarded entry made the handler's own call log another: at level 1 the handler ran
    # nested about a hundred times, until Python's recursion limit; at level 5 it never returned.
    done = run_python(_HANDLER_CALLS_CUTENSOR, str(level), timeout=30)
    assert done.returncode == 0, done.stderr
    assert 1 <= int(done.stdout) <= 3, done.stdout


_CUTENSOR_TRACE_AROUND_FORWARDING = """
import ctypes, os
import pycutensor
from pycutensor import raw

def traced():
    try:
        raw.cutensorCreatePlanPreference(None, ctypes.byref(ctypes.c_void_p()), -1, 0)
    except pycutensor.CutensorInvalidValueError:
        pass
    with open(os.environ["CUTENSOR_LOG_FILE"]) as f:
        return f.read().count("[Api][cutensorCreatePlanPreference]")

before = traced()
pycutensor.enable_logging(1)
pycutensor.disable_logging()
print(before, traced() - before)
"""


@pytest.mark.parametrize("variable", ["CUTENSOR_LOG_LEVEL", "CUTENSOR_LOG_MASK"])
def test_disabling_cutensor_forwarding_gives_back_the_level_its_variables_ask_for(
    variable: str, tmp_path: Path
) -> None:
    # enable_logging sets cuTENSOR's level; disable_logging left it there, so the API trace that
    # CUTENSOR_LOG_LEVEL=5 (or CUTENSOR_LOG_MASK=16) asked for stopped reaching the user's file.
    log = tmp_path / "cutensor.log"
    env = {"CUTENSOR_LOG_LEVEL": "", "CUTENSOR_LOG_MASK": "", "CUTENSOR_LOG_FILE": str(log)}
    env[variable] = "5" if variable == "CUTENSOR_LOG_LEVEL" else "16"
    done = run_python(_CUTENSOR_TRACE_AROUND_FORWARDING, timeout=60, **env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1"], done.stdout
