"""The explanatory lines kept from cuDNN's log records (``Error:``, ``Warning:``, ``Reason:``):
first ones first, each once, at most ``limit``."""

from __future__ import annotations

from pycudnn.deviceprops import _error_lines
from pycudnn.log import LogRecord


def _rec(*lines: str) -> LogRecord:
    return LogRecord(2, 3000, "\n".join(lines))


HEAD = "CuDNN (v92800 42) function cudnnBackendFinalize() called:"
A = "Warning: CUDNN_STATUS_NOT_SUPPORTED; Reason: ptr->isSupported()"
B = "Warning: CUDNN_STATUS_NOT_SUPPORTED; Reason: finalize_internal()"
C = "Error: CUDNN_STATUS_BAD_PARAM"
D = "check failed; Reason: no engine"


def test_repeated_lines_kept_once_in_first_order() -> None:
    recs = [_rec(HEAD, *(["    " + A, "        " + B] * 150), "Time: 2026", "Process=1")]
    recs.append(_rec(HEAD, "  " + B, "  " + C, D, "  " + A))
    assert _error_lines(recs) == [A, B, C, D]


def test_limit_keeps_the_first_ones() -> None:
    recs = [_rec(*(f"Warning: number {i}" for i in range(20)))]
    assert _error_lines(recs, limit=3) == [
        "Warning: number 0",
        "Warning: number 1",
        "Warning: number 2",
    ]
    assert _error_lines(recs, limit=12) == [f"Warning: number {i}" for i in range(12)]
    assert _error_lines(recs, limit=0) == []
    assert _error_lines([_rec(A, A, B)], limit=6) == [A, B]


def test_nothing_explanatory() -> None:
    assert _error_lines([_rec(HEAD, "Time: 2026", "")]) == []
    assert _error_lines([]) == []
