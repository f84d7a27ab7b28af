"""The runnable examples in ``examples/``, each in a child process.

CPU tier: every example runs up to the point that needs a GPU (parsing, validation, descriptors,
graphs and deviceless plans for the committed H100 properties when libcuda.so.1 is present),
prints one line saying what needs a GPU and exits with status 3 (:data:`NOT_CHECKED`: its check
against NumPy did not run, so not 0). GPU tier: every example runs to the end, its own check
against NumPy passes and it exits 0. The README's Python blocks are excerpts of the examples.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pycudnn
from _nvbind.cuda import driver_status

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.py"))
NAMES = [p.stem for p in EXAMPLES]
NOT_CHECKED = 3  # the README's exit code for "could not run here", the examples' when unchecked

# What each example prints before it needs a GPU (beyond the "needs a GPU" line), derived from
# the problem it states: shapes from the convolution formula, the H100 from the committed file.
CPU_OUTPUT = {
    "legacy_conv": ["x (2, 8, 12, 12) * w (16, 8, 3, 3) (pad 1) -> y (2, 16, 12, 12)"],
    "raw_c_api": ["NHWC: dims [2, 3, 8, 8], strides [192, 1, 24, 3]"],
    "einsum": ["bii->b", "-> (8,)", "ii->i", "-> (5,)", "-> (4, 7, 2, 5)"],
    "cutensor_contraction": [
        "contraction C[m,u,n,v] = A[m,h,k,n] B[u,k,v,h] of float32, compute type 3XTF32: allowed",
        "refused before cuTENSOR",
    ],
    "cuda_graph_capture": ["z[m,p] = y[m,n] v[n,p]: valid"],
    # 512 rows in blocks of 64 over 4 ranks: 2 blocks each; SUMMA on 2x2 receives
    # (256 * 256 / 2 + 256 * 192 / 2) * 4 bytes
    "distributed_contraction": [
        "rank 3: coordinate (3, 0), holds (128, 384)",
        "model on 4 GPUs (2x2 grid): 0.22 MiB received per GPU",
    ],
}
# Parts that need the NVIDIA driver library (deviceless planning), not a GPU.
LIBCUDA_OUTPUT = {
    "graph_conv_bias_relu": ["plan for NVIDIA H100 80GB HBM3 without a GPU: engine"],
    "deviceless_plan": ["target: NVIDIA H100 80GB HBM3", "reloaded: engine"],
    "training_step": ["fprop: engine", "dgrad: engine", "wgrad: engine"],
    # the second cache on the same directory finds the plan the first one stored
    "matmul_autotune": ["'misses': 1, 'stores': 1", "'disk_hits': 1, 'misses': 0"],
    "cuda_graph_capture": ["cuDNN plan for NVIDIA H100 80GB HBM3: engine"],
    "attention_normalization": [
        "attention: plan for NVIDIA H100 80GB HBM3 without a GPU",
        "attention_backward: plan for NVIDIA H100 80GB HBM3 without a GPU",
        "norm: plan for NVIDIA H100 80GB HBM3 without a GPU",
    ],
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def run(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=600, env=_env(),
        cwd=REPO,
    )  # fmt: skip


@pytest.fixture(scope="module")
def cpu_runs() -> dict[str, subprocess.CompletedProcess[str]]:
    """Every example at once, each in its own child process (they spend most time starting)."""
    if driver_status().usable:
        pytest.skip("a GPU is usable here: test_example_on_a_gpu runs each example to the end")
    procs = {}
    for p in EXAMPLES:
        procs[p.stem] = subprocess.Popen(
            [sys.executable, str(p)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
            cwd=REPO,
        )
    done = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        done[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    return done


def test_every_named_example_exists() -> None:
    for name in (*CPU_OUTPUT, *LIBCUDA_OUTPUT):
        assert name in NAMES, name


@pytest.mark.parametrize("path", EXAMPLES, ids=NAMES)
def test_example_runs_up_to_the_gpu(
    path: Path, cpu_runs: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    done = cpu_runs[path.stem]
    assert done.returncode == NOT_CHECKED, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines and lines[-1].startswith("needs a"), done.stdout
    assert "GPU" in lines[-1]
    for text in CPU_OUTPUT.get(path.stem, []):
        assert text in done.stdout, (text, done.stdout)
    expected = list(LIBCUDA_OUTPUT.get(path.stem, []))
    if path.stem == "attention_normalization":
        expected = _attention_example_output(expected, done.stdout)
    why_not = pycudnn.DeviceProperties.why_no_plans()
    if why_not is None:
        for text in expected:
            assert text in done.stdout, (text, done.stdout)
    elif expected:  # the example says why it planned nothing (no libcuda.so.1, too old a cuDNN)
        assert why_not in done.stdout, (why_not, done.stdout)


def _attention_example_output(expected: list[str], stdout: str) -> list[str]:
    """What the attention example plans with the loaded cuDNN: SDPA from 9.13.1 (before that it
    says so and stops), its backward too (before 9.28 through the composite graph, as
    cudnn-frontend lowers it: the unified operation plans from 9.28)."""
    loaded = pycudnn.version_tuple()
    if loaded < (9, 13, 1):
        assert stdout.splitlines() == [
            f"needs a cuDNN with SDPA (9.13.1 or later; loaded: {pycudnn.version()}) and a GPU"
        ]
        return []
    assert "attention_backward left out" not in stdout, stdout
    return expected


@pytest.mark.gpu
@pytest.mark.parametrize("path", EXAMPLES, ids=NAMES)
def test_example_on_a_gpu(path: Path) -> None:
    done = run(path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "matches NumPy", done.stdout
    assert "needs a" not in done.stdout


def test_every_exit_without_the_numpy_check_says_so_and_is_not_zero() -> None:
    # Statically: an example may stop early only with the "not checked" status; exit 0 is for
    # the end of the script, where the check against NumPy has passed.
    for path in EXAMPLES:
        source = path.read_text(encoding="utf-8")
        assert "sys.exit(0)" not in source, path.name
        assert f"NOT_CHECKED = {NOT_CHECKED}" in source, path.name
        assert source.count('print("matches NumPy")') == 1, path.name  # after the check only
