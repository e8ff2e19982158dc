"""The compiler-process layer: which LLVM, how a compiler is started, served
and measured. Every Python caller that runs a compiler goes through here
(the corpus tool, training rewards, baselines, evaluation, benchmarks), so
they all use the same compiler and the same measures.

Modules: :mod:`~mlbridge.toolchain.tools` (tool lookup, command-line
facts), :mod:`~mlbridge.toolchain.process` (the process supervisor),
:mod:`~mlbridge.toolchain.run` (compile and run tools),
:mod:`~mlbridge.toolchain.measure` (``.text``, callgrind) and
:mod:`~mlbridge.toolchain.serve` (answering a compiler's model requests);
their public names are all importable from here.

* :func:`toolchain` finds the tools once: ``$MLBRIDGE_CLANG`` (default
  ``clang-19``) and ``opt``, ``llc``, ``llvm-dis``, ... of the same LLVM
  major version; its ``--version`` is read once (:attr:`Toolchain.version`,
  :attr:`Toolchain.tag` for cache keys).
* :func:`compile` runs one compiler command under the process supervisor
  (:mod:`mlbridge.toolchain.process`), optionally served by a ``host`` while
  it runs (LLVM's interactive advisors: :func:`mlbridge.llvm.host.advisor_host`),
  and returns a :class:`Compiled`: the object, its ``.text`` bytes, the
  compiler's CPU seconds (user + system of exactly that child, from
  ``wait4``) and wall seconds. Failure, a crash, a timeout or a missing
  object raise :class:`CompileError` saying which.
* :func:`serve_compiler` runs a compiler whose model requests arrive over a
  pipe, shared-memory or gRPC endpoint it is given (the project's plugins
  and C tool, any program using the runners) and answers each one with a
  policy; :class:`ModelServer` answers such an
  endpoint from a thread while compilers are run one after the other
  (benchmarks, builds).
* :func:`callgrind` runs a program under valgrind's callgrind and returns
  its instruction count (Ir; of one function and its callees if asked):
  the project's one reader of callgrind's output.
* Every process started here that loads a plugin of a sanitized build
  (``-fpass-plugin=``, ``-load-pass-plugin``, ``-load``, ``-fplugin=``; the
  build manifest next to the plugin says ``sanitize``) gets the sanitizer
  runtime preloaded (:func:`plugin_env`): the stock, uninstrumented
  ``clang``/``opt``/``llc`` cannot load such a plugin otherwise.
"""

from . import process
from .measure import Callgrind, callgrind, elf_text_size
from .run import (Compiled, compile, first_error, loaded_plugins, plugin_env, run_command,
                  run_tool, sanitizer_env)
from .serve import TRANSPORTS, ModelServer, ServedRun, open_interface, serve_compiler
from .tools import (COMPILE_TIMEOUT, DEFAULT_CLANG, CompileError, Toolchain, output_path,
                    toolchain)

__all__ = ["Toolchain", "toolchain", "compile", "Compiled", "CompileError",
           "serve_compiler", "ServedRun", "ModelServer", "open_interface", "TRANSPORTS",
           "run_tool", "run_command",
           "plugin_env", "sanitizer_env", "loaded_plugins", "first_error", "callgrind",
           "Callgrind", "elf_text_size", "output_path", "process",
           "DEFAULT_CLANG", "COMPILE_TIMEOUT"]
