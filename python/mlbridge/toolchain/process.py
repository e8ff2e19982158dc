"""The one supervisor of the compiler processes mlbridge starts (the
toolchain's compiles and tools, the interactive-mode host of mlbridge.llvm,
the plugins' serving, the kit's environment).

Every compiler is started by :func:`start`:

* in a new session (its own process group), so :func:`kill` reaches
  everything it started (clang's cc1, a make's children);
* with a parent-death signal (Linux ``PR_SET_PDEATHSIG``): if the Python
  host itself dies, the compiler is killed instead of spinning forever on a
  FIFO nobody serves;
* with stdin from /dev/null unless the caller gives one;
* reaped with ``wait4``, so ``proc.rusage`` holds the resources of exactly
  this child (and its reaped descendants) once it has exited, whichever
  thread waited (``RUSAGE_CHILDREN`` would mix in every other child).

Callers bound every wait (a deadline or ``timeout``) and call :func:`kill`
on any error, so no compiler outlives its host or its request.
"""

import os
import signal
import subprocess
import sys

__all__ = ["start", "kill", "die_with_parent", "cpu_seconds"]


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


class _Child(subprocess.Popen):
    """A Popen that reaps with ``os.wait4`` and keeps the child's rusage.

    Popen's POSIX ``wait()`` goes through ``_try_wait`` and ``poll()``
    through ``_internal_poll(_waitpid=...)``; both are routed here."""

    rusage = None

    def _wait4(self, pid, flags):
        got, status, usage = os.wait4(pid, flags)
        if got:
            self.rusage = usage
        return got, status

    def _try_wait(self, wait_flags):
        try:
            return self._wait4(self.pid, wait_flags)
        except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): no status
            return self.pid, 0

    def _internal_poll(self, _deadstate=None, _waitpid=None, **kwargs):
        return super()._internal_poll(_deadstate=_deadstate, _waitpid=self._wait4, **kwargs)


def start(cmd, **popen_kwargs):
    """``subprocess.Popen(cmd, ...)`` with the supervisor's settings (its own
    session, the parent-death signal, stdin /dev/null by default)."""
    popen_kwargs.setdefault("stdin", subprocess.DEVNULL)
    return _Child([os.fspath(c) for c in cmd], start_new_session=True,
                  preexec_fn=die_with_parent(), **popen_kwargs)


def cpu_seconds(proc):
    """User + system CPU seconds of an exited child started by :func:`start`
    (None while it runs)."""
    usage = getattr(proc, "rusage", None)
    return None if usage is None else usage.ru_utime + usage.ru_stime


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
