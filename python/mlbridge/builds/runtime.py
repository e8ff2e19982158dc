"""Run time of the real projects: each project's own programs, built by its
own build system in a configuration, run on fixed inputs under callgrind.

A project's workloads (:data:`WORKLOADS`) are invocations of the programs
its build produced -- zlib's ``minigzip``, ``lz4``, ``brotli``, ``xz``,
``pcre2test`` and ``pcre2grep``, ... -- on inputs that never change: the
project's own (pinned) source tarball uncompressed, files of its source
tree (pcre2's ``testdata``), or text generated from a fixed seed. Each
runs as a whole process under ``valgrind --tool=callgrind``
(:func:`mlbridge.toolchain.callgrind`, the project's one callgrind reader):
its Ir counts every instruction the process executed (dynamic loader and
libc included, the same in every configuration). What each workload wrote
-- its standard output and every output file -- is kept as sha256 and
compared byte for byte with the base configuration's; a compressor's
round trip is also checked against its input. A difference is a wrong-code
bug, never a measurement.

Every build of a project happens in the same folder (``<work>/<llvm>/<project>/tree``)
and every workload runs in the same run folder, so paths (and the
environment the program starts with) are the same in every configuration.
Shared libraries of the project must resolve into the build tree
(``ldd`` under the workload's environment): the installed copy of a
library would measure Debian's build, not this one.
"""

from __future__ import annotations

import bz2
import glob
import gzip
import hashlib
import lzma
import math
import random
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..toolchain import CompileError, callgrind
from .fetch import fetch

__all__ = ["Workload", "Runtime", "WORKLOADS", "for_project", "prepare_inputs", "measure",
           "measure_build", "compare", "table", "WorkloadError", "RUN_TIMEOUT", "CONFIGS"]

#: The configurations measured by default: each plugin configuration with
#: its base (loop distribution against -O3, the register allocator against
#: -O2, whose allocator is greedy).
CONFIGS = ("O3", "loopdist", "O2", "regalloc")

#: Seconds a workload may run under callgrind.
RUN_TIMEOUT = 1800.0


class WorkloadError(RuntimeError):
    """A workload could not be measured: the program failed, a round trip
    differs from its input, or a library resolved outside the build."""


@dataclass(frozen=True)
class Workload:
    """One program run. ``argv[0]`` is relative to the build folder;
    ``{src}`` / ``{build}`` in an argument are the source and build
    folders; an argument that starts with one of them and has a ``*`` is
    the files it matches (sorted). It runs in the run folder, where the inputs are and where it
    writes ``outputs``; ``roundtrip``: (output, input) files that must be
    byte for byte equal; ``ignore``: a regular expression of standard
    output lines left out of its hash (a program that prints its own
    resident set size)."""

    name: str
    argv: Tuple[str, ...]
    outputs: Tuple[str, ...] = ()
    roundtrip: Optional[Tuple[str, str]] = None
    ignore: Optional[str] = None


@dataclass(frozen=True)
class Runtime:
    """A project's run-time measure: ``inputs`` (file in the run folder ->
    how it is made: ``("orig", project, limit)`` the project's pinned
    upstream tarball uncompressed, its first ``limit`` bytes (None: all);
    ``("generated", name)`` a generator of :data:`GENERATORS`; ``("bytes",
    data)`` the bytes given), the
    ``workloads`` in order (a later one may read an earlier one's output),
    and ``lib_dirs``: folders of the build (relative) put on
    ``LD_LIBRARY_PATH`` (libtool keeps uninstalled libraries in ``.libs``)."""

    project: str
    inputs: Mapping[str, tuple]
    workloads: Tuple[Workload, ...]
    lib_dirs: Tuple[str, ...] = ()


def _json_doc(rng: random.Random, n: int) -> str:
    import json
    words = ["alpha", "beta", "gamma", "delta", "\u00e9t\u00e9", "na\u00efve", "x\"q", "tab\t"]

    def value(depth):
        k = rng.randrange(8 if depth < 4 else 5)
        if k == 0:
            return rng.randrange(-10**9, 10**9)
        if k == 1:
            return round(rng.uniform(-1e6, 1e6), rng.randrange(1, 9))
        if k == 2:
            return " ".join(rng.choice(words) for _ in range(rng.randrange(1, 6)))
        if k == 3:
            return rng.choice([True, False, None])
        if k == 4:
            return rng.randrange(100)
        if k in (5, 6):
            return {f"k{rng.randrange(50)}_{i}": value(depth + 1)
                    for i in range(rng.randrange(1, 7))}
        return [value(depth + 1) for _ in range(rng.randrange(1, 7))]

    return json.dumps([value(0) for _ in range(n)], indent=1, ensure_ascii=False) + "\n"


def _gen_json(seed=37, n=3000) -> bytes:
    return _json_doc(random.Random(seed), n).encode()


def _gen_yaml(seed=37, n=3000) -> bytes:
    """A YAML document of mappings, sequences, scalars of every style and
    anchors/aliases, from a fixed seed."""
    rng = random.Random(seed)
    out = ["%YAML 1.1", "---"]
    for i in range(n):
        out.append(f"- &a{i} id: {i}")
        out.append(f"  name: \"item {rng.randrange(10**6)} \\u00e9\"")
        out.append(f"  ratio: {rng.uniform(-1e3, 1e3):.6f}")
        out.append(f"  flags: [{', '.join(rng.choice(['on', 'off', 'yes', '~']) for _ in range(4))}]")
        out.append("  text: |")
        for _ in range(rng.randrange(1, 4)):
            out.append("    " + " ".join(f"w{rng.randrange(999)}" for _ in range(8)))
        out.append("  map: {" + ", ".join(f"k{j}: {rng.randrange(99)}" for j in range(3)) + "}")
        if i:
            out.append(f"  prev: *a{rng.randrange(i)}")
    return ("\n".join(out) + "\n...\n").encode()


def _gen_xml(seed=37, n=6000) -> bytes:
    """An XML document with attributes, entities, CDATA, comments and
    namespaces, from a fixed seed."""
    rng = random.Random(seed)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<!DOCTYPE root [<!ENTITY co "Company &amp; Co"><!ATTLIST item kind CDATA "plain">]>',
           '<root xmlns="urn:a" xmlns:b="urn:b">']
    for i in range(n):
        attrs = " ".join(f'a{j}="{rng.randrange(10**6)}"' for j in range(rng.randrange(1, 5)))
        out.append(f'<item id="i{i}" {attrs}><b:name>n&#{rng.randrange(0x41, 0x5a)};'
                   f'\u00e9 &co; {rng.randrange(10**9)}</b:name>'
                   f'<v>{rng.uniform(-1, 1):.9f}</v>'
                   + (f'<![CDATA[<raw> & {i}]]>' if i % 7 == 0 else '')
                   + (f'<!-- c{i} -->' if i % 11 == 0 else '')
                   + '</item>')
    out.append("</root>")
    return ("\n".join(out) + "\n").encode()


def _plain_doc(seed=37, n=3000):
    """JSON jansson and Python write alike: integers, ASCII strings,
    booleans, null, arrays and objects (no reals: the two print them
    differently)."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "x\"q", "tab\t", "a/b", "back\\slash"]

    def value(depth):
        k = rng.randrange(7 if depth < 4 else 4)
        if k == 0:
            return rng.randrange(-10**12, 10**12)
        if k == 1:
            return " ".join(rng.choice(words) for _ in range(rng.randrange(1, 6)))
        if k == 2:
            return rng.choice([True, False, None])
        if k == 3:
            return rng.randrange(100)
        if k in (4, 5):
            return {f"k{rng.randrange(50)}_{i}": value(depth + 1)
                    for i in range(rng.randrange(1, 7))}
        return [value(depth + 1) for _ in range(rng.randrange(1, 7))]

    return [value(0) for _ in range(n)]


def _dump(**kw) -> Callable[[], bytes]:
    import json
    return lambda: json.dumps(_plain_doc(), **kw).encode()


#: Deterministic inputs by name.
GENERATORS: Dict[str, Callable[[], bytes]] = {
    "json": _gen_json, "yaml": _gen_yaml, "xml": _gen_xml,
    "json-plain": _dump(indent=1),
    "json-plain-compact": _dump(separators=(",", ":")),
    "json-plain-indent": _dump(indent=2),
    "json-plain-sorted": _dump(separators=(",", ":"), sort_keys=True)}


def _orig(project: str, limit: Optional[int], cache=None) -> bytes:
    from .projects import by_name
    pr = by_name(project)
    path = fetch(pr, cache) / pr.orig
    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}[path.suffix]
    with opener(path) as f:
        return f.read() if limit is None else f.read(limit)


def _compressor(name, prog, comp, decomp, packed, src, back):
    return (Workload(f"{name} compress", (prog, *comp), outputs=(packed,)),
            Workload(f"{name} decompress", (prog, *decomp), outputs=(back,),
                     roundtrip=(back, src)))


#: The workloads of each project.
WORKLOADS: Tuple[Runtime, ...] = (
    # zlib: minigzip (linked with the static libz.a) replaces its argument
    # with the .gz (and back with -d), so each level works on its own copy.
    Runtime("zlib", {"z9": ("orig", "zlib", None), "z6": ("orig", "zlib", None),
                     "zlib.tar": ("orig", "zlib", None)}, (
        Workload("minigzip -9", ("minigzip", "-9", "z9"), outputs=("z9.gz",)),
        Workload("minigzip -6", ("minigzip", "-6", "z6"), outputs=("z6.gz",)),
        Workload("minigzip -d", ("minigzip", "-d", "z9.gz"), outputs=("z9",),
                 roundtrip=("z9", "zlib.tar")),
        Workload("example", ("example", "example.gz")),
    ), lib_dirs=(".",)),
    # lz4: the lz4 program (the library's sources compiled in), fast, -9
    # (HC) and -12, each decompressed again.
    Runtime("lz4", {"lz4.tar": ("orig", "lz4", None), "pcre2.tar": ("orig", "pcre2", None)}, (
        *_compressor("lz4 -1", "programs/lz4", ("-q", "-f", "-1", "pcre2.tar", "a.lz4"),
                     ("-q", "-f", "-d", "a.lz4", "a.out"), "a.lz4", "pcre2.tar", "a.out"),
        *_compressor("lz4 -9", "programs/lz4", ("-q", "-f", "-9", "lz4.tar", "b.lz4"),
                     ("-q", "-f", "-d", "b.lz4", "b.out"), "b.lz4", "lz4.tar", "b.out"),
        Workload("lz4 -12 compress", ("programs/lz4", "-q", "-f", "-12", "lz4.tar", "c.lz4"),
                 outputs=("c.lz4",)),
    ), lib_dirs=("lib",)),
    # brotli: the brotli program at qualities 5, 9 and 10, window 22.
    Runtime("brotli", {"brotli.tar": ("orig", "brotli", None)}, (
        *_compressor("brotli -q 5", "brotli", ("-f", "-q", "5", "-o", "a.br", "brotli.tar"),
                     ("-f", "-d", "-o", "a.out", "a.br"), "a.br", "brotli.tar", "a.out"),
        *_compressor("brotli -q 9", "brotli", ("-f", "-q", "9", "-o", "b.br", "brotli.tar"),
                     ("-f", "-d", "-o", "b.out", "b.br"), "b.br", "brotli.tar", "b.out"),
        Workload("brotli -q 10 compress", ("brotli", "-f", "-q", "10", "-o", "c.br",
                                           "brotli.tar"), outputs=("c.br",)),
    ), lib_dirs=(".",)),
    # xz: the xz program with the build's liblzma, presets 6 and 1 -e on
    # the first 3 MB of its own tarball, decompressed again (-T1: one thread).
    Runtime("xz-utils", {"x6": ("orig", "xz-utils", 3_000_000),
                         "x1": ("orig", "xz-utils", 3_000_000),
                         "xz.tar": ("orig", "xz-utils", 3_000_000)}, (
        Workload("xz -6 compress", ("src/xz/.libs/xz", "-T1", "-6", "-k", "x6"),
                 outputs=("x6.xz",)),
        Workload("xz -1e compress", ("src/xz/.libs/xz", "-T1", "-1e", "-k", "x1"),
                 outputs=("x1.xz",)),
        Workload("xz -d", ("src/xz/.libs/xz", "-T1", "-d", "-k", "-f", "x6.xz"),
                 outputs=("x6",), roundtrip=("x6", "xz.tar")),
    ), lib_dirs=("src/liblzma/.libs",)),
    # pcre2: pcre2test on its own test inputs 1 (Perl-compatible) and 4
    # (UTF), pcre2grep over its own uncompressed tarball.
    Runtime("pcre2", {"pcre2.tar": ("orig", "pcre2", None)}, (
        Workload("pcre2test testinput1", (".libs/pcre2test", "-q", "{src}/testdata/testinput1",
                                          "t1.out"), outputs=("t1.out",)),
        Workload("pcre2test testinput4", (".libs/pcre2test", "-q", "{src}/testdata/testinput4",
                                          "t4.out"), outputs=("t4.out",)),
        Workload("pcre2grep backreference", (".libs/pcre2grep", "-c", r"\b(\w+)\s+\1\b",
                                             "pcre2.tar")),
        Workload("pcre2grep -i alternation", (".libs/pcre2grep", "-c", "-i",
                                              "pcre2_[a-z]+_(8|16|32)", "pcre2.tar")),
        Workload("pcre2grep declarations", (".libs/pcre2grep", "-c",
                                            r"static\s+(const\s+)?\w+\s*\*?\s*\w+\s*\(",
                                            "pcre2.tar")),
        Workload("pcre2grep -o numbers", (".libs/pcre2grep", "-a", "-o", r"[0-9]+\.[0-9]+",
                                          "pcre2.tar")),
    ), lib_dirs=(".libs",)),
    # libyaml: its test programs on a generated document: the test-suite
    # event stream of the parser, the loader (document nodes) and the
    # parser (its emitter and dumper tests hold a few thousand events).
    Runtime("libyaml", {"doc.yaml": ("generated", "yaml")}, (
        Workload("run-parser-test-suite", ("tests/.libs/run-parser-test-suite", "doc.yaml")),
        Workload("run-loader", ("tests/.libs/run-loader", "doc.yaml")),
        Workload("run-parser", ("tests/.libs/run-parser", "doc.yaml")),
    ), lib_dirs=("src/.libs",)),
    # json-c: json_parse on a generated document, printed both ways and
    # parsed strictly (it prints its resident set size: left out).
    Runtime("json-c", {"doc.json": ("generated", "json")}, (
        Workload("json_parse", ("apps/json_parse", "doc.json"), ignore=r"maxrss: "),
        Workload("json_parse -f", ("apps/json_parse", "-f", "doc.json"), ignore=r"maxrss: "),
        Workload("json_parse -n -s", ("apps/json_parse", "-n", "-s", "doc.json"),
                 ignore=r"maxrss: "),
    ), lib_dirs=(".",)),
    # jansson: its test driver json_process loads a generated document and
    # dumps it compact, indented and with sorted keys, each checked
    # against the expected text (Python's json writes the same bytes).
    Runtime("jansson", {
        "compact/input": ("generated", "json-plain"),
        "compact/env": ("bytes", b"JSON_COMPACT=1\nHASHSEED=1\n"),
        "compact/output": ("generated", "json-plain-compact"),
        "indent/input": ("generated", "json-plain"),
        "indent/env": ("bytes", b"JSON_INDENT=2\nHASHSEED=1\n"),
        "indent/output": ("generated", "json-plain-indent"),
        "sorted/input": ("generated", "json-plain"),
        "sorted/env": ("bytes", b"JSON_SORT_KEYS=1\nJSON_COMPACT=1\nHASHSEED=1\n"),
        "sorted/output": ("generated", "json-plain-sorted")}, (
        Workload("json_process compact", ("bin/json_process", "compact")),
        Workload("json_process indent", ("bin/json_process", "indent")),
        Workload("json_process sorted", ("bin/json_process", "sorted")),
    ), lib_dirs=("lib",)),
    # expat: xmlwf checks a generated document and writes it canonical.
    Runtime("expat", {"doc.xml": ("generated", "xml"), "canon/.keep": ("bytes", b"")}, (
        Workload("xmlwf", ("xmlwf/.libs/xmlwf", "doc.xml")),
        Workload("xmlwf -d", ("xmlwf/.libs/xmlwf", "-d", "canon", "doc.xml"),
                 outputs=("canon/doc.xml",)),
    ), lib_dirs=("lib/.libs",)),
    # libpng: pngtest reads and writes its own test image; pngimage reads
    # every image of contrib/testpngs with each transform and writes it
    # back in memory. zlib is Debian's (the system library).
    Runtime("libpng1.6", {}, (
        Workload("pngtest", (".libs/pngtest", "{src}/pngtest.png", "pngout.png"),
                 outputs=("pngout.png",)),
        Workload("pngimage testpngs", (".libs/pngimage", "{src}/contrib/testpngs/*.png")),
    ), lib_dirs=(".libs",)),
)


def for_project(name: str) -> Optional[Runtime]:
    """The run-time measure of project ``name`` (None: it has none)."""
    return next((r for r in WORKLOADS if r.project == name), None)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def prepare_inputs(rt: Runtime, rundir, cache=None) -> Dict[str, str]:
    """Writes ``rt``'s inputs into the empty folder ``rundir``; their sha256."""
    rundir = Path(rundir)
    if rundir.exists():
        shutil.rmtree(rundir)
    rundir.mkdir(parents=True)
    made: Dict[tuple, bytes] = {}
    digests = {}
    for name, spec in rt.inputs.items():
        if spec not in made:
            if spec[0] == "orig":
                made[spec] = _orig(spec[1], spec[2], cache)
            elif spec[0] == "generated":
                made[spec] = GENERATORS[spec[1]]()
            elif spec[0] == "bytes":
                made[spec] = bytes(spec[1])
            else:
                raise ValueError(f"unknown input kind {spec!r}")
        (rundir / name).parent.mkdir(parents=True, exist_ok=True)
        (rundir / name).write_bytes(made[spec])
        digests[name] = _sha(made[spec])
    return digests


def run_env(rt: Runtime, build_dir) -> Dict[str, str]:
    """The environment every workload of ``rt`` runs in: a fixed small one
    (nothing of this process's settings reaches the program)."""
    libs = [str(Path(build_dir) / d) for d in rt.lib_dirs]
    return {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": "/nonexistent",
            "LD_LIBRARY_PATH": ":".join(libs)}


def _project_libraries(build_dir: Path) -> Dict[str, Path]:
    libs = {}
    for p in build_dir.rglob("*.so*"):
        if p.is_file() and not p.is_symlink() and ".so" in p.name:
            libs.setdefault(p.name, p)
    for p in build_dir.rglob("*.so*"):
        if p.is_symlink():
            libs.setdefault(p.name, p)
    return libs


def check_libraries(program, env: Mapping[str, str], build_dir) -> List[str]:
    """The shared libraries ``program`` loads (``ldd``); WorkloadError when
    a library the build made resolves to another file (the installed
    one)."""
    build_dir = Path(build_dir).resolve()
    r = subprocess.run(["ldd", str(program)], env=dict(env), capture_output=True, text=True,
                       timeout=60)
    ours = _project_libraries(build_dir)
    loaded = []
    for line in r.stdout.splitlines():
        parts = line.split("=>")
        if len(parts) != 2:
            continue
        name = parts[0].strip()
        where = parts[1].split("(")[0].strip()
        if name in ours:
            if not where or not Path(where).resolve().is_relative_to(build_dir):
                raise WorkloadError(f"{program} loads {name} from {where or 'nowhere'}, "
                                    f"not from the build ({ours[name]})")
            loaded.append(str(Path(where).resolve().relative_to(build_dir)))
    return loaded


def measure(rt: Runtime, build_dir, source_dir, rundir, *, cache=None,
            timeout: float = RUN_TIMEOUT) -> dict:
    """Runs every workload of ``rt`` against the build in ``build_dir``
    under callgrind in ``rundir`` (emptied, inputs written afresh).
    Returns ``{"inputs": {file: sha256}, "workloads": {name: {"ir", "stdout",
    "outputs": {file: sha256}}}, "libraries": {program: [libraries of the
    build it loads]}}``. WorkloadError when a workload fails."""
    build_dir, source_dir, rundir = Path(build_dir), Path(source_dir), Path(rundir)
    inputs = prepare_inputs(rt, rundir, cache)
    env = run_env(rt, build_dir)
    out: dict = {"inputs": inputs, "workloads": {}, "libraries": {}}
    for w in rt.workloads:
        prog = build_dir / w.argv[0]
        if not prog.is_file():
            raise WorkloadError(f"{rt.project}: {w.name}: {prog} was not built")
        if w.argv[0] not in out["libraries"]:
            out["libraries"][w.argv[0]] = check_libraries(prog, env, build_dir)
        argv = [str(prog)]
        for a in w.argv[1:]:
            pattern = a.startswith(("{src}/", "{build}/")) and "*" in a
            a = a.replace("{src}", str(source_dir)).replace("{build}", str(build_dir))
            if pattern:  # a pattern of files: each one, sorted
                found = sorted(glob.glob(a))
                if not found:
                    raise WorkloadError(f"{rt.project}: {w.name}: no file matches {a}")
                argv += found
            else:
                argv.append(a)
        try:
            res = callgrind(argv, timeout=timeout, env=env, cwd=rundir)
        except CompileError as e:
            raise WorkloadError(f"{rt.project}: {w.name}: {e}") from None
        outputs = {}
        for name in w.outputs:
            path = rundir / name
            if not path.is_file():
                raise WorkloadError(f"{rt.project}: {w.name} wrote no {name}")
            outputs[name] = _sha(path.read_bytes())
        if w.roundtrip:
            a, b = (rundir / f for f in w.roundtrip)
            if a.read_bytes() != b.read_bytes():
                raise WorkloadError(f"{rt.project}: {w.name}: {w.roundtrip[0]} is not "
                                    f"{w.roundtrip[1]} (the round trip changed the data)")
        stdout = res.stdout
        if w.ignore:
            stdout = "".join(line for line in stdout.splitlines(keepends=True)
                             if not re.match(w.ignore, line))
        out["workloads"][w.name] = {"ir": res.ir, "stdout": _sha(stdout.encode()),
                                    "stdout_bytes": len(stdout), "outputs": outputs}
    return out


def measure_build(project, config, comp, workdir, *, cache=None,
                  timeout: float = RUN_TIMEOUT) -> dict:
    """Builds and tests ``project`` with ``config``
    (:func:`mlbridge.builds.build_project`) in ``<workdir>/tree`` -- the
    same folder for every configuration -- and measures its workloads in
    ``<workdir>/run``. The build log is kept as ``<workdir>/<config>.build.log``;
    the tree is removed. The record: the build's ``ok``, ``failed_step``,
    tests, ``text_total``, ``flags``, ``settings``, ``plugins``;
    ``measured`` and, when measured, :func:`measure`'s fields; ``error``."""
    from .build import build_project
    rt = for_project(project.name)
    if rt is None:
        raise KeyError(f"{project.name} has no run-time workloads")
    workdir = Path(workdir).resolve()
    tree = workdir / "tree"
    b = build_project(project, config, comp, tree, cache=cache, keep=True)
    try:
        if (tree / "build.log").is_file():
            shutil.copy2(tree / "build.log", workdir / f"{config.name}.build.log")
        rec = {k: b[k] for k in ("project", "version", "config", "llvm", "build_system", "ok",
                                 "failed_step", "tests_passed", "tests_total", "tests_failed",
                                 "text_total", "flags", "settings", "plugins")}
        rec.update(measured=False, error=b["error"], log=str(workdir / f"{config.name}.build.log"))
        if b["ok"]:
            src = tree / "src" / project.top
            bdir = src / "build" if project.build_system == "cmake" else src
            try:
                rec.update(measure(rt, bdir, src, workdir / "run", cache=cache,
                                   timeout=timeout))
                rec["measured"] = True
            except WorkloadError as e:
                rec["error"] = str(e)
        return rec
    finally:
        shutil.rmtree(tree / "src", ignore_errors=True)
        shutil.rmtree(tree / "install", ignore_errors=True)


# --- results ---------------------------------------------------------------

def key(rec: dict) -> Tuple[str, str, int]:
    return rec["project"], rec["config"], int(rec["llvm"])


def _same(a: dict, b: dict) -> bool:
    return a["stdout"] == b["stdout"] and a["outputs"] == b["outputs"]


def compare(records: Sequence[dict]) -> List[dict]:
    """Each measured record against its base configuration's (same project
    and LLVM): ``ratio`` (the project's total Ir over the base's, over the
    workloads both ran), ``ratios`` per workload, ``differ`` (workloads
    whose output is not byte for byte the base's), ``worst`` (the largest
    workload ratio). A record that is its own base, or whose base is
    missing or failed, has ``ratio`` None."""
    from .configs import by_name as config_by_name
    index = {key(r): r for r in records}
    rows = []
    for rec in records:
        row = dict(rec, ratio=None, ratios={}, differ=[], worst=None, base=None)
        try:
            base_name = config_by_name(rec["config"]).base
        except KeyError:
            base_name = None
        row["base"] = base_name
        base = index.get((rec["project"], base_name, int(rec["llvm"])))
        if (base_name and base_name != rec["config"] and base is not None
                and rec.get("measured") and base.get("measured")):
            mine, theirs = rec["workloads"], base["workloads"]
            names = [n for n in mine if n in theirs]
            row["ratios"] = {n: mine[n]["ir"] / theirs[n]["ir"] for n in names}
            row["differ"] = [n for n in names if not _same(mine[n], theirs[n])]
            if names:
                row["ratio"] = (sum(mine[n]["ir"] for n in names)
                                / sum(theirs[n]["ir"] for n in names))
                row["worst"] = max(row["ratios"].values())
        rows.append(row)
    return rows


def _geo(xs: Sequence[float]) -> Optional[float]:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _f(x, spec="{:.4f}") -> str:
    return "–" if x is None else spec.format(x)


def table(records: Sequence[dict]) -> str:
    """Markdown: one row per project and configuration measured against its
    base (Ir, × base, the worst workload, outputs); per workload; and per
    configuration the geometric mean over the projects."""
    from .configs import CONFIGS
    order = {c.name: i for i, c in enumerate(CONFIGS)}
    rows = sorted(compare(records), key=lambda r: (r["llvm"], order.get(r["config"], 99),
                                                   r["project"]))
    out = ["| LLVM | configuration | base | project | tests | Ir | base Ir | × base "
           "| worst workload | outputs = base |",
           "|---|---|---|---|---:|---:|---:|---:|---|---|"]
    detail = ["| LLVM | configuration | project | workload | Ir | × base | output = base |",
              "|---|---|---|---|---:|---:|---|"]
    index = {key(r): r for r in records}
    for r in rows:
        if r["base"] == r["config"]:
            continue
        base = index.get((r["project"], r["base"], r["llvm"]))
        tests = f"{r['tests_passed']}/{r['tests_total']}" if r.get("ok") else \
            f"FAILED ({r.get('failed_step')})"
        if not r.get("measured"):
            out.append(f"| {r['llvm']} | {r['config']} | {r['base']} | {r['project']} | {tests} "
                       f"| not measured: {r.get('error', '')[:80]} | | | | |")
            continue
        ir = sum(w["ir"] for w in r["workloads"].values())
        bir = sum(w["ir"] for w in base["workloads"].values()) if base and base.get(
            "measured") else None
        worst = (max(r["ratios"], key=r["ratios"].get) if r["ratios"] else None)
        worst_text = "–" if worst is None else f"{worst} {r['ratios'][worst]:.4f}"
        same = "–" if r["ratio"] is None else (
            "same" if not r["differ"] else "**DIFFER: " + ", ".join(r["differ"]) + "**")
        out.append(f"| {r['llvm']} | {r['config']} | {r['base']} | {r['project']} | {tests} | "
                   f"{ir:,} | {_f(bir, '{:,}')} | {_f(r['ratio'])} | "
                   f"{worst_text} | {same} |")
        for name, w in r["workloads"].items():
            ratio = r["ratios"].get(name)
            ok = "–" if ratio is None else ("same" if name not in r["differ"] else "**differs**")
            detail.append(f"| {r['llvm']} | {r['config']} | {r['project']} | {name} | "
                          f"{w['ir']:,} | {_f(ratio)} | {ok} |")
    totals = ["| LLVM | configuration | base | projects | × base (geo. mean of projects) "
              "| × base (geo. mean of workloads) | best project | worst project "
              "| workloads worse than 1.02 × | outputs differ |",
              "|---|---|---|---:|---:|---:|---|---|---:|---:|"]
    for llvm in sorted({r["llvm"] for r in rows}):
        for name in sorted({r["config"] for r in rows if r["llvm"] == llvm},
                           key=lambda n: order.get(n, 99)):
            mine = [r for r in rows if r["llvm"] == llvm and r["config"] == name
                    and r["ratio"] is not None]
            if not mine:
                continue
            best = min(mine, key=lambda r: r["ratio"])
            worst = max(mine, key=lambda r: r["ratio"])
            worse = sum(1 for r in mine for x in r["ratios"].values() if x > 1.02)
            nworkloads = sum(len(r["ratios"]) for r in mine)
            totals.append(f"| {llvm} | {name} | {mine[0]['base']} | {len(mine)} | "
                          f"{_f(_geo([r['ratio'] for r in mine]))} | "
                          f"{_f(_geo([x for r in mine for x in r['ratios'].values()]))} | "
                          f"{best['project']} {best['ratio']:.4f} | "
                          f"{worst['project']} {worst['ratio']:.4f} | {worse}/{nworkloads} | "
                          f"{sum(len(r['differ']) for r in mine)} |")
    return "\n".join(["### Run time: all projects\n", *totals, "", "### Per project\n", *out,
                      "", "### Per workload\n", *detail]) + "\n"
