"""mlbridge: the Python (model) side of ML-Compiler-Bridge.

A compiler pass sends features over named pipes; a Python model answers::

    import mlbridge

    with mlbridge.PipeCompilerInterface("/tmp/chan", "bitstream") as iface:
        while (obs := iface.evaluate()) is not None:
            iface.populate_buffer(int(obs["callee_users"][0] < 10))

Wire formats: docs/protocol.md. The library never prints; it logs to the
``mlbridge`` logger (silent unless the application configures logging).
"""

import logging as _logging

from . import dtypes, serdes
from .errors import *  # noqa: F401,F403 (MLBridgeError and its subclasses)
from .errors import __all__ as _error_names
from .event_loop import ChannelStats, EventLoop
from .messages import Context, Header, Outcome, SessionState
from .observation import Observation
from .pipe import PipeCompilerInterface
from .reader import BufferReader, FdReader
from .shm import ShmCompilerInterface
from .tensor_spec import DYNAMIC, TensorSpec
from .training_log import TrainingLog, read_training_log

__version__ = "0.2.0"

__all__ = [
    "PipeCompilerInterface",
    "ShmCompilerInterface",
    "EventLoop",
    "ChannelStats",
    "Observation",
    "TensorSpec",
    "DYNAMIC",
    "Header",
    "Context",
    "Outcome",
    "SessionState",
    "FdReader",
    "BufferReader",
    "TrainingLog",
    "read_training_log",
    *_error_names,
    "dtypes",
    "serdes",
    "__version__",
]

_logging.getLogger("mlbridge").addHandler(_logging.NullHandler())
