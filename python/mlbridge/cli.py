"""How every ``python -m mlbridge...`` command line ends (docs/training.md,
"When a command fails").

An expected failure -- a bad argument, a missing manifest, plugin, IR file or
vocabulary, a compile that fails, an output folder that is read-only or full,
Ctrl-C -- ends in ONE line on stderr and a non-zero exit status, never a
traceback (a traceback means a bug in mlbridge)::

    <prog>: error: <what failed>        exit 1 (EXIT_ERROR)
    <prog>: error: <bad argument> ...   exit 2 (EXIT_USAGE, argparse)
    <prog>: interrupted                 exit 130 (EXIT_INTERRUPTED, SIGINT)

"Expected" is :class:`mlbridge.errors.MLBridgeError` (every error mlbridge
raises on purpose) and :class:`OSError` (the file system's answer). A
command line builds its parser with :class:`ArgumentParser` and ends with
``sys.exit(cli.run(prog, main))``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile

from .errors import MLBridgeError

__all__ = ["ArgumentParser", "run", "describe", "positive_int", "non_negative_int",
           "existing_file", "output_file", "output_folder", "naming", "write_json", "EXIT_ERROR",
           "EXIT_USAGE", "EXIT_INTERRUPTED", "EXPECTED"]

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C

#: The exceptions that are a failure of the run, not of mlbridge.
EXPECTED = (MLBridgeError, OSError)


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with a usage error on one line (its subparsers too)."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (--help for usage)\n")


def _int_at_least(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= {least}, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected an integer >= {least}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An argparse ``type``: an integer >= 1 (jobs, workers)."""
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """An argparse ``type``: an integer >= 0 (workers where 0 means "here")."""
    return _int_at_least(text, 0)


def existing_file(text: str) -> str:
    """An argparse ``type``: the path of a file that exists (IR, a plugin,
    a model), refused before any work starts."""
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    return text


def _check_writable(folder: str) -> None:
    """Raises the OSError that writing a file in ``folder`` would (a
    read-only disk, a path under a file, no permission); creates nothing
    that stays (missing folders are made and removed again)."""
    folder = os.path.abspath(folder)
    missing = []
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    made = []
    try:
        for d in reversed(missing):
            os.mkdir(d)
            made.append(d)
        fd, probe = tempfile.mkstemp(prefix=".mlbridge-probe-",
                                     dir=missing[0] if missing else folder)
        os.close(fd)
        os.unlink(probe)
    finally:
        for d in reversed(made):
            os.rmdir(d)


def output_folder(text: str) -> str:
    """An argparse ``type``: a folder the run can write its results in,
    checked before any work starts (it need not exist yet)."""
    try:
        _check_writable(text)
    except OSError as e:
        raise argparse.ArgumentTypeError(f"cannot write in {text}: {e.strerror or e}") from None
    return text


def output_file(text: str) -> str:
    """An argparse ``type``: a file the run can write (its folder checked
    as :func:`output_folder` does)."""
    try:
        _check_writable(os.path.dirname(os.path.abspath(text)))
    except OSError as e:
        raise argparse.ArgumentTypeError(f"cannot write {text}: {e.strerror or e}") from None
    return text


@contextlib.contextmanager
def naming(path):
    """An OSError raised inside names ``path`` if it names no file (a write
    or flush that fails, e.g. ENOSPC, names none)."""
    try:
        yield
    except OSError as e:
        if e.filename is None:
            raise OSError(e.errno, e.strerror, os.fspath(path)) from None
        raise


def write_json(path, obj, **dump_options) -> None:
    """``json.dump(obj)`` into the file ``path`` (a command's results)."""
    with naming(path), open(path, "w") as f:
        json.dump(obj, f, **dump_options)


def describe(exc: BaseException) -> str:
    """``exc`` as one line: an OSError as "<file>: <reason>" (the reason
    alone without a file), anything else its message with line breaks
    folded."""
    if isinstance(exc, OSError) and exc.strerror:
        files = [f for f in (exc.filename, exc.filename2) if f is not None]
        text = f"{' -> '.join(map(str, files))}: {exc.strerror}" if files else exc.strerror
    else:
        text = str(exc) or type(exc).__name__
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())


def _end_progress_bars() -> None:
    """Closes the tqdm bars a failure left open: the error line then starts
    a line of its own and no bar is drawn again after it at exit."""
    tqdm = getattr(sys.modules.get("tqdm"), "tqdm", None)
    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()


def _fail(line: str, status: int) -> int:
    _end_progress_bars()
    print(line, file=sys.stderr)
    return status


def run(prog: str, main, argv=None) -> int:
    """``main(argv)``'s exit status (None: 0); an expected failure or Ctrl-C
    is one line on stderr and its status (see the module's doc)."""
    try:
        status = main(argv)
    except KeyboardInterrupt:
        return _fail(f"{prog}: interrupted", EXIT_INTERRUPTED)
    except EXPECTED as e:
        return _fail(f"{prog}: error: {describe(e)}", EXIT_ERROR)
    return 0 if status is None else int(status)
