"""Run an LLVM tool with its ML advisors in interactive mode and answer
every request from Python.

:func:`run` is the one-call API; :class:`Compilation` is the lower-level
object behind it (start, answer requests one by one, finish), which the
gymnasium environment uses.

Rules the host keeps:

* It adds the advisors' flags itself (``-mllvm`` for the clang driver) and
  makes one private FIFO pair per advisor.
* Feature specs always come from the header of each session; a new session
  (LLVM makes one per inliner pass run) is picked up as it arrives.
* Advice is validated before it is written; an invalid answer stops the
  compiler (or, with ``on_invalid="fallback"``, is replaced by a safe one).
* Several advisors in one process (clang: inliner + eviction + priority) are
  served concurrently by one event loop (:class:`mlbridge.EventLoop`).
* Everything is bounded by ``timeout``: a compiler that never opens the
  pipes, exits early, crashes or hangs never blocks the host. A policy
  error or a timeout kills the compiler's process group.
* The compiler's exit status, stdout and stderr are returned; of stderr the
  host keeps only the end in memory (:data:`STDERR_TAIL_BYTES`), the whole
  stream goes to a file when asked or once it outgrows that.
"""

import contextlib
import itertools
import logging
import os
import struct
import subprocess
import tempfile
import threading
import time

from ..errors import MLBridgeError, PeerClosed, TimeoutError
from ..event_loop import EventLoop
from ..pipe import PipeCompilerInterface
from . import policies as _policies
from ..toolchain import process
from .advisors import ADVISORS, INLINE, InvalidAdvice, Layout
from ..toolchain.measure import elf_text_size
from ..toolchain.tools import llvm_major_version, output_path, tool_kind
from .trace import Tracer

__all__ = ["run", "Compilation", "advisor_host", "RunResult", "PolicyError", "RunError",
           "STDERR_TAIL_BYTES"]

_log = logging.getLogger("mlbridge.llvm")

DEFAULT_TIMEOUT = 600.0

#: Bytes of a compiler's stderr a RunResult holds by default: the end of the
#: stream, which is where compilers put their errors.
STDERR_TAIL_BYTES = 1 << 20


class PolicyError(MLBridgeError):
    """A policy raised (the original exception is ``__cause__``)."""


class RunError(MLBridgeError):
    """``RunResult.check()`` on a failed run; ``.result`` is the RunResult."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


class RunResult:
    """What a served compilation produced.

    ``returncode`` (negative: killed by that signal), ``stdout`` (str, or
    bytes with ``text=False``; None when not captured), ``stderr`` (the same,
    but only the last ``stderr_tail`` bytes of the stream, 1 MiB by
    default), ``stderr_bytes`` (the length of the whole stream),
    ``stderr_path`` (the file holding the whole stream, or None: see
    :func:`run`),
    ``requests``/``sessions``/``fallbacks``: per advisor counts,
    ``error``: the host's error message or None, ``exception``: the
    exception behind it, ``timed_out``, ``killed`` (the host stopped the
    compiler), ``seconds`` (wall time), ``host_seconds`` (CPU time the
    host's serving threads used), ``output`` (the ``-o`` file or None),
    ``run_id`` (its number in the tracer, if traced).
    """

    def __init__(self, **kw):
        self.command = kw.pop("command")
        self.returncode = kw.pop("returncode", None)
        self.stdout = kw.pop("stdout", None)
        self.stderr = kw.pop("stderr", None)
        self.stderr_bytes = kw.pop("stderr_bytes", 0)
        self.stderr_path = kw.pop("stderr_path", None)
        self.requests = kw.pop("requests", {})
        self.sessions = kw.pop("sessions", {})
        self.fallbacks = kw.pop("fallbacks", {})
        self.exception = kw.pop("exception", None)
        self.error = kw.pop("error", None)
        self.timed_out = kw.pop("timed_out", False)
        self.killed = kw.pop("killed", False)
        self.seconds = kw.pop("seconds", 0.0)
        self.host_seconds = kw.pop("host_seconds", 0.0)
        self.output = kw.pop("output", None)
        self.run_id = kw.pop("run_id", None)
        self.outcome = kw.pop("outcome", {})
        if kw:
            raise TypeError(f"unexpected fields {sorted(kw)}")

    @property
    def ok(self):
        """The compiler exited 0 and the host reported no error."""
        return self.returncode == 0 and self.error is None

    @property
    def total_requests(self):
        return sum(self.requests.values())

    def check(self):
        """Return self if ``ok``, else raise :class:`RunError`."""
        if self.ok:
            return self
        why = self.error or f"{self.command[0]} exited with status {self.returncode}"
        err = self.stderr
        if isinstance(err, bytes):
            err = err.decode(errors="replace")
        tail = f"\n{err[-2000:]}" if err else ""
        if self.stderr_path is not None:
            tail += f"\n(the whole stderr is in {self.stderr_path})"
        raise RunError(why + tail, self)

    def __repr__(self):
        return (f"RunResult(returncode={self.returncode}, requests={self.requests}, "
                f"sessions={self.sessions}, error={self.error!r}, "
                f"seconds={self.seconds:.3f})")


class _Channel:
    """One advisor's FIFO pair and its bookkeeping."""

    def __init__(self, comp, advisor, policy):
        self.comp = comp
        self.advisor = advisor
        self.policy = policy
        self.iface = PipeCompilerInterface(timeout=comp.timeout)
        self.requests = 0
        self.sessions = 0
        self.fallbacks = 0
        self.error = None
        self.stats = None          # the event loop's counters, while serve() runs
        self._seen = None          # the spec tuple of the last header seen
        self._layout = None
        self._check = None
        self._fallback = None
        self._patch = None
        self._group = None

    @property
    def base(self):
        return self.iface.base

    # -- per header ------------------------------------------------------------------
    def _on_header(self, specs, advice_spec):
        self._seen = specs
        if specs is None:
            return
        self.sessions += 1
        layout = Layout(specs, advice_spec)
        self.advisor.check_header(layout)
        self._layout = layout
        self._check = self.advisor.make_checker(layout)
        self._fallback = self.advisor.make_fallback(layout)
        self._patch = None
        if self.advisor is INLINE and self.comp.patch_default:
            self._patch = _guarded_patch(INLINE.default_patcher(layout), layout, self)
        tracer = self.comp.tracer
        self._group = None if tracer is None else \
            tracer.group(self.advisor.name, specs, layout.advice_spec)

    # -- one request at a time (the environment's API) ----------------------------------
    def next(self, deadline=None):
        """The next request (an Observation), or None once the compiler
        process has exited. TimeoutError when ``deadline`` passes."""
        iface = self.iface
        deadline = self.comp.deadline if deadline is None else deadline
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {self.advisor.name} request within the time limit")
            obs = iface.evaluate(timeout=remaining)
            if iface.feature_specs is not self._seen:
                self._on_header(iface.feature_specs, iface.advice_spec)
            if obs is None:
                if self.comp.proc.poll() is not None:
                    return None
                continue
            if self._patch is not None:
                obs = self._patch(obs)
            return obs

    def answer(self, obs, advice):
        """Validate ``advice`` for ``obs`` and send it (InvalidAdvice first
        if it breaks the advisor's rules and on_invalid is "stop").
        Returns the value sent, or None if the compiler is gone."""
        value = self._checked(obs, advice)
        try:
            self.iface.populate_buffer(value)
        except PeerClosed:
            return None
        self.requests += 1
        return value

    # -- served by the event loop ----------------------------------------------------------
    def respond(self, obs):
        """The checked advice for ``obs`` (the event loop sends it); an
        error is kept in ``self.error`` and raised."""
        try:
            if self._patch is not None:
                obs = self._patch(obs)
            try:
                advice = self.policy(obs)
            except Exception as e:
                raise PolicyError(
                    f"{self.advisor.name} policy {_describe(self.policy)} raised "
                    f"{type(e).__name__}: {e} (context {obs.context!r}, observation "
                    f"{obs.index})") from e
            return self._checked(obs, advice)
        except BaseException as e:
            self.error = e
            raise

    def _checked(self, obs, advice):
        """``advice`` checked by the advisor's rules (or the fallback, with
        on_invalid="fallback"), recorded in the trace."""
        try:
            value = self._check(obs, advice)
        except InvalidAdvice:
            if self.comp.on_invalid != "fallback":
                raise
            value = self._fallback(obs)
            self.fallbacks += 1
        if self._group is not None:
            comp = self.comp
            comp.tracer.record(self._group, comp.run_id, self.sessions - 1, obs.context,
                               obs.index, next(comp.steps), obs.raw, value)
        return value

    def close(self):
        self.iface.close()


def _guarded_patch(patch, layout, channel):
    """The LLVM 17-20 include-default fix, switched off (with a warning) the
    first time the declared slot is seen non-zero: then LLVM is not buggy."""
    if patch is None:
        return None
    q = struct.Struct("<q")
    dst = layout.offsets[INLINE.DEFAULT_FEATURE]

    def guarded(obs):
        if q.unpack_from(obs.raw, dst)[0]:
            _log.warning("inlining_default is set by this LLVM: not applying the LLVM "
                         "17-20 include-default fix")
            channel._patch = None
            channel.comp.patch_default = False
            return obs
        return patch(obs)
    return guarded


def _describe(policy):
    name = getattr(policy, "name", None) or getattr(policy, "__name__", None)
    return repr(name) if name else repr(policy)


class Compilation(contextlib.AbstractContextManager):
    """A compiler process with interactive advisor channels.

    ``cmd``: the command (``cmd[0]`` is clang, opt or llc, or give
    ``tool``). ``advisors``: ``{"inline"|"evict"|"priority": policy}``;
    the policy may be None when requests are answered one by one through
    :meth:`channel` (``next``/``answer``). See :func:`run` for the other
    arguments. Use as a context manager or call :meth:`close`.
    """

    def __init__(self, cmd, advisors, *, tool=None, timeout=DEFAULT_TIMEOUT,
                 include_default=None, default_bug=None, on_invalid="stop", trace=None,
                 outcome=None, capture_output=True, text=True, stderr_tail=STDERR_TAIL_BYTES,
                 stderr_file=None, stdin=None, cwd=None, env=None):
        cmd = [os.fspath(c) for c in cmd]
        if not cmd:
            raise ValueError("empty command")
        if timeout is None or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if on_invalid not in ("stop", "fallback"):
            raise ValueError(f"on_invalid must be 'stop' or 'fallback', got {on_invalid!r}")
        if stderr_file is not None and not capture_output:
            raise ValueError("stderr_file needs capture_output=True")
        self.tool = tool or tool_kind(cmd[0])
        if self.tool not in ("clang", "opt", "llc"):
            raise ValueError(f"tool must be 'clang', 'opt' or 'llc', got {self.tool!r}")
        for a in cmd[1:]:
            if "interactive-channel-base" in a:
                raise ValueError(f"{a!r}: the host sets the channel flags itself")
        self.policies = {}
        for name, policy in advisors.items():
            if name not in ADVISORS:
                raise ValueError(f"unknown advisor {name!r}; expected one of "
                                 f"{', '.join(ADVISORS)}")
            if self.tool not in ADVISORS[name].tools:
                raise ValueError(f"{cmd[0]} ({self.tool}) does not run the {name} advisor; "
                                 f"use {' or '.join(ADVISORS[name].tools)}")
            self.policies[name] = None if policy is None else _policies.resolve(policy, name)
        inline_policy = self.policies.get("inline")
        if include_default is None:
            include_default = bool(getattr(inline_policy, "needs_default", False))
        elif not include_default and getattr(inline_policy, "needs_default", False):
            raise ValueError(f"inline policy {_describe(inline_policy)} needs LLVM's default "
                             f"decision: include_default cannot be False")
        self.include_default = bool(include_default) and "inline" in self.policies
        if self.include_default and default_bug is None:
            version = llvm_major_version(cmd[0])
            default_bug = version in INLINE.BUGGY_VERSIONS if version is not None else True
        self.patch_default = self.include_default and bool(default_bug)
        self.user_cmd = cmd
        self.timeout = float(timeout)
        self.on_invalid = on_invalid
        if isinstance(trace, (str, os.PathLike)):
            self.trace_path, self.tracer = os.fspath(trace), Tracer()
        else:
            self.trace_path, self.tracer = None, trace
        self.outcome_fn = outcome
        self.text = text
        self.cwd = cwd
        self._popen = dict(stdin=subprocess.DEVNULL if stdin is None else stdin, cwd=cwd,
                           env=env)
        # What the compiler writes, while it runs (None: not captured).
        self._out = [] if capture_output else None
        self._err = _StderrSink(stderr_tail, stderr_file) if capture_output else None
        self.steps = itertools.count()
        self.channels = {}
        self.proc = self.deadline = self.run_id = self.command = None
        self._stop_reason = self._t0 = self._result = None
        self._killed = self._timed_out = False
        self._lock = threading.Lock()
        self._readers = []
        self._serve_cpu = 0.0

    # -- lifecycle (``with`` gives the Compilation itself) ---------------------------------
    def __exit__(self, *exc):
        self.close()
        return False

    def prepare(self):
        """Create the channels (FIFOs) and the full command line
        (``self.command``); done by :meth:`start` if not yet done."""
        if self.command is not None:
            return self.command
        try:
            flags = []
            for name in self.policies:
                ch = _Channel(self, ADVISORS[name], self.policies[name])
                self.channels[name] = ch
                flags += ADVISORS[name].flags(ch.base, self.include_default and
                                              name == "inline")
        except BaseException:
            self.close()
            raise
        if self.tool == "clang":
            flags = [x for f in flags for x in ("-mllvm", f)]
        self.command = [self.user_cmd[0]] + flags + self.user_cmd[1:]
        return self.command

    def start(self):
        """Create the channels and start the compiler."""
        if self.proc is not None:
            raise MLBridgeError("already started")
        self.prepare()
        try:
            if self.tracer is not None:
                self.run_id = self.tracer.begin_run(self.user_cmd)
            self._t0 = time.monotonic()
            self.deadline = self._t0 + self.timeout
            pipe = None
            if self._err is not None:
                pipe = subprocess.PIPE
                self._err.open()
            self.proc = process.start(self.command, stdout=pipe, stderr=pipe, **self._popen)
        except BaseException:
            self.close()
            raise
        for ch in self.channels.values():
            ch.iface.process = self.proc
        if self._err is not None:
            for stream, write, end in ((self.proc.stdout, self._out.append, None),
                                       (self.proc.stderr, self._err.write, self._err.close)):
                t = threading.Thread(target=_drain, args=(stream, write, end), daemon=True,
                                     name="mlbridge-llvm-output")
                t.start()
                self._readers.append(t)
        return self

    def channel(self, advisor):
        """The channel of ``advisor`` ("inline", ...), with ``next()`` and
        ``answer(obs, advice)`` for serving one request at a time."""
        return self.channels[advisor]

    def _stop(self, reason, timed_out=False):
        """Kill the compiler (its whole process group) for ``reason``."""
        with self._lock:
            if self._stop_reason is None:
                self._stop_reason = reason
                self._timed_out = timed_out
            proc = self.proc
            if proc is None or proc.poll() is not None:
                return
            self._killed = True
            process.kill(proc)

    def kill(self, reason="stopped by the host"):
        self._stop(reason)

    def _fail(self, loop, error):
        """A channel of ``loop`` failed with ``error``: record it on that
        channel (or the first) and stop the compiler."""
        failed = next((ch for ch in self.channels.values() if ch.iface is loop.failed),
                      next(iter(self.channels.values())))
        if failed.error is None or isinstance(error, TimeoutError):
            failed.error = error
        self._stop(f"{failed.advisor.name}: {failed.error}")

    def serve(self):
        """Answer every request with the advisors' policies until the
        compiler exits (or the host stops it); returns the RunResult."""
        if self.proc is None:
            self.start()
        missing = [n for n, p in self.policies.items() if p is None]
        if missing:
            raise MLBridgeError(f"no policy for {', '.join(missing)}")
        t0 = time.thread_time()
        try:
            with EventLoop() as loop:
                for ch in self.channels.values():
                    ch.stats = loop.add(ch.iface, ch.respond, on_header=ch._on_header)
                try:
                    loop.run(timeout=self.timeout, deadline=self.deadline)
                except TimeoutError as e:
                    if time.monotonic() < self.deadline:
                        self._fail(loop, e)
                    else:
                        self._fail(loop, TimeoutError(f"the compilation did not finish "
                                                      f"within {self.timeout:g} s"))
                except Exception as e:  # noqa: BLE001 - reported, compiler stopped
                    self._fail(loop, e)
        except BaseException:  # e.g. KeyboardInterrupt: never leave a compiler behind
            self._stop("interrupted")
            self.close()
            raise
        finally:
            self._serve_cpu += time.thread_time() - t0
            for ch in self.channels.values():
                if ch.stats is not None:
                    ch.requests += ch.stats.answered
                    ch.stats = None
        return self.finish()

    def finish(self):
        """Wait for the compiler (within the deadline), collect its output
        and return the RunResult. Idempotent."""
        if self._result is not None:
            return self._result
        proc = self.proc
        try:
            remaining = max(0.0, self.deadline - time.monotonic())
            try:
                proc.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                self._stop(f"the compilation did not finish within {self.timeout:g} s",
                           timed_out=True)
                proc.wait(timeout=10)
            for t in self._readers:
                t.join(10)
            seconds = time.monotonic() - self._t0
        finally:
            for ch in self.channels.values():
                ch.close()
        errors = [ch.error for ch in self.channels.values() if ch.error is not None]
        exception = errors[0] if errors else None
        timed_out = self._timed_out or any(isinstance(e, TimeoutError) for e in errors)
        error = self._stop_reason
        if exception is not None:
            error = f"{_channel_of(self, exception)}: {exception}"
        out = err = None
        sink = self._err
        if sink is not None:
            out, err = b"".join(self._out), bytes(sink.tail)
            if self.text:
                out, err = out.decode(errors="replace"), err.decode(errors="replace")
            if sink.spilled:
                _log.warning("%s wrote %d bytes to stderr: the result holds the last %d, "
                             "the whole stream is in %s", self.user_cmd[0], sink.total,
                             len(sink.tail), sink.path)
        outfile = output_path(self.user_cmd[1:])
        if outfile is not None and self.cwd is not None:
            outfile = os.path.join(self.cwd, outfile)
        res = RunResult(
            command=self.command, returncode=proc.returncode, stdout=out, stderr=err,
            stderr_bytes=0 if sink is None else sink.total,
            stderr_path=None if sink is None else sink.path,
            requests={n: c.requests for n, c in self.channels.items()},
            sessions={n: c.sessions for n, c in self.channels.items()},
            fallbacks={n: c.fallbacks for n, c in self.channels.items()},
            exception=exception, error=error, timed_out=timed_out, killed=self._killed,
            seconds=seconds, host_seconds=self._serve_cpu,
            output=outfile, run_id=self.run_id)
        if self.tracer is not None:
            self._record_outcome(res, outfile)
        self._result = res
        return res

    def _record_outcome(self, res, outfile):
        size = text = None
        if outfile is not None and res.returncode == 0 and os.path.isfile(outfile):
            try:
                size = os.path.getsize(outfile)
            except OSError:
                size = None
            text = elf_text_size(outfile)
        extra = {}
        if self.outcome_fn is not None:
            extra = {k: float(v) for k, v in dict(self.outcome_fn(res)).items()}
        res.outcome = dict(returncode=res.returncode, seconds=res.seconds, output_bytes=size,
                           text_bytes=text, requests=res.total_requests, **extra)
        self.tracer.end_run(self.run_id, error=res.error, **res.outcome)
        if self.trace_path is not None:
            self.tracer.save(self.trace_path)

    def close(self):
        """Kill the compiler if it still runs (and reap it) and remove the
        FIFOs."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with self._lock:
                self._killed = True
                if self._stop_reason is None:
                    self._stop_reason = "closed by the host"
            process.kill(proc)
        if proc is not None:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL was sent
                pass
        for t in self._readers:
            t.join(5)
        if self._err is not None and not self._readers:  # never started: no drain closes it
            self._err.close()
        for ch in self.channels.values():
            ch.close()
        for stream in (getattr(proc, "stdout", None), getattr(proc, "stderr", None)):
            if stream is not None and not self._readers:
                stream.close()


def _channel_of(comp, exc):
    for name, ch in comp.channels.items():
        if ch.error is exc:
            return name
    return "host"


def _drain(stream, write, end=None):
    """Read ``stream`` to its end, handing each chunk to ``write``; then
    ``end()``."""
    try:
        while True:
            chunk = stream.read1(1 << 16) if hasattr(stream, "read1") else stream.read(1 << 16)
            if not chunk:
                break
            write(chunk)
    except (OSError, ValueError):
        pass
    finally:
        try:
            stream.close()
        except OSError:
            pass
        if end is not None:
            end()


class _StderrSink:
    """A compiler's stderr as it is drained: the last ``limit`` bytes in
    memory (``tail``); the whole stream in ``path``: the caller's file, or,
    once the stream outgrows the tail, a new ``mlbridge-stderr-*.log`` in the
    temporary directory (``spilled``), left for the caller. Writing the file
    never stops the draining: on an error the file ends there (a warning
    says so)."""

    def __init__(self, limit, path=None):
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"stderr_tail must be a number of bytes >= 0, got {limit!r}")
        self.limit = limit
        self.path = None if path is None else os.fspath(path)
        self.spilled = False
        self._may_spill = path is None
        self.total = 0
        self.tail = bytearray()
        self._file = None

    def open(self):
        """Create the caller's file (before the compiler starts: a bad path
        fails there)."""
        if self.path is not None:
            self._file = open(self.path, "wb")

    def write(self, chunk):
        self.total += len(chunk)
        if self._may_spill and len(self.tail) + len(chunk) > self.limit:
            self._may_spill = False
            self._spill()
        self._save(chunk)
        self.tail += chunk
        if len(self.tail) > self.limit:
            del self.tail[:len(self.tail) - self.limit]

    def _spill(self):
        try:
            fd, path = tempfile.mkstemp(prefix="mlbridge-stderr-", suffix=".log")
        except OSError as e:
            _log.warning("cannot create a file for the compiler's stderr (%s): only its last "
                         "%d bytes are kept", e, self.limit)
            return
        self.path, self.spilled = path, True
        self._file = os.fdopen(fd, "wb")
        self._save(self.tail)

    def _save(self, data):
        if self._file is None:
            return
        try:
            self._file.write(data)
        except OSError as e:
            _log.warning("cannot write the compiler's stderr to %s (%s): the file ends there",
                         self.path, e)
            self.close()

    def close(self):
        f, self._file = self._file, None
        if f is not None:
            try:
                f.close()
            except OSError:
                pass


def advisor_host(advisors, *, include_default=None):
    """``advisors`` (``{"inline"|"evict"|"priority": policy}``) answered
    over LLVM's interactive channels, as the ``host`` of
    :func:`mlbridge.toolchain.compile` (``include_default`` as for :func:`run`)."""
    def host(cmd, *, timeout, env, cwd):
        return Compilation(cmd, advisors, timeout=timeout, include_default=include_default,
                           env=env, cwd=cwd)
    return host


def run(cmd, *, inline=None, evict=None, priority=None, **options):
    """Run ``cmd`` (an opt, llc or clang command line) with the given
    advisors served by Python policies; returns a :class:`RunResult`.
    ``options`` are those of :class:`Compilation`, described here.

    ``inline`` / ``evict`` / ``priority``: a policy for that advisor (a
    built-in name, ``"module:function"``, a TorchScript path, a
    ``torch.nn.Module`` or any callable ``obs -> advice``); None leaves the
    advisor to LLVM. The right flags are added after ``cmd[0]``.

    ``timeout``: seconds for the whole compilation; when it passes the
    compiler is killed and ``timed_out`` is set. ``include_default``: ask
    LLVM for its default inlining decision (automatic for policies that
    need it); on LLVM 17-20 the host fixes LLVM's misplaced value
    (``default_bug``: None = decide from the tool's version).
    ``on_invalid``: "stop" (default) kills the compiler when a policy's
    advice breaks the advisor's rules; "fallback" sends a safe answer
    instead and counts it in ``fallbacks``. ``trace``: a :class:`Tracer`
    or an ``.npz`` path. ``outcome``: optional ``f(RunResult) -> {key:
    number}`` recorded with the run. ``capture_output``/``text``/``stdin``/
    ``cwd``/``env``: as for :mod:`subprocess`.

    ``stderr_tail``: how many bytes of the end of the compiler's stderr the
    result holds in ``stderr`` (:data:`STDERR_TAIL_BYTES`, 1 MiB, by
    default); the host never holds more of it. ``stderr_file``: a path that
    receives the whole stream. Without it, a stream longer than the tail is
    written whole to a new ``mlbridge-stderr-*.log`` in the temporary
    directory (``$TMPDIR``, else ``/tmp``), named in ``stderr_path`` and in
    a warning on the ``mlbridge.llvm`` logger; the caller removes it.
    ``stdout`` is held whole: give the compiler ``-o`` for large output.

    Errors of the host (a policy that raises, invalid advice, a malformed
    stream, the timeout) do not raise: they stop the compiler and are
    reported in ``error``/``exception``; ``result.check()`` raises them.
    """
    advisors = {k: v for k, v in (("inline", inline), ("evict", evict),
                                  ("priority", priority)) if v is not None}
    comp = Compilation(cmd, advisors, **options)
    try:
        comp.start()
        return comp.serve()
    finally:
        comp.close()
