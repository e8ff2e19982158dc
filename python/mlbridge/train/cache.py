"""A folder of rollout results shared between training runs.

What compiling a module yields under a fixed policy (LLVM's own decisions)
is a fact about the module and the compiler alone, so it is kept on disk:
one ``.npz`` per key (the module's content hash and the compiler's tag).

* Entries are written to a temporary file unique to the writer and renamed
  into place, so runs sharing a folder never write the same file and a
  reader sees a whole entry or none.
* Every entry carries a sha256 of its arrays. A damaged entry (empty,
  truncated, a flipped byte) is detected, named in a warning, removed and
  reported as missing: the caller recomputes it.
* Writing is best-effort (:class:`BestEffortWrites`): a cache that cannot
  be written (a full or read-only disk) is named in one warning and the
  run goes on without it.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import tempfile
from typing import Callable, Dict, Optional

import numpy as np

__all__ = ["RolloutCache", "BestEffortWrites", "FAULT_INJECTION"]

_log = logging.getLogger("mlbridge.train")
_CHECK = "sha256"


def _digest(arrays: Dict[str, np.ndarray]) -> np.ndarray:
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return np.frombuffer(h.digest(), dtype=np.uint8)


#: Fault injection for the tests (docs/training.md): with this environment
#: variable set to "cache-enospc" every cache write fails as on a full disk.
FAULT_INJECTION = "MLBRIDGE_FAULT_INJECTION"


class BestEffortWrites:
    """The writes of one cache folder: an ``OSError`` (full or read-only
    disk) is named in one warning per cache, then the run goes on (what is
    not cached is computed again next time). Creates the folder (``path``;
    None: no cache)."""

    def __init__(self, what: str, path: Optional[str]):
        self.what = what
        self.failed = False
        if path is not None:
            self(path, lambda: os.makedirs(path, exist_ok=True))

    def __call__(self, path: str, write: Callable[[], None]) -> bool:
        """Runs ``write()`` (which writes ``path``); False when it failed."""
        try:
            if os.environ.get(FAULT_INJECTION) == "cache-enospc":
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
            write()
            return True
        except OSError as e:
            if not self.failed:
                self.failed = True
                _log.warning("%s: cannot write %s (%s); going on without caching it "
                             "(further write errors of this cache are not reported)",
                             self.what, e.filename or path, e.strerror or e)
            return False


class RolloutCache:
    """Entries under ``path``, named ``<key>.rollout.npz``."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.writes = BestEffortWrites("rollout cache", self.path)

    def file(self, key: str) -> str:
        return os.path.join(self.path, f"{key}.rollout.npz")

    def load(self, key: str) -> Optional[Dict[str, np.ndarray]]:
        """The arrays of entry ``key``; None when it is missing or damaged
        (a damaged file is named in a warning and removed)."""
        path = self.file(key)
        if not os.path.exists(path):
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
            check = arrays.pop(_CHECK, None)
            if check is None:
                raise ValueError("no checksum")
            if not np.array_equal(check, _digest(arrays)):
                raise ValueError("checksum mismatch")
        except Exception as e:  # noqa: BLE001 - any damage: numpy, zipfile, zlib errors
            _log.warning("rollout cache: %s is damaged (%s: %s); recomputing it", path,
                         type(e).__name__, e)
            try:
                os.unlink(path)
            except OSError:
                pass
            return None
        return arrays

    def save(self, key: str, **arrays) -> None:
        """Writes entry ``key`` (atomically, through a temporary file of this
        writer's own; best-effort)."""
        arrays = {k: np.asarray(v) for k, v in arrays.items()}

        def write():
            fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=self.path)
            try:
                with os.fdopen(fd, "wb") as f:
                    np.savez(f, **arrays, **{_CHECK: _digest(arrays)})
                os.replace(tmp, self.file(key))
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        self.writes(self.file(key), write)
