"""mlbridge.builds: real projects built with the plugins through their own
build systems, tested with their own test suites, measured.

The projects (:mod:`.projects`, :data:`PROJECTS`) are Debian bookworm source
packages with upstream test suites -- autotools, CMake and plain-Makefile
builds -- each pinned by the sha256 of every file ``apt-get source
--download-only`` fetches. The configurations (:mod:`.configs`,
:data:`CONFIGS`) are plain ``-O2``/``-O3``/``-Oz``, the best size flags, the
size plugins, the register allocator, loop distribution, and the size
plugins under ThinLTO with lld (before linking, in the link, both).

Public functions:

* :func:`fetch` ``(project, cache=None) -> Path`` -- the verified download
  folder of a project (apt-get source; :class:`FetchError` /
  :class:`SourceMismatch`); :func:`cache_dir` is where downloads go
  (``$MLBRIDGE_BUILDS_CACHE``, else ``~/.cache/mlbridge/debian-sources``);
  :func:`unpack` ``(project, dest) -> Path`` a fresh source tree from the
  verified tarball.
* :func:`compilers` ``(llvm, build_dir=None) -> Compilers`` -- clang of LLVM
  ``llvm`` and its built plugins; :func:`environment` ``(config, compilers,
  extra_ldflags) -> dict`` the ``CC``/``CFLAGS``/``LDFLAGS``/``MLBRIDGE_*``
  a build system gets for a configuration.
* :func:`build_project` ``(project, config, compilers, workdir, cache=None,
  keep=False) -> dict`` -- configure, build (``-j2``), run the project's
  tests, measure: ``ok``, ``tests_passed``/``tests_total``, ``texts`` (the
  ``.text`` of each linked library and executable), ``text_total``, ``cpu``
  (user + sys of configure and build, all children), ``max_rss_kib``,
  ``headers`` (sha256 of the generated config headers).
* :func:`compare` ``(records)`` -- each record against the plain build of
  its base configuration (``cpu_ratio``, ``rss_ratio``, ``text_ratio``,
  ``text_vs_best``, ``headers_same``); :func:`table` the markdown tables;
  :func:`load_results` / :func:`save_results` the results JSON.
* :func:`by_name` / :func:`config_by_name` look a project / configuration up.
* :mod:`.runtime`: the run time of each project's own programs (fixed
  inputs, callgrind Ir of the whole process, outputs compared byte for byte
  with the base configuration's): :func:`runtime.measure_build`,
  :func:`runtime.compare`, :func:`runtime.table`.

Command line: ``python -m mlbridge.builds list|fetch|run|runtime|table``
(:mod:`.__main__`); the whole matrix is the opt-in CMake target
``real-builds-long`` (tests/real-builds/README.md).
"""

from .build import build_project
from .configs import CONFIGS, BuildConfig, Compilers, compilers, environment
from .configs import by_name as config_by_name
from .fetch import FetchError, SourceMismatch, cache_dir, fetch, unpack
from .projects import PROJECTS, Project, by_name
from .report import compare, table
from .report import load as load_results
from .report import save as save_results

__all__ = ["PROJECTS", "Project", "by_name", "CONFIGS", "BuildConfig", "config_by_name",
           "Compilers", "compilers", "environment", "fetch", "unpack", "cache_dir",
           "FetchError", "SourceMismatch", "build_project", "compare", "table",
           "load_results", "save_results"]
