"""The one supervisor of the compiler processes mlbridge.llvm starts (the
interactive-mode host, the plugins' inliner serving and PhaseOrderEnv).

Every compiler is started by :func:`start`:

* in a new session (its own process group), so :func:`kill` reaches
  everything it started (clang's cc1, a make's children);
* with a parent-death signal (Linux ``PR_SET_PDEATHSIG``): if the Python
  host itself dies, the compiler is killed instead of spinning forever on a
  FIFO nobody serves;
* with stdin from /dev/null unless the caller gives one.

Callers bound every wait (a deadline or ``timeout``) and call :func:`kill`
on any error, so no compiler outlives its host or its request.
"""

import os
import signal
import subprocess
import sys

__all__ = ["start", "kill", "die_with_parent"]


def die_with_parent():
    """A ``preexec_fn`` making the child die (SIGKILL) with the thread that
    started it (Linux only; None elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    sigkill = int(signal.SIGKILL)

    def child():  # runs between fork and exec: no locks, no allocation-heavy work
        prctl(1, sigkill, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the host died before prctl took effect
            os._exit(1)
    return child


def start(cmd, **popen_kwargs):
    """``subprocess.Popen(cmd, ...)`` with the supervisor's settings (its own
    session, the parent-death signal, stdin /dev/null by default)."""
    popen_kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.Popen([os.fspath(c) for c in cmd], start_new_session=True,
                            preexec_fn=die_with_parent(), **popen_kwargs)


def kill(proc, wait=None):
    """SIGKILL the process group of ``proc`` (started by :func:`start`);
    with ``wait`` (seconds), also reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                proc.kill()
            except ProcessLookupError:
                pass
    if wait is not None:
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL was sent
            pass
