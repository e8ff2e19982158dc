"""Debian source packages through ``apt-get source --download-only``,
checked by sha256 before use.

The files land in a cache folder (:func:`cache_dir`: ``$MLBRIDGE_BUILDS_CACHE``,
else ``$XDG_CACHE_HOME/mlbridge/debian-sources``, else
``~/.cache/mlbridge/debian-sources``). A cached file whose hash matches the
project's pin is used as is; any other is removed and fetched again; a
fresh download that does not match raises :class:`FetchError` and is
removed. apt needs a ``deb-src`` entry (``scripts/install-deps.sh`` adds
one); without it the error says so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict

from ..corpus.fetch import FetchError, SourceMismatch, sha256_of
from .projects import Project

__all__ = ["cache_dir", "fetch", "unpack", "FetchError", "SourceMismatch"]

APT_TIMEOUT = 600.0

_NO_DEB_SRC = ("apt has no deb-src entry for Debian's source archive: scripts/install-deps.sh "
               "adds one (/etc/apt/sources.list.d/mlbridge-deb-src.sources: Types: deb-src, the "
               "URIs and Suites of the deb entry, Components: main) and runs apt-get update")


def cache_dir() -> Path:
    env = os.environ.get("MLBRIDGE_BUILDS_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mlbridge" / "debian-sources"


def _mismatches(project: Project, folder: Path) -> Dict[str, str]:
    """The pinned files of ``project`` in ``folder`` that are missing or
    differ -> why."""
    bad = {}
    for name, want in project.files.items():
        path = folder / name
        if not path.is_file():
            bad[name] = "missing"
        elif sha256_of(path) != want:
            bad[name] = "changed"
    return bad


def fetch(project: Project, cache=None) -> Path:
    """The folder holding every pinned file of ``project``, each verified.
    Raises FetchError when apt cannot fetch them or a download differs from
    its pin."""
    folder = Path(cache or cache_dir()) / project.name
    folder.mkdir(parents=True, exist_ok=True)
    bad = _mismatches(project, folder)
    if not bad:
        return folder
    for name in bad:
        (folder / name).unlink(missing_ok=True)
    if shutil.which("apt-get") is None:
        raise FetchError(f"{project.name}: apt-get not found (Debian's source archive is "
                         f"fetched with apt-get source)")
    # By name, not NAME=VERSION: apt resolves a version through the binary
    # package of that name, whose candidate may come from another suite
    # (brotli's from bookworm-security); the pins decide what is accepted.
    before = set(os.listdir(folder))
    cmd = ["apt-get", "source", "--download-only", "-qq", project.name]
    try:
        r = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=APT_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise FetchError(f"{' '.join(cmd)}: no answer in {APT_TIMEOUT:.0f} s") from None
    if r.returncode != 0:
        err = r.stderr.strip()
        if "deb-src" in err or "sources.list" in err:
            raise FetchError(f"{project.name}: {_NO_DEB_SRC} (apt-get: {err.splitlines()[-1]})")
        raise FetchError(f"{' '.join(cmd)} failed ({r.returncode}): {err[-2000:]}")
    bad = _mismatches(project, folder)
    if bad:
        for name, why in bad.items():
            if why == "changed":
                (folder / name).unlink(missing_ok=True)
        got = sorted(set(os.listdir(folder)) - before - set(project.files))
        raise SourceMismatch(f"{project.name} {project.version} from apt-get source", folder,
                             [f"{why}: {name}" for name, why in sorted(bad.items())]
                             + [f"not pinned: {name}" for name in got])
    return folder


def unpack(project: Project, dest, cache=None) -> Path:
    """The verified upstream tarball of ``project`` unpacked into the empty
    folder ``dest``; returns the folder that is built (``project.top``).
    Every call verifies the tarball again, so what is built is what was
    pinned."""
    folder = fetch(project, cache)
    dest = Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    # GNU tar refuses members that leave dest (absolute names, "..").
    r = subprocess.run(["tar", "-xf", str(folder / project.orig), "-C", str(dest)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise FetchError(f"cannot unpack {project.orig}: {r.stderr.strip()}")
    top = dest / project.top
    if not top.is_dir():
        raise FetchError(f"{project.orig} has no folder {project.top}")
    return top
