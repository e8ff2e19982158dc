"""Measure code-size configurations the way a user would build: every
translation unit compiled from source with ``clang-19 -Oz -c <its flags>``
plus what the configuration adds (stock flags, ``-fpass-plugin=`` of the
project's plugins with their built-in compiled models, or an ONNX model),
and compared by the objects' ``.text`` bytes and the compiler's CPU time
(user + system of the child, :func:`mlbridge.toolchain.compile`).

A plugin configuration is measured only as a user can reproduce it from
docs/llvm-plugins.md: ``-fpass-plugin=`` and, for phase ordering,
``MLBRIDGE_PO_ENABLE=1`` -- the built-in models bring their own settings
(the phase-ordering model its start flags and step budget). A configuration
that adds plugin settings (an ONNX model, another step budget or start), or
a caller whose environment has plugin settings, raises
:class:`NotReproducible` unless the configuration is named an experiment
(:meth:`Config.as_experiment`; its name, and so the table, says so).

Every configuration of a unit is measured next to a fresh plain ``-Oz``
compile of the same unit (back to back, so both see the same machine load);
a configuration's compile-CPU ratio divides its CPU by that of the plain
compiles measured beside it. Measurements are cached on disk (``cache``),
keyed by the compiler, the unit's content and flags, the configuration and
the plugin files (a retrained model compiled into a plugin is a new key).

:func:`measure_lto` builds each library with full LTO instead: every unit
``clang-19 -Oz -flto -c`` (bitcode), ``llvm-link-19`` of a library's units
into one module, and that module compiled by ``clang-19 -Oz -c`` (the
configuration's flags and plugins in both compiles).

    python -m mlbridge.train evaluate --split heldout --out heldout.json
    python -m mlbridge.train size-report        # docs/results.md's size tables
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..corpus.jobs import pool as jobs_pool
from ..errors import MLBridgeError
from ..toolchain import CompileError, compile, run_tool, toolchain
from .cache import BestEffortWrites
from .results import write_atomically

__all__ = ["Config", "PLAIN", "INLINER", "PHASE_ORDER", "NotReproducible",
           "check_reproducible", "measure", "measure_lto", "summarize", "markdown_table", "default_cache_dir"]


class NotReproducible(MLBridgeError, ValueError):
    """A configuration a user could not reproduce from the documented
    command, measured without being named an experiment."""


@dataclass(frozen=True)
class Config:
    """One way to compile: ``clang -Oz`` + ``flags`` + the plugins named in
    ``plugins`` ("inliner", "phase-order"), loaded the documented way with
    their built-in models. Anything else is an experiment (``experiment``
    must be set, :meth:`as_experiment`): ``inline_model`` /
    ``phase_order_model`` (ONNX files), ``phase_order_steps`` and
    ``phase_order_start`` (the step budget and the stock size flags the
    episode starts from, instead of the model's own)."""

    name: str
    flags: Tuple[str, ...] = ()
    plugins: Tuple[str, ...] = ()
    inline_model: Optional[str] = None
    phase_order_model: Optional[str] = None
    phase_order_steps: Optional[int] = None
    phase_order_start: Optional[Tuple[str, ...]] = None
    experiment: bool = False

    def with_flags(self, name: str, flags: Sequence[str]) -> "Config":
        return dataclasses.replace(self, name=name, flags=self.flags + tuple(flags))

    def as_experiment(self) -> "Config":
        """This configuration, allowed settings the documented command does
        not have, named "<name> (experiment)"."""
        return self if self.experiment else dataclasses.replace(
            self, name=f"{self.name} (experiment)", experiment=True)

    def settings(self) -> Dict[str, str]:
        """The plugin settings (environment) this configuration gives."""
        env = {}
        if "inliner" in self.plugins and self.inline_model:
            env.update(MLBRIDGE_INLINE_RUNNER="onnx",
                       MLBRIDGE_INLINE_MODEL=os.fspath(self.inline_model))
        if "phase-order" in self.plugins:
            env.update(DOCUMENTED_SETTINGS["phase-order"])
            if self.phase_order_model:
                env.update(MLBRIDGE_PO_RUNNER="onnx",
                           MLBRIDGE_PO_MODEL=os.fspath(self.phase_order_model))
            if self.phase_order_steps is not None:
                env["MLBRIDGE_PO_MAX_STEPS"] = str(self.phase_order_steps)
            if self.phase_order_start is not None:
                env["MLBRIDGE_PO_START"] = ",".join(self.phase_order_start) or "none"
        return env

    def undocumented(self) -> List[str]:
        """What this configuration gives or inherits beyond the documented
        command (docs/llvm-plugins.md): its own settings, then the plugin
        settings of this process's environment, which reach the compiler."""
        documented = {}
        for p in self.plugins:
            documented.update(DOCUMENTED_SETTINGS.get(p, {}))
        out = [f"{k}={v}" for k, v in sorted(self.settings().items())
               if documented.get(k) != v]
        if self.plugins:
            out += [f"{k}={v} (environment)" for k, v in _environment_settings()]
        return out

    def args(self, plugins) -> List[str]:
        """What the configuration adds to ``clang -Oz`` (``plugins``: a
        :class:`mlbridge.llvm.plugins.PluginInfo`)."""
        out = []
        if "inliner" in self.plugins:
            out.append(f"-fpass-plugin={plugins.inline_advisor}")
        if "phase-order" in self.plugins:
            out.append(f"-fpass-plugin={plugins.phase_order}")
        return out + list(self.flags)

    def env(self, plugins) -> Optional[Dict[str, str]]:
        """The compiler's environment: how the plugins are configured."""
        if not self.plugins:
            return None
        from ..llvm.plugins import tool_env
        return tool_env(plugins, {**os.environ, **self.settings()})

    def key_parts(self, plugins) -> list:
        """What a cached measurement depends on besides the unit."""
        parts = [list(self.flags), sorted(self.plugins), sorted(self.settings().items())]
        if "inliner" in self.plugins:
            parts += [_file_hash(plugins.inline_advisor), _file_hash(self.inline_model)]
        if "phase-order" in self.plugins:
            parts += [_file_hash(plugins.phase_order), _file_hash(self.phase_order_model)]
        # Plugin settings the user's environment adds (env() passes it on),
        # in an experiment's key.
        if self.plugins and _environment_settings():
            parts.append(_environment_settings())
        return parts


#: What docs/llvm-plugins.md's command sets for each plugin (besides
#: ``-fpass-plugin=``): the built-in models bring the rest.
DOCUMENTED_SETTINGS = {"inliner": {}, "phase-order": {"MLBRIDGE_PO_ENABLE": "1"}}
#: Environment variables that configure the plugins.
_PLUGIN_ENV_PREFIXES = ("MLBRIDGE_INLINE_", "MLBRIDGE_PO_")


def _environment_settings() -> List[Tuple[str, str]]:
    """The plugin settings of this process's environment (logs and remarks
    change no object)."""
    return sorted((k, v) for k, v in os.environ.items()
                  if k.startswith(_PLUGIN_ENV_PREFIXES) and not k.endswith(("_LOG", "_VERBOSE")))


def check_reproducible(configs: Sequence[Config]):
    """Raises :class:`NotReproducible` for the first configuration that is
    not an experiment and gives the plugins more than the documented
    command."""
    for c in configs:
        extra = [] if c.experiment else c.undocumented()
        if extra:
            raise NotReproducible(
                f"configuration {c.name!r} is not the documented command "
                f"(docs/llvm-plugins.md): it adds {', '.join(extra)}; measure it as an "
                f"experiment (Config.as_experiment(), `--experiment`) or unset them")

#: Plain ``clang -Oz``: the reference of every ratio.
PLAIN = Config("-Oz")
#: The deployed inliner (``MLBridgeInlineAdvisor.so``, its built-in model).
INLINER = Config("inliner", plugins=("inliner",))
#: The deployed phase-ordering policy (``MLBridgePhaseOrder.so``).
PHASE_ORDER = Config("phase ordering", plugins=("phase-order",))


def _file_hash(path) -> Optional[str]:
    if path is None:
        return None
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def default_cache_dir():
    """``sizes/`` in the corpus build folder (``$MLBRIDGE_CORPUS_BUILD``)."""
    from ..corpus import default_build_dir
    return default_build_dir() / "sizes"


class _Cache:
    """One JSON file per measurement under ``path`` (None: no cache);
    writes are best-effort (:class:`~mlbridge.train.cache.BestEffortWrites`)."""

    def __init__(self, path):
        self.path = None if path is None else os.fspath(path)
        self.writes = BestEffortWrites("measurement cache", self.path)

    def get(self, key):
        if not self.path:
            return None
        try:
            with open(os.path.join(self.path, key + ".json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def put(self, key, value):
        if self.path:
            def write(tmp):
                with open(tmp, "w") as f:
                    json.dump(value, f)
            path = os.path.join(self.path, key + ".json")
            self.writes(path, lambda: write_atomically(path, write))


def _unit_key(module) -> list:
    with open(module.source, "rb") as f:
        source = hashlib.sha256(f.read()).hexdigest()
    return [module.name, getattr(module, "content_key", ""), source, list(module.flags)]


def _key(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def _compile_unit(module, config, plugins, clang, tmp, timeout, lto=False):
    out = os.path.join(tmp, module.name.replace("/", "_") + (".bc" if lto else ".o"))
    cmd = [clang, "-Oz", *(["-flto"] if lto else []), *config.args(plugins), "-c",
           *module.flags, os.fspath(module.source), "-o", out]
    try:
        return compile(cmd, timeout=timeout, env=config.env(plugins), measure_text=not lto)
    finally:
        if not lto:
            _unlink(out)


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _measure_unit(module, configs, plugins, clang, cache, timeout):
    """``{config name: {"text", "cpu", "oz_cpu"} or {"error"}}`` for one unit;
    what is not cached is compiled now, after one fresh plain -Oz compile."""
    unit = _unit_key(module)
    keys = {c.name: _key(toolchain(clang).tag, unit, c.key_parts(plugins)) for c in configs}
    results = {c.name: cache.get(keys[c.name]) for c in configs}
    todo = [c for c in configs if results[c.name] is None]
    if not todo:
        return results
    with tempfile.TemporaryDirectory(prefix="mlbridge-eval-") as tmp:
        try:
            oz = _compile_unit(module, PLAIN, plugins, clang, tmp, timeout)
        except CompileError as e:
            return {c.name: results[c.name] or {"error": str(e)} for c in configs}
        for c in todo:
            try:
                res = oz if c == PLAIN else _compile_unit(module, c, plugins, clang, tmp,
                                                          timeout)
            except CompileError as e:
                results[c.name] = {"error": str(e)}
                continue
            results[c.name] = {"text": res.text, "cpu": res.cpu_seconds,
                               "oz_cpu": oz.cpu_seconds}
            if "warning" in res.stderr and "mlbridge-" in res.stderr:
                results[c.name]["plugin_warning"] = res.stderr.strip()[-500:]
            cache.put(keys[c.name], results[c.name])
    return results


def _plugins_for(configs, plugins):
    if plugins is None and any(c.plugins for c in configs):
        from ..llvm.plugins import find_plugins
        plugins = find_plugins()
    return plugins


def measure(modules, configs: Sequence[Config], *, plugins=None, jobs: int = 2,
            cache=None, timeout: float = 900.0, progress=None) -> List[dict]:
    """One row per module: ``{"module", "library", "results": {config name:
    {"text", "cpu", "oz_cpu"} or {"error"}}}``. ``modules``: corpus modules
    (``name``, ``library``, ``source``, ``flags``); ``plugins``: a
    PluginInfo (default: :func:`mlbridge.llvm.plugins.find_plugins`); raises
    :class:`NotReproducible` (before compiling anything) for a configuration
    that is not the documented command and not an experiment;
    ``cache``: a folder (e.g. :func:`default_cache_dir`) or None; ``jobs``
    units compile at a time."""
    configs = list(configs)
    check_reproducible(configs)
    plugins = _plugins_for(configs, plugins)
    clang = toolchain().clang
    store = _Cache(cache)
    with jobs_pool(ThreadPoolExecutor, jobs) as pool:
        futs = [pool.submit(_measure_unit, m, configs, plugins, clang, store, timeout)
                for m in modules]
        rows = []
        for m, f in zip(modules, futs):
            rows.append({"module": m.name, "library": m.library, "results": f.result()})
            if progress is not None:
                progress()
    return rows


def _measure_library_lto(library, modules, config, plugins, clang, cache, timeout):
    key = _key("lto", toolchain(clang).tag, [_unit_key(m) for m in modules],
               config.key_parts(plugins))
    cached = cache.get(key)
    if cached is not None:
        return cached
    with tempfile.TemporaryDirectory(prefix="mlbridge-lto-") as tmp:
        try:
            cpu = 0.0
            bitcode = []
            for m in modules:
                res = _compile_unit(m, config, plugins, clang, tmp, timeout, lto=True)
                cpu += res.cpu_seconds
                bitcode.append(res.output)
            linked = os.path.join(tmp, f"{library}.lto.bc")
            run_tool([toolchain(clang).tool("llvm-link"), *bitcode, "-o", linked],
                     timeout=timeout)
            obj = os.path.join(tmp, f"{library}.lto.o")
            res = compile([clang, "-Oz", *config.args(plugins), "-c", linked, "-o", obj],
                          timeout=timeout, env=config.env(plugins))
        except CompileError as e:
            return {"error": str(e)}
    out = {"text": res.text, "cpu": cpu + res.cpu_seconds, "units": len(modules)}
    cache.put(key, out)
    return out


def measure_lto(modules, configs: Sequence[Config], *, plugins=None, jobs: int = 2,
                cache=None, timeout: float = 3600.0) -> Dict[str, dict]:
    """``{library: {config name: {"text", "cpu", "units"} or {"error"}}}``:
    each library of ``modules`` built with full LTO into one object (see the
    module docstring); the object's ``.text``, the CPU of all its compiles."""
    configs = list(configs)
    check_reproducible(configs)
    plugins = _plugins_for(configs, plugins)
    clang = toolchain().clang
    store = _Cache(cache)
    libs: Dict[str, list] = {}
    for m in modules:
        libs.setdefault(m.library, []).append(m)
    tasks = [(lib, c) for lib in sorted(libs) for c in configs]
    with jobs_pool(ThreadPoolExecutor, jobs) as pool:
        futs = [pool.submit(_measure_library_lto, lib, libs[lib], c, plugins, clang, store,
                            timeout) for lib, c in tasks]
        out: Dict[str, dict] = {}
        for (lib, c), f in zip(tasks, futs):
            out.setdefault(lib, {})[c.name] = f.result()
    return out


@dataclass
class Totals:
    units: int = 0
    text: Dict[str, int] = field(default_factory=dict)
    cpu: Dict[str, float] = field(default_factory=dict)
    oz_cpu: Dict[str, float] = field(default_factory=dict)

    def ratio(self, name, reference=PLAIN.name):
        return self.text[name] / self.text[reference] if self.text.get(reference) else None

    def cpu_ratio(self, name):
        return self.cpu[name] / self.oz_cpu[name] if self.oz_cpu.get(name) else None

    def as_dict(self):
        return {"units": self.units, "text": self.text,
                "cpu_ratio": {n: self.cpu_ratio(n) for n in self.text}}


def summarize(rows, names: Sequence[str]) -> dict:
    """Per library and in total, over the units where every configuration of
    ``names`` compiled: units, ``.text`` per configuration, compile-CPU ratio
    vs the plain -Oz compiles beside it. ``errors``: the units left out."""
    libs: Dict[str, Totals] = {}
    total = Totals()
    errors = []
    for r in rows:
        res = r["results"]
        bad = {n: res[n]["error"] for n in names if "error" in res[n]}
        if bad:
            errors.append({"module": r["module"], "errors": bad})
            continue
        for t in (libs.setdefault(r["library"], Totals()), total):
            t.units += 1
            for n in names:
                t.text[n] = t.text.get(n, 0) + res[n]["text"]
                t.cpu[n] = t.cpu.get(n, 0.0) + res[n]["cpu"]
                t.oz_cpu[n] = t.oz_cpu.get(n, 0.0) + res[n]["oz_cpu"]
    return {"names": list(names), "libraries": dict(sorted(libs.items())), "total": total,
            "errors": errors}


def _pct(x):
    return f"{100.0 * (x - 1.0):+.2f} %".replace("-", "−")


def markdown_table(summary, names: Sequence[str] = None,
                   deltas: Sequence[Tuple[str, str]] = None, cpu: Sequence[str] = (),
                   clang=None) -> str:
    """``.text`` per library of each configuration in ``names`` (default:
    all), the ratios ``deltas`` (pairs (configuration, reference); default:
    each vs plain -Oz) as percentages, then the compile-CPU ratio vs plain
    -Oz of each configuration in ``cpu``. Plain -Oz is titled with the
    compiler (default: the toolchain's)."""
    names = list(names or summary["names"])
    if deltas is None:
        deltas = [(n, PLAIN.name) for n in names if n != PLAIN.name]
    plain = f"`clang-{toolchain(clang).major} -Oz`"

    def title(n):
        return plain if n == PLAIN.name else n
    head = ["library", "units"] + [title(n) for n in names]
    head += [f"{title(n)} / {title(r)}" for n, r in deltas]
    head += [f"{title(n)} CPU" for n in cpu]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]

    def line(label, t, bold=False):
        cells = [label, str(t.units)] + [f"{t.text[n]:,}" for n in names]
        cells += [(f"**{_pct(t.ratio(n, r))}**" if bold else _pct(t.ratio(n, r)))
                  for n, r in deltas]
        cells += [f"{t.cpu_ratio(n):.3f}×" if t.cpu_ratio(n) else "–" for n in cpu]
        return "| " + " | ".join(cells) + " |"
    for lib, t in summary["libraries"].items():
        lines.append(line(lib, t))
    lines.append(line("**total**", summary["total"], bold=True))
    return "\n".join(lines)


def summarize_lto(lto: Dict[str, dict], names: Sequence[str]) -> dict:
    """:func:`summarize`'s shape for :func:`measure_lto`'s result (no CPU
    ratio: there is no back-to-back plain compile per unit)."""
    rows = []
    for lib, res in lto.items():
        results = {n: (dict(res[n], oz_cpu=res[n]["cpu"]) if "error" not in res[n]
                       else res[n]) for n in names}
        rows.append({"module": lib, "library": lib, "results": results})
    s = summarize(rows, names)
    for lib, t in s["libraries"].items():
        t.units = lto[lib][names[0]].get("units", 0)
    s["total"].units = sum(t.units for t in s["libraries"].values())
    return s


def as_json(summary) -> dict:
    return {"names": summary["names"], "errors": summary["errors"],
            "total": summary["total"].as_dict(),
            "libraries": {k: t.as_dict() for k, t in summary["libraries"].items()}}
