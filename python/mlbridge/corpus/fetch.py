"""Downloads of pinned crates and csmith programs, checked by sha256.

A crate is fetched from the registry's static download address (or a mirror
folder or URL given by ``MLBRIDGE_CORPUS_MIRROR``), checked against the sha256
the manifest pins, and unpacked once. Nothing is used before its hash matches.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from ..errors import MLBridgeError

REGISTRY_DOWNLOADS = "https://static.crates.io/crates"
DOWNLOAD_TIMEOUT = 120.0


class FetchError(MLBridgeError):
    """A download failed, or its content is not what the manifest pins."""


def sha256_of(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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


def fetch_crate(crate: str, version: str, sha256: str, cache_dir, mirror=None) -> Path:
    """The unpacked crate ``<cache>/src/<crate>-<version>`` (downloaded and
    checked first if needed). A cached archive whose hash is wrong is
    downloaded again; a download whose hash is wrong raises FetchError and is
    deleted."""
    cache_dir = Path(cache_dir)
    archive = cache_dir / "crates" / f"{crate}-{version}.crate"
    unpacked = cache_dir / "src" / f"{crate}-{version}"
    stamp = unpacked / ".mlbridge-sha256"
    if stamp.is_file() and stamp.read_text().strip() == sha256:
        return unpacked
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
    stamp.write_text(sha256 + "\n")
    return unpacked


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


def fetch_csmith(seed: int, max_funcs: int, sha256, cache_dir) -> Path:
    """The csmith program of ``seed`` under ``<cache>/csmith``, generated once;
    raises FetchError when ``sha256`` is given and the program differs (another
    csmith version)."""
    from ..llvm.plugins.corpus import csmith_program
    path = Path(cache_dir) / "csmith" / f"csmith{seed}.c"
    if not (path.is_file() and (sha256 is None or sha256_of(path) == sha256)):
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
