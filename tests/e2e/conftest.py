"""Shared fixtures for the end-to-end tests (real compilers, real processes).

* The repository's ``python/`` directory is put first on ``sys.path`` so the
  tests import the working-tree ``mlbridge`` package, not an installed one.
* Built programs (C++ tools) are looked up under the build directory named by
  the environment variable ``MLBRIDGE_BUILD_DIR`` (default: ``<repo>/build``).
* LLVM 19 tools are required: a missing ``opt-19``/``clang-19`` is a test
  *failure* with a message saying what to install, never a skip. The plugin
  tests run on every LLVM version the build has plugins for
  and the LLVM host tests on every LLVM version the build has (``llvm_major``
  with that version's ``opt``, ``clang``, ``llc``).
* Optional components (tests/build_components.py): a test is skipped only
  when the build says the component is off.

Every subprocess started here is bounded by a timeout and killed when the
test ends, whatever the outcome, so a wedged compiler never hangs the run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

import pytest

E2E_DIR = Path(__file__).resolve().parent
REPO_ROOT = E2E_DIR.parents[1]
PYTHON_DIR = REPO_ROOT / "python"
PROGRAMS_DIR = E2E_DIR / "programs"

for _path in (PYTHON_DIR, E2E_DIR.parent):  # the package; build_components.py
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

#: Upper bound for one compiler / tool invocation, in seconds.
SUBPROCESS_TIMEOUT = 30.0



def build_dir() -> Path:
    """The CMake build directory the e2e tests take binaries from."""
    from build_components import build_dir as located
    return located()


def find_llvm_tool(name: str) -> Optional[str]:
    """Path of a versioned LLVM tool ("opt-19", "clang-22", ...), or None."""
    from mlbridge.llvm.plugins import PluginNotFound
    from mlbridge.llvm.plugins import find_llvm_tool as find
    try:
        return find(name)
    except PluginNotFound:
        return None


def required(found, missing: str):
    """found, unless it is None: then the test fails with `missing` (a setup
    problem, reported without a traceback)."""
    if found is None:
        pytest.fail(missing, pytrace=False)
    return found


def require_llvm_tool(name: str) -> str:
    major = name.rpartition("-")[2]
    return required(
        find_llvm_tool(name),
        f"{name} not found on PATH or in /usr/lib/llvm-{major}/bin: the "
        f"end-to-end tests need LLVM {major} (Debian: apt-get install llvm-{major} "
        f"clang-{major}; LLVM 22: scripts/deps/llvm22.apt)")


def find_built_program(name: str) -> Optional[Path]:
    """Finds an executable called `name` anywhere under the build directory."""
    root = build_dir()
    if not root.is_dir():
        return None
    for sub in ("tests", "tests/e2e", "bin", "tools", "."):
        candidate = root / sub / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    for dirpath, dirnames, filenames in os.walk(root):
        # CMake's own scratch directories never hold our targets.
        dirnames[:] = [d for d in dirnames if d != "CMakeFiles"]
        if name in filenames:
            candidate = Path(dirpath) / name
            if os.access(candidate, os.X_OK):
                return candidate
    return None


def require_built_program(name: str) -> Path:
    return required(
        find_built_program(name),
        f"{name} not found under the build directory {build_dir()} "
        f"(set MLBRIDGE_BUILD_DIR, or run: cmake -S {REPO_ROOT} -B "
        f"{REPO_ROOT / 'build'} -G Ninja && cmake --build "
        f"{REPO_ROOT / 'build'} --target {name})")


class ProcessGuard:
    """Starts processes and guarantees they are gone when the test ends."""

    def __init__(self) -> None:
        self._procs: List[subprocess.Popen] = []

    def spawn(self, cmd: Sequence[str], **kwargs) -> subprocess.Popen:
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        # Own process group: a kill reaches anything the tool started.
        kwargs.setdefault("start_new_session", True)
        proc = subprocess.Popen(list(map(str, cmd)), **kwargs)
        self._procs.append(proc)
        return proc

    def finish(self, proc: subprocess.Popen, timeout: float = SUBPROCESS_TIMEOUT):
        """Waits for proc (bounded) and returns (returncode, stdout, stderr)."""
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(proc)
            out, err = proc.communicate()
            pytest.fail(
                f"{proc.args[0]} did not finish within {timeout:.0f} s "
                f"(killed); stderr:\n{(err or b'').decode(errors='replace')[-2000:]}",
                pytrace=False,
            )
        return (
            proc.returncode,
            (out or b"").decode(errors="replace"),
            (err or b"").decode(errors="replace"),
        )

    @staticmethod
    def kill(proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                proc.kill()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - cannot happen after SIGKILL
            pass

    def close(self) -> None:
        for proc in self._procs:
            self.kill(proc)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        self._procs.clear()


def run_against_pipe(make_cmd, answer, timeout: float = 60.0, env=None):
    """Runs ``make_cmd(channel base)`` while ``answer(iface)`` plays the model
    on a fresh PipeCompilerInterface; the process is reaped whatever happens.
    Returns (returncode, stdout, stderr) as text."""
    from mlbridge import PipeCompilerInterface
    with PipeCompilerInterface(timeout=30) as iface:
        proc = subprocess.Popen(list(map(str, make_cmd(iface.base))), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, env=env)
        iface.process = proc
        try:
            answer(iface)
            stdout, stderr = proc.communicate(timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return proc.returncode, stdout, stderr


def run_checked(cmd: Sequence[str], timeout: float = SUBPROCESS_TIMEOUT) -> str:
    """Runs a short command to completion; fails the test on error."""
    try:
        res = subprocess.run(
            list(map(str, cmd)),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"timed out after {timeout:.0f} s: {' '.join(map(str, cmd))}",
                    pytrace=False)
    if res.returncode != 0:
        pytest.fail(
            f"command failed ({res.returncode}): {' '.join(map(str, cmd))}\n"
            f"{res.stderr.decode(errors='replace')[-2000:]}",
            pytrace=False,
        )
    return res.stdout.decode(errors="replace")


def run_completed(cmd: Sequence, timeout: float = SUBPROCESS_TIMEOUT,
                  **kwargs) -> subprocess.CompletedProcess:
    """Runs ``cmd`` (text output, ``cwd``/``env`` in ``kwargs``); fails the
    test with both output tails unless it exits 0."""
    res = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                         timeout=timeout, stdin=subprocess.DEVNULL, **kwargs)
    assert res.returncode == 0, (f"{' '.join(map(str, cmd))} exited {res.returncode}:\n"
                                 f"{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    return res


def installed_kit(llvm_major: int, work: Path) -> Path:
    """``cmake --install`` of this build's components core and llvm<V>
    alone into ``work``/prefix (the kit a user of LLVM V installs); skips
    when the build has no LLVM V plugins or is a sanitizer build (whose
    libraries need a runtime a user's plugin and clang do not have)."""
    from build_components import build_dir, manifest, require_component
    require_component(LLVM_VERSION_COMPONENTS[llvm_major])
    if manifest().sanitize:
        pytest.skip("a sanitizer build is not installed for users")
    prefix = work / "prefix"
    for component in ("core", f"llvm{llvm_major}"):
        run_completed(["cmake", "--install", build_dir(), "--prefix", prefix,
                       "--component", component], timeout=300)
    return prefix


def build_against(project: Path, prefix: Path, build: Path, llvm_major: int,
                  *defines: str) -> Path:
    """``project`` configured against the installed ``prefix`` for LLVM
    ``llvm_major`` (Ninja; ``defines`` as -D...) and built in ``build``."""
    run_completed(["cmake", "-S", project, "-B", build, "-G", "Ninja",
                   f"-DCMAKE_PREFIX_PATH={prefix}", f"-DLLVM_VERSION={llvm_major}", *defines],
                  timeout=300)
    run_completed(["cmake", "--build", build], timeout=300)
    return build


def program_bitcode(out_dir: Path, names: Sequence[str],
                    variants: Dict[str, Sequence[str]]) -> Dict[str, Path]:
    """The programs ``names`` of tests/e2e/programs compiled by clang-19 to
    bitcode in ``out_dir``, once per ``variants`` entry (label -> clang
    flags): ``"<name>.<label>"`` -> the .bc file."""
    from mlbridge import toolchain
    out = {}
    for name in names:
        for label, flags in variants.items():
            bc = Path(out_dir) / f"{name}.{label}.bc"
            toolchain.compile(["clang-19", *flags, "-emit-llvm", "-c",
                               str(PROGRAMS_DIR / f"{name}.c"), "-o", str(bc)],
                              timeout=120, measure_text=False)
            out[f"{name}.{label}"] = bc
    return out


def check_mlir_unroll_plugin_loads(mlir_opt: str, plugin: Path,
                                   timeout: float = 60.0) -> None:
    """``mlir_opt --load-pass-plugin=plugin`` lists mlbridge-affine-unroll,
    and the plugin's dynamic symbols define MLIR's entry point and no C++
    (mangled) name."""
    res = subprocess.run([str(mlir_opt), f"--load-pass-plugin={plugin}", "--help"],
                         capture_output=True, text=True, timeout=timeout,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    assert "mlbridge-affine-unroll" in res.stdout
    syms = subprocess.run(["nm", "-D", "--defined-only", str(plugin)],
                          capture_output=True, text=True, check=True).stdout.split()
    assert "mlirGetPassPluginInfo" in syms
    assert not [s for s in syms if s.startswith("_Z")], "C++ symbols exported"


# ---- fixtures ---------------------------------------------------------------

_THIS_MODULE = sys.modules[__name__]


@pytest.fixture(scope="session")
def e2e():
    """This module: ProcessGuard, run_checked, require_built_program, ...

    Test modules reach the helpers through this fixture rather than
    `import conftest`, which is ambiguous when several test directories have
    a conftest.py.
    """
    return _THIS_MODULE



@pytest.fixture
def procs() -> Iterator[ProcessGuard]:
    guard = ProcessGuard()
    try:
        yield guard
    finally:
        guard.close()


@pytest.fixture(scope="module")
def plugins(mlbridge_pkg):
    """The built LLVM 19 plugins (the build manifest); skipped only when the
    build says the plugins are off."""
    from build_components import require_built
    from mlbridge.llvm.plugins import find_plugins
    return require_built("llvm_plugins", lambda: find_plugins(llvm=19))


#: The LLVM versions the tests run on, with the build manifest's component
#: that says the build has that version (docs/llvm-versions.md): LLVM 19 is
#: always required; LLVM 22 when the build has its plugins (llvm-22-dev and
#: the tools of scripts/deps/llvm22.apt were found).
LLVM_VERSION_COMPONENTS = {19: "llvm_plugins", 22: "llvm_plugins_llvm22"}


@pytest.fixture(scope="module", params=sorted(LLVM_VERSION_COMPONENTS),
                ids=lambda v: f"llvm{v}")
def llvm_major(request, mlbridge_pkg) -> int:
    """Each LLVM major version in turn (a test module using ``opt``,
    ``clang``, ``llc`` runs once per version); 22 is skipped only when the
    build says it has no LLVM 22 (then its tools need not be installed)."""
    from build_components import require_component
    if request.param != 19:
        require_component(LLVM_VERSION_COMPONENTS[request.param])
    return request.param


def plugins_of_each_llvm(*required: str):
    """A test module's ``plugins`` fixture that gives the built plugins of
    each LLVM version in turn (``plugins = plugins_of_each_llvm()`` in the
    module: it runs once per version, with that version's opt, clang, llc);
    ``required``: PluginInfo attributes (e.g. "regalloc") the build must
    have."""
    @pytest.fixture(scope="module", name="plugins")
    def each(plugins_any_llvm):
        for attr in required:
            assert getattr(plugins_any_llvm, attr) is not None, \
                f"the build manifest lists no {attr} plugin"
        return plugins_any_llvm
    return each


@pytest.fixture(scope="module")
def plugins_any_llvm(llvm_major):
    """The built plugins of each LLVM version in turn (a test module whose
    ``plugins`` fixture returns this runs once per version)."""
    from build_components import require_built
    from mlbridge.llvm.plugins import find_plugins
    return require_built(LLVM_VERSION_COMPONENTS[llvm_major],
                         lambda: find_plugins(llvm=llvm_major))


@pytest.fixture(scope="module")
def opt(llvm_major) -> str:
    """opt of the LLVM version ``llvm_major``."""
    return require_llvm_tool(f"opt-{llvm_major}")


@pytest.fixture(scope="module")
def clang(llvm_major) -> str:
    """clang of the LLVM version ``llvm_major``."""
    return require_llvm_tool(f"clang-{llvm_major}")


@pytest.fixture(scope="module")
def llc(llvm_major) -> str:
    """llc of the LLVM version ``llvm_major``."""
    return require_llvm_tool(f"llc-{llvm_major}")


#: The csmith programs of the plugin tests (with the hand-written ones in
#: programs/plugins).
PLUGIN_CSMITH_SEEDS = (4, 7, 10)
#: Upper bound for running one program of the plugin corpus.
PLUGIN_RUN_TIMEOUT = 60.0


@pytest.fixture(scope="session")
def plugin_corpora(tmp_path_factory, mlbridge_pkg):
    """clang -> the LLVM plugin tests' programs compiled by that clang: name ->
    {"ir": module for opt, "sources": C files, "flags": clang flags}; each
    clang's once per session."""
    from mlbridge.llvm.plugins import compile_to_ir
    from mlbridge.llvm.plugins.corpus import csmith_include_dir, csmith_ir, linked_ir
    if shutil.which("csmith") is None:
        pytest.fail("csmith not found: run scripts/install-deps.sh "
                    "(scripts/deps/plugins.apt installs csmith)", pytrace=False)
    corpora: Dict[str, Dict[str, Dict]] = {}

    def build(clang: str) -> Dict[str, Dict]:
        if clang in corpora:
            return corpora[clang]
        out = tmp_path_factory.mktemp("plugin-corpus")
        programs = PROGRAMS_DIR / "plugins"
        progs = {}
        for name in ("bitops", "interp"):
            src = programs / f"{name}.c"
            progs[name] = {"ir": compile_to_ir(src, out / f"{name}.ll", clang=clang),
                           "sources": [src], "flags": []}
        mc = sorted((programs / "minicalc").glob("*.c"))
        progs["minicalc"] = {"ir": linked_ir(mc, out / "minicalc.ll", clang=clang),
                             "sources": mc, "flags": []}
        inc = csmith_include_dir()
        for seed in PLUGIN_CSMITH_SEEDS:
            ir = csmith_ir(seed, out, max_funcs=8, clang=clang)
            progs[f"csmith{seed}"] = {"ir": ir, "sources": [ir.with_suffix(".c")],
                                      "flags": ["-w", f"-I{inc}"]}
        corpora[clang] = progs
        return progs

    return build


@pytest.fixture(scope="module")
def plugin_corpus(plugin_corpora, clang) -> Dict[str, Dict]:
    """The LLVM plugin tests' programs, compiled by the ``clang`` of the
    plugins' LLVM version (:func:`plugin_corpora`)."""
    return plugin_corpora(clang)


@pytest.fixture(scope="session")
def plugin_reference_outputs(plugin_corpora, clang19, tmp_path_factory) -> Dict[str, str]:
    """What each program of the plugin corpus prints, built by plain clang-19 -O0."""
    out = tmp_path_factory.mktemp("plugin-reference")
    ref = {}
    for name, p in plugin_corpora(clang19).items():
        exe = out / name
        run_checked([clang19, "-O0", *p["flags"], *map(str, p["sources"]), "-o", str(exe)])
        ref[name] = run_checked([str(exe)], timeout=PLUGIN_RUN_TIMEOUT)
    return ref


@pytest.fixture(scope="session")
def opt19() -> str:
    return require_llvm_tool("opt-19")


@pytest.fixture(scope="session")
def clang19() -> str:
    return require_llvm_tool("clang-19")


@pytest.fixture(scope="session")
def llc19() -> str:
    return require_llvm_tool("llc-19")


#: Where Debian's libcsmith-dev puts csmith.h (generated programs include it).
CSMITH_INCLUDE_DIRS = ("/usr/include/csmith", "/usr/local/include/csmith")


@pytest.fixture(scope="session")
def csmith() -> Dict[str, str]:
    """{"csmith": path of the generator, "include": its runtime headers}."""
    exe = shutil.which("csmith")
    inc = next((d for d in CSMITH_INCLUDE_DIRS if Path(d, "csmith.h").is_file()), None)
    if exe is None or inc is None:
        pytest.fail(
            "csmith (generator of random C programs) or its headers are missing: "
            "run scripts/install-deps.sh (Debian: apt-get install csmith libcsmith-dev)",
            pytrace=False,
        )
    return {"csmith": exe, "include": inc}


@pytest.fixture(scope="session")
def mlbridge_pkg():
    """The working tree's mlbridge package (a clear failure if it is broken)."""
    try:
        import mlbridge  # noqa: F401
        from mlbridge import PipeCompilerInterface, TimeoutError  # noqa: F401
    except Exception as exc:  # ImportError, or an error inside the package
        pytest.fail(f"cannot import mlbridge from {PYTHON_DIR}: {exc!r}",
                    pytrace=False)
    return mlbridge


#: The real library whose own ``make test`` the plugins' correctness tests
#: build with each plugin, and its translation units.
BZIP2_UNITS = ("blocksort", "huffman", "crctable", "randtable", "compress", "decompress",
               "bzlib", "bzip2")


@pytest.fixture(scope="module")
def bzip2_corpus(tmp_path_factory, mlbridge_pkg):
    """The corpus with bzip2 fetched (cached download, sha256 verified)."""
    from mlbridge.corpus import Corpus
    c = Corpus.load(build_dir=tmp_path_factory.mktemp("corpus-build"))
    c.fetch(["bzip2"])
    return c


@pytest.fixture(scope="session")
def program_sources() -> Dict[str, Path]:
    """name -> path of every C program in tests/e2e/programs."""
    progs = {p.stem: p for p in sorted(PROGRAMS_DIR.glob("*.c"))}
    assert progs, f"no C programs in {PROGRAMS_DIR}"
    return progs


@pytest.fixture(scope="session")
def program_ir(tmp_path_factory, clang19, program_sources) -> Dict[str, Path]:
    """name -> LLVM IR (.ll) the inliner will consider.

    `-O2 -Xclang -disable-llvm-passes` keeps the IR unoptimized but without
    the `optnone`/`noinline` attributes `-O0` would put on every function.
    """
    out_dir = tmp_path_factory.mktemp("ir")
    result = {}
    for name, src in program_sources.items():
        ll = out_dir / f"{name}.ll"
        run_checked([clang19, "-O2", "-Xclang", "-disable-llvm-passes",
                     "-emit-llvm", "-S", str(src), "-o", str(ll)])
        result[name] = ll
    return result
