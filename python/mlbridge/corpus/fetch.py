"""Downloads of pinned crates and csmith programs, checked by sha256.

A crate is fetched from the registry's static download address (or a mirror
folder or URL given by ``MLBRIDGE_CORPUS_MIRROR``), checked against the sha256
the manifest pins, and unpacked once. Nothing is used before its hash matches.

What the builds read is the unpacked tree, so that is verified too: when a
checked archive is unpacked, the sha256 of every file is recorded next to
it (``.mlbridge-unpacked.json``), and every later fetch hashes the tree
again. A changed, missing or added file is named; :func:`fetch_crate`
unpacks the archive again (``repair=True``) or raises
:class:`SourceMismatch`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from ..errors import MLBridgeError

_log = logging.getLogger("mlbridge.corpus")

REGISTRY_DOWNLOADS = "https://static.crates.io/crates"
DOWNLOAD_TIMEOUT = 120.0


#: The record of an unpacked tree, in its top folder: the archive's sha256
#: and the sha256 of every file unpacked from it.
UNPACKED_RECORD = ".mlbridge-unpacked.json"
#: Differences named in a message before "and N more".
_NAMED = 10


class FetchError(MLBridgeError):
    """A download failed, or its content is not what the manifest pins."""


class SourceMismatch(FetchError):
    """Files in use differ from what was verified: ``problems`` lists them
    ("changed: path", "missing: path", "added: path")."""

    def __init__(self, what: str, where, problems):
        self.problems = list(problems)
        named = "; ".join(self.problems[:_NAMED])
        more = len(self.problems) - _NAMED
        super().__init__(f"{what}: {named}{f'; and {more} more' if more > 0 else ''} "
                         f"(in {where})")


def sha256_of(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def handle_mismatch(mismatch: SourceMismatch, repair: bool, remedy: str) -> None:
    """Raise ``mismatch`` (``repair=False``), or log it with the ``remedy``
    the caller applies next."""
    if not repair:
        raise mismatch
    _log.warning("%s; %s", mismatch, remedy)


def crate_url(crate: str, version: str, mirror=None) -> str:
    base = mirror or os.environ.get("MLBRIDGE_CORPUS_MIRROR") or REGISTRY_DOWNLOADS
    base = str(base).rstrip("/")
    if "://" not in base:
        base = Path(base).resolve().as_uri()
    return f"{base}/{crate}/{crate}-{version}.crate"


def _download(url: str, dest: Path) -> None:
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as resp, \
                open(tmp, "wb") as out:
            shutil.copyfileobj(resp, out)
        os.replace(tmp, dest)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise FetchError(f"cannot download {url}: {e}") from None
    finally:
        tmp.unlink(missing_ok=True)


def fetch_crate(crate: str, version: str, sha256: str, cache_dir, mirror=None, *,
                generated=(), repair: bool = True) -> Path:
    """The unpacked crate ``<cache>/src/<crate>-<version>`` (downloaded and
    checked first if needed), every file of it verified against the record
    made when it was unpacked. ``generated``: paths in the tree that are not
    from the archive (the headers :func:`write_generated` writes); any other
    added file is a difference. A tree that differs is unpacked again
    (logged as a warning naming the files) or, with ``repair=False``, raises
    :class:`SourceMismatch`. A cached archive whose hash is wrong is
    downloaded again; a download whose hash is wrong raises FetchError and is
    deleted."""
    cache_dir = Path(cache_dir)
    archive = cache_dir / "crates" / f"{crate}-{version}.crate"
    unpacked = cache_dir / "src" / f"{crate}-{version}"
    record = _read_record(unpacked, sha256)
    if record is not None:
        problems = tree_differences(unpacked, record, generated)
        if not problems:
            return unpacked
        handle_mismatch(SourceMismatch(f"{crate} {version}", unpacked, problems), repair,
                        "unpacking the archive again")
    archive.parent.mkdir(parents=True, exist_ok=True)
    if not (archive.is_file() and sha256_of(archive) == sha256):
        url = crate_url(crate, version, mirror)
        _download(url, archive)
        actual = sha256_of(archive)
        if actual != sha256:
            archive.unlink()
            raise FetchError(f"{crate} {version}: sha256 mismatch for {url}: expected "
                             f"{sha256}, got {actual}; the download was deleted and "
                             f"nothing was unpacked")
    _unpack(archive, unpacked, f"{crate}-{version}")
    files = {rel: sha256_of(unpacked / rel) for rel in _files(unpacked)}
    (unpacked / UNPACKED_RECORD).write_text(
        json.dumps({"archive_sha256": sha256, "files": files}, indent=0, sort_keys=True))
    return unpacked


def _read_record(unpacked: Path, sha256: str):
    """The file hashes recorded when ``unpacked`` was unpacked from the
    archive of ``sha256``; None when there is no such record (never
    unpacked, interrupted, another archive, an unreadable record)."""
    try:
        record = json.loads((unpacked / UNPACKED_RECORD).read_text())
        if record["archive_sha256"] == sha256 and isinstance(record["files"], dict):
            return record["files"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _files(root: Path):
    """Relative paths of every file and symbolic link under ``root`` but the
    record itself."""
    for folder, dirs, names in os.walk(root):
        for d in dirs:
            if os.path.islink(os.path.join(folder, d)):
                names.append(d)  # (os.walk does not enter it)
        for name in names:
            rel = Path(folder, name).relative_to(root).as_posix()
            if rel != UNPACKED_RECORD:
                yield rel


def tree_differences(root: Path, files: dict, generated=()) -> list:
    """How the tree under ``root`` differs from ``files`` (path -> sha256):
    "changed: path", "missing: path", "added: path" (a path in
    ``generated`` is not added)."""
    problems = []
    for rel, digest in sorted(files.items()):
        path = root / rel
        if path.is_symlink() or not path.is_file():
            problems.append(f"missing: {rel}" if not os.path.lexists(path) else
                            f"changed: {rel} (no longer a plain file)")
        elif sha256_of(path) != digest:
            problems.append(f"changed: {rel}")
    allowed = set(files) | set(generated)
    problems += [f"added: {rel}" for rel in sorted(_files(root)) if rel not in allowed]
    return problems


def _unpack(archive: Path, dest: Path, top: str) -> None:
    """Unpacks the crate's ``top/`` folder into ``dest`` (no member may leave it)."""
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=dest.parent.parent))
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar.getmembers():
                parts = Path(member.name).parts
                if not parts or parts[0] != top or ".." in parts or member.name.startswith("/"):
                    raise FetchError(f"{archive.name}: unexpected member {member.name!r}")
                if not (member.isfile() or member.isdir()):
                    continue  # crates hold plain files; links are not needed
                tar.extract(member, tmp)
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp / top, dest)
    except (tarfile.TarError, OSError) as e:
        raise FetchError(f"cannot unpack {archive}: {e}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def csmith_version() -> str:
    exe = shutil.which("csmith")
    if exe is None:
        raise FetchError("csmith not found on PATH (Debian: apt-get install csmith)")
    res = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    return res.stdout.splitlines()[0].strip() if res.stdout else "csmith"


def fetch_csmith(seed: int, max_funcs: int, sha256, cache_dir, *, repair: bool = True) -> Path:
    """The csmith program of ``seed`` under ``<cache>/csmith``, generated once;
    raises FetchError when ``sha256`` is given and the program differs (another
    csmith version). A cached program that differs from ``sha256`` is
    generated again (logged as a warning) or, with ``repair=False``, raises
    :class:`SourceMismatch`."""
    from ..llvm.plugins.corpus import csmith_program
    path = Path(cache_dir) / "csmith" / f"csmith{seed}.c"
    if path.is_file() and sha256 is not None and sha256_of(path) != sha256:
        handle_mismatch(SourceMismatch(f"csmith seed {seed}", path.parent,
                                       [f"changed: {path.name}"]), repair, "generating it again")
        path.unlink()
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            csmith_program(seed, tmp, max_funcs=max_funcs)
            os.replace(tmp, path)
        except (OSError, subprocess.SubprocessError) as e:
            raise FetchError(f"csmith seed {seed}: {e}") from None
        finally:
            tmp.unlink(missing_ok=True)
    actual = sha256_of(path)
    if sha256 is not None and actual != sha256:
        raise FetchError(f"csmith seed {seed}: the program's sha256 is {actual}, the manifest "
                         f"pins {sha256} (made by {csmith_version()}; another csmith "
                         f"version generates other programs)")
    return path
