"""Every ```python block in README.md and docs/*.md (and the device-properties README) runs as
written, alone.

Each block is run by itself in a fresh interpreter, in a temporary folder that stands for the
root of a checkout (only ``tests/data``, linked, is there: the blocks plan for the committed H100
properties), with this checkout on ``PYTHONPATH``: a block that uses a name it does not define, or
a file it does not make, fails here, and what a block writes goes nowhere. Without a GPU a block
may stop only with the library's own "needs a GPU" error (:data:`NO_GPU`); with one, it must run to the end (a block that needs the optional
``distributed`` extra, where it is not installed, is skipped: :data:`NO_EXTRA`).

A block that cannot run by itself (a fragment of a larger listing) is opted out by the comment
``<!-- no-run: REASON -->`` on the line before its fence; the reason is required.

The shell blocks' command lines (``python -m pycudnn ...``, ``scripts/demo.sh ...``) are not run
(they install, or need a GPU for minutes); each is parsed by the command's own parser instead, so
a documented option the command does not have fails here.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("**/*.md")),
    REPO / "tests/data/deviceprops/README.md",
]
TIMEOUT_S = 180
WORKERS = min(8, os.cpu_count() or 1)

#: The last line of a block's traceback when it stopped for want of a GPU: the library's errors
#: that say so (``RuntimeError: ... needs a CUDA GPU, but none is usable: ...`` from the array
#: constructors and ``pycutensor.distributed``'s ``DeviceRequiredError``, ``NoTargetError`` from
#: planning with no target, the refusals of autotuning, ``verify=True`` and plan loading, and
#: cuDNN's and cuTENSOR's own refusals to create a handle, to which the library adds "(no usable
#: CUDA device: REASON)").
NO_GPU = re.compile(
    r"^[\w.]*(?:Error|Exception): .*("
    r"needs a CUDA GPU, but none is usable: "
    r"|, and none is usable here: "
    r"|: no GPU is usable here \("
    r"|\(no usable CUDA device: "
    r")"
)
#: With a GPU but without the optional ``distributed`` extra (nccl4py, NCCL, the CUDA runtime
#: cuTENSORMp links): the library's refusal, which names the extra to install. The block is
#: skipped, never passed: nothing it shows was run.
NO_EXTRA = re.compile(
    r"^[\w.]*(?:ImportError|LibraryNotFoundError): .*cudnn-cutensor-ctypes\[distributed\]"
)
#: In the version matrix's older entries: a feature newer than the loaded library, refused by name.
UNSUPPORTED = re.compile(r"^[\w.]*UnsupportedByLibraryError: ")
NO_RUN = re.compile(r"<!--\s*no-run:\s*(\S.*?)\s*-->")
FENCE = re.compile(r"^\s*```(\w*)\s*$")  # indented too: a block inside a list item


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    code: str
    no_run: str  # the reason given in <!-- no-run: ... -->, or ""

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def python_blocks(path: Path) -> list[Block]:
    """The ```python blocks of a Markdown file, with any no-run reason just above each."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = next(
            (j for j in range(i + 1, len(lines)) if lines[j].lstrip().startswith("```")), None
        )
        assert end is not None, f"{path.relative_to(REPO)}:{i + 1}: a fence that is never closed"
        if m.group(1) in ("python", "py"):
            above = next((s for s in reversed(lines[:i]) if s.strip()), "")
            reason = NO_RUN.search(above)
            code = textwrap.dedent("\n".join(lines[i + 1 : end]) + "\n")
            blocks.append(Block(path, i + 1, code, reason.group(1) if reason else ""))
        i = end + 1
    return blocks


BLOCKS = [b for p in DOCS for b in python_blocks(p)]


def _run(block: Block, folder: Path) -> subprocess.CompletedProcess[str]:
    (folder / "tests").mkdir(parents=True)
    (folder / "tests" / "data").symlink_to(REPO / "tests" / "data", target_is_directory=True)
    script = folder / "block.py"
    script.write_text(block.code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    for name in ("PYCUDNN_DEVICEPROPS", "PYCUDNN_KNOWN_BAD_ENGINES"):  # the defaults, as documented
        env.pop(name, None)
    try:
        return subprocess.run(
            [sys.executable, str(script)], cwd=folder, env=env, capture_output=True,
            text=True, timeout=TIMEOUT_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(exc.cmd, -9, "", f"timed out after {TIMEOUT_S} s")


@pytest.fixture(scope="module")
def results(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Run, in parallel, the blocks this session selected (each alone, in its own folder)."""
    wanted = {
        item.callspec.params["block"].id
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec")
        and "block" in item.callspec.params
    }  # fmt: skip
    todo = [b for b in BLOCKS if b.id in wanted and not b.no_run]
    base = tmp_path_factory.mktemp("docs-blocks")
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        futures = {b.id: pool.submit(_run, b, base / f"block{n}") for n, b in enumerate(todo)}
        return {k: f.result() for k, f in futures.items()}


def _gpu_usable() -> bool:
    from _nvbind.cuda import driver_status

    return driver_status().usable


@pytest.mark.usefixtures("libcuda")  # the blocks plan for device properties: libcuda.so.1
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_the_block_runs_as_written(
    block: Block, results: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    if block.no_run:
        pytest.skip(f"{block.id} opts out: {block.no_run}")
    proc = results[block.id]
    if "DeviceProperties" in block.code and proc.returncode != 0:
        from pycudnn import DeviceProperties

        why_not = DeviceProperties.why_no_plans()  # an older cuDNN of the version matrix
        if why_not:
            pytest.skip(
                f"{block.id} plans for device properties, which cannot be done here: {why_not}"
            )
    if proc.returncode == 0:
        return
    last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
    if not _gpu_usable() and proc.returncode == 1 and NO_GPU.match(last):
        return  # stopped where a GPU is needed, with the library's own words
    if proc.returncode == 1 and NO_EXTRA.match(last):
        pytest.skip(f"{block.id} needs the distributed extra, not installed here: {last}")
    if os.environ.get("PYCUDNN_MATRIX") and UNSUPPORTED.match(last):
        return  # an older entry of the version matrix (scripts/test.sh --matrix): refused by name
    pytest.fail(
        f"{block.id} failed (exit {proc.returncode}):\n{block.code}\n--- stderr:\n"
        f"{proc.stderr[-4000:]}\n--- stdout:\n{proc.stdout[-1000:]}",
        pytrace=False,
    )


def test_the_collector_finds_blocks_and_reads_the_opt_out(tmp_path: Path) -> None:
    found = {str(b.path.relative_to(REPO)) for b in BLOCKS}
    for name in ("README.md", "docs/cutensor.md", "docs/legacy-ops.md", "docs/verification.md"):
        assert name in found, (name, sorted(found))
    md = tmp_path / "x.md"
    md.write_text(
        "text\n```python\nprint(1)\n```\n\n<!-- no-run: a fragment -->\n\n```python\nx\n```\n"
        "```bash\nls\n```\n- item:\n\n  ```python\n  if 1:\n      y = 2\n  ```\n",
        encoding="utf-8",
    )
    got = [(b.line, b.code, b.no_run) for b in python_blocks(md)]
    assert got == [
        (2, "print(1)\n", ""),
        (8, "x\n", "a fragment"),
        (16, "if 1:\n    y = 2\n", ""),  # indented in a list item: dedented
    ]


def test_a_failing_block_is_told_from_a_missing_gpu() -> None:
    assert NO_GPU.match(
        "RuntimeError: DeviceArray.zeros needs a CUDA GPU, but none is usable: no CUDA device"
    )
    assert not NO_GPU.match("NameError: name 'x_gpu' is not defined")
    assert not NO_GPU.match("FileNotFoundError: [Errno 2] No such file or directory: 'h100.json'")


def test_a_missing_distributed_extra_is_told_by_the_library_s_words() -> None:
    from pycutensor._lib_ext import DISTRIBUTED_HINT
    from pycutensor.distributed.comm import _import

    with pytest.raises(ImportError) as info:
        _import("no_such_module.core", "creating an NCCL communicator")
    assert NO_EXTRA.match(f"ImportError: {info.value}")
    assert NO_EXTRA.match(
        f"_nvbind.ffi.LibraryNotFoundError: cuTENSORMp needs NCCL. {DISTRIBUTED_HINT}"
    )
    assert not NO_EXTRA.match("ImportError: cannot import name 'MpHandle' from 'pycutensor'")
    assert not NO_GPU.match(f"ImportError: {info.value}")


SHELL_FENCES = ("bash", "sh", "shell", "console")
COMMAND = re.compile(r"^(?:\$ )?(?:\w+=\S+\s+)*python3? -m (pycudnn|pycutensor)\b(.*)$")
DEMO = re.compile(r"^(?:\$ )?scripts/demo\.sh\b(.*)$")
DEMO_OPTIONS = {"--json", "--require-gpu", "-h", "--help"}


def command_lines() -> list[tuple[str, str, str]]:
    """(where, package or "demo", arguments) of every command line in a shell block of the docs
    that runs ``python -m pycudnn|pycutensor`` or ``scripts/demo.sh``."""
    found = []
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        fence = None
        for n, line in enumerate(lines, 1):
            m = FENCE.match(line)
            if m or line.lstrip().startswith("```"):
                fence = (m.group(1) if m else "") if fence is None else None
                continue
            if fence not in SHELL_FENCES:
                continue
            text = re.split(r"\s+#|\s\||\s>|\s2>|\s&&|\s;", line.strip(), maxsplit=1)[0]
            where = f"{path.relative_to(REPO)}:{n}"
            if m := COMMAND.match(text):
                found.append((where, m.group(1), m.group(2)))
            elif m := DEMO.match(text):
                found.append((where, "demo", m.group(1)))
    return found


def test_every_documented_command_line_is_one_the_commands_accept() -> None:
    import shlex

    from _nvbind.report import _HelpRequested, _UsageError
    from pycudnn import cli as cudnn_cli
    from pycutensor import cli as cutensor_cli

    lines = command_lines()
    assert {p for _, p, _ in lines} >= {"pycudnn", "pycutensor", "demo"}, lines
    parsers = {"pycudnn": cudnn_cli.parser, "pycutensor": cutensor_cli.parser}
    checked = 0
    for where, package, rest in lines:
        # A synopsis (`[--quick] [--filter TEXT]`, `<gpu>.json`) is checked with every option
        # given and its placeholders filled in.
        rest = re.sub(r"<[^>]*>", "x", rest.replace("[", " ").replace("]", " "))
        rest = re.sub(r"\bTEXT\b|\bFILE\b", "x", rest)
        args = shlex.split(rest)
        if package == "demo":
            assert set(args) <= DEMO_OPTIONS, (where, args)
            continue
        try:
            parsers[package]().parse_args(args)
        except _HelpRequested:
            pass
        except _UsageError as exc:
            pytest.fail(f"{where}: python -m {package} {rest.strip()}: {exc.message}")
        checked += 1
    assert checked >= 10, lines
