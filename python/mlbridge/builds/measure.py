"""What one build is measured by: the CPU and peak RSS of a command and all
its children, the ``.text`` of the linked outputs, the generated config
headers, and the project's own test results ("passed / total").
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Mapping, Optional, Sequence, Tuple

from ..toolchain.measure import elf_text_size

__all__ = ["Run", "run", "output_texts", "header_digests", "count_tests"]

#: Output kept of a failed command (its last bytes).
LOG_TAIL = 16 * 1024


@dataclass
class Run:
    """One command: exit status, CPU seconds (user + sys of it and every
    child it waited for), the largest resident set of any of them (KiB),
    wall seconds and its output (stdout and stderr, interleaved)."""

    returncode: int
    cpu: float
    max_rss_kib: int
    wall: float
    output: str
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


#: GNU time (Debian ``time``): it forks the command from a process of a
#: few hundred KiB. Each forked process starts with its parent's resident
#: set, so a command forked straight from this Python process (over 100 MiB
#: with numpy) would report at least that as its peak.
GNU_TIME = "/usr/bin/time"


def run(cmd: Sequence[str], *, cwd, env: Mapping[str, str], timeout: float,
        log: Optional[Path] = None) -> Run:
    """Runs ``cmd`` in its own process group under GNU time, which reports
    the user + sys time and the peak resident set of the whole tree (each
    make and compiler waits for its own children). A command that outlives
    ``timeout`` is killed with its group."""
    if not os.access(GNU_TIME, os.X_OK):
        raise FileNotFoundError(f"{GNU_TIME} (GNU time, Debian package time; "
                                f"scripts/deps/real-builds.apt) measures the builds")
    t0 = time.monotonic()
    out = open(log, "ab") if log else subprocess.DEVNULL
    with tempfile.NamedTemporaryFile("r", prefix="mlb-rusage-", suffix=".txt") as usage:
        proc = subprocess.Popen([GNU_TIME, "-f", "%U %S %M", "-o", usage.name, *cmd], cwd=cwd,
                                env=dict(env), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        chunks = []
        timed_out = threading.Event()

        def kill():
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            for line in proc.stdout:
                chunks.append(line)
                if log:
                    out.write(line)
            proc.wait()
        finally:
            timer.cancel()
            proc.stdout.close()
            if log:
                out.close()
        # the last line; "Command exited with non-zero status N" may come first
        fields = (usage.read().strip().splitlines() or ["0 0 0"])[-1].split()
    try:
        user, sys_, rss = float(fields[0]), float(fields[1]), int(fields[2])
    except (IndexError, ValueError):  # killed: time wrote nothing
        user = sys_ = 0.0
        rss = 0
    text = b"".join(chunks).decode(errors="replace")
    return Run(proc.returncode, user + sys_, rss, time.monotonic() - t0, text,
               timed_out.is_set())


def output_texts(build_dir, patterns: Sequence[str]) -> Dict[str, int]:
    """``.text`` (every executable section) of each ELF file matching
    ``patterns`` under ``build_dir``, by relative path; symbolic links and
    files that are not ELF (libtool's wrapper scripts) are left out."""
    build_dir = Path(build_dir)
    sizes = {}
    for pattern in patterns:
        for path in sorted(glob.glob(str(build_dir / pattern))):
            p = Path(path)
            if p.is_symlink() or not p.is_file():
                continue
            size = elf_text_size(p)
            if size is not None:
                sizes[str(p.relative_to(build_dir))] = size
    return sizes


def header_digests(build_dir, headers: Sequence[str]) -> Dict[str, Optional[str]]:
    """sha256 of each generated config header (None when it is missing)."""
    digests = {}
    for rel in headers:
        path = Path(build_dir) / rel
        digests[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    return digests


_AUTOMAKE = re.compile(r"^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR):\s+(\d+)", re.M)
_CTEST = re.compile(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)")


def count_tests(fmt: str, output: str, results: Sequence[bool] = ()) -> Tuple[int, int]:
    """(passed, total) of a test run. ``automake``: every harness summary
    in ``output`` summed (skipped tests are not in the total; XFAIL is a
    pass); ``ctest``: its summary line; ``commands``: ``results``, one per
    command."""
    if fmt == "automake":
        sums: Dict[str, int] = {}
        for key, n in _AUTOMAKE.findall(output):
            sums[key] = sums.get(key, 0) + int(n)
        total = sums.get("TOTAL", 0) - sums.get("SKIP", 0)
        return sums.get("PASS", 0) + sums.get("XFAIL", 0), total
    if fmt == "ctest":
        m = _CTEST.findall(output)
        if not m:
            return 0, 0
        _, failed, total = map(int, m[-1])
        return total - failed, total
    if fmt == "commands":
        return sum(1 for r in results if r), len(results)
    raise ValueError(f"unknown test format {fmt!r}")
