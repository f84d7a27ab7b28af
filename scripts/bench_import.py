"""Measures ``import pycudnn, pycutensor`` in fresh interpreters (the target is under 150 ms).

Writes JSON with the machine and versions to ``--out`` (default: bench-results/import.json), and
whether the interpreters found pycudnn's compiled bytecode (``bytecode_cached``: with
``PYTHONDONTWRITEBYTECODE`` set in a checkout without ``__pycache__``, each one compiles the
sources it imports). Usage: ``python scripts/bench_import.py [--repeats 15] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from importlib.util import cache_from_source
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = (
    "import time; t = time.perf_counter(); import pycudnn, pycutensor; "
    "print(time.perf_counter() - t)"
)
BASELINE = "import time; t = time.perf_counter(); import numpy; print(time.perf_counter() - t)"


def measure(code: str, repeats: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = []
    for _ in range(repeats):
        res = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        out.append(float(res.stdout.strip()))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out", default=str(ROOT / "bench-results" / "import.json"))
    args = parser.parse_args()
    measure(CODE, 2)  # warm the file-system cache
    samples = measure(CODE, args.repeats)
    numpy_only = measure(BASELINE, args.repeats)
    result = {
        "benchmark": "import pycudnn, pycutensor",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor(),
            "cpu_count": os.cpu_count(),
            "python": sys.version.split()[0],
        },
        "bytecode_cached": Path(cache_from_source(str(ROOT / "pycudnn" / "__init__.py"))).is_file(),
        "repeats": args.repeats,
        "median_ms": statistics.median(samples) * 1e3,
        "max_ms": max(samples) * 1e3,
        "numpy_alone_median_ms": statistics.median(numpy_only) * 1e3,
        "target_ms": 150.0,
    }
    result["meets_target"] = result["median_ms"] < result["target_ms"]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
