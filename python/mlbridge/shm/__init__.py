"""The model side of the shared-memory channel (docs/shm.md).

* :mod:`.layout`: the control block and hello, the Python side's one copy
  of the C++ definition;
* :mod:`.ring`: one compiler's session -- the request ring read in place,
  reply records written, wake-ups;
* :mod:`.fast_path`: a bitstream observation in one step (with the native
  module ``mlbridge_shm_native`` when built);
* :mod:`.interface`: :class:`ShmCompilerInterface`, listening and serving
  one session at a time;
* :mod:`.loop_source`: every connected compiler at once in an EventLoop.
"""

from .interface import DEFAULT_CAPACITY, ShmCompilerInterface

__all__ = ["ShmCompilerInterface", "DEFAULT_CAPACITY"]
