"""LLVM training logs into numpy.

A training log is what LLVM's development mode writes
(``llvm/Analysis/Utils/TrainingLogger.h``) and what the C++
``mlbridge::TrainingLogWriter`` writes: a header line with the feature specs
(and optionally ``score`` and ``advice`` specs), ``{"context":...}`` lines,
``{"observation":N}`` records with raw tensor bytes and, with a score spec,
one ``{"outcome":N}`` record after each observation (docs/protocol.md,
"Training logs"). It is the bitstream format, so it is decoded by the
bitstream SerDes (:func:`mlbridge.serdes.bitstream.decode_message`)::

    from mlbridge.training_log import read_training_log

    log = read_training_log("inline.log")
    X = log.features["callee_basic_block_count"]   # int64 [N, 1]
    y = log.features["inlining_decision"]          # the decision LLVM logged
    r = log.scores                                 # float32 [N, 1] or None
    log.contexts, log.observation_ids              # per record

One header per file (LLVM writes one); a second header is a ProtocolError.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Optional, Tuple, Union

import numpy as np

from .errors import PeerClosed, ProtocolError
from .messages import Context, Header, Observation, Outcome, SessionState
from .reader import BufferReader
from .serdes import bitstream
from .tensor_spec import TensorSpec

__all__ = ["TrainingLog", "read_training_log"]


@dataclass(frozen=True)
class TrainingLog:
    """The records of one training log, as arrays with one row per
    observation (in file order)."""

    feature_specs: Tuple[TensorSpec, ...]
    score_spec: Optional[TensorSpec]
    advice_spec: Optional[TensorSpec]
    #: feature name -> array [N, *shape] of the feature's dtype.
    features: Dict[str, np.ndarray]
    #: [N, *score shape], or None without a score spec.
    scores: Optional[np.ndarray]
    #: str [N]: each observation's context ("" before any context line).
    contexts: np.ndarray
    #: int64 [N]: LLVM's observation number (from 0 per context).
    observation_ids: np.ndarray

    def __len__(self) -> int:
        return len(self.observation_ids)


def read_training_log(source: Union[str, os.PathLike, bytes, bytearray]) -> TrainingLog:
    """Reads a training log (a path, or its bytes).

    Raises ProtocolError for anything LLVM's format does not allow: no
    header, a record of the wrong size, an outcome that is missing, out of
    order or not the previous observation's, a second header.
    """
    data = bytes(source) if isinstance(source, (bytes, bytearray)) else \
        open(os.fspath(source), "rb").read()
    reader = BufferReader(data)
    # The whole file is in memory already: no size limit beyond its length.
    state = SessionState(max_message_bytes=max(len(data), 1),
                         max_header_bytes=max(len(data), 1), advice_optional=True)
    try:
        header = bitstream.decode_message(reader, state)
    except PeerClosed:
        raise ProtocolError("empty training log: no header line") from None
    if not isinstance(header, Header):
        raise ProtocolError("a training log starts with its header line")
    specs = header.feature_specs
    payloads = []
    scores = []
    contexts = []
    ids = []
    awaiting_outcome = None
    while True:
        try:
            msg = bitstream.decode_message(reader, state)
        except PeerClosed as e:
            if not e.clean:
                raise ProtocolError(f"truncated training log: {e}") from None
            break
        if isinstance(msg, Observation):
            if awaiting_outcome is not None:
                raise ProtocolError(f"observation {msg.index} follows observation "
                                    f"{awaiting_outcome}, which has no outcome")
            payloads.append(msg.raw)
            contexts.append(msg.context if msg.context is not None else "")
            ids.append(msg.index)
            if header.score_spec is not None:
                awaiting_outcome = msg.index
        elif isinstance(msg, Outcome):
            if awaiting_outcome is None or msg.index != awaiting_outcome:
                raise ProtocolError(f"outcome {msg.index} does not follow its "
                                    f"observation (the last observation was "
                                    f"{ids[-1] if ids else 'none'})")
            scores.append(np.asarray(msg.value))
            awaiting_outcome = None
        elif isinstance(msg, Context):
            if awaiting_outcome is not None:
                raise ProtocolError(f"context {msg.name!r} before the outcome of "
                                    f"observation {awaiting_outcome}")
        else:
            raise ProtocolError("a second header in a training log")
    if awaiting_outcome is not None:
        raise ProtocolError(f"the log ends before the outcome of observation "
                            f"{awaiting_outcome}")

    n = len(payloads)
    record = np.frombuffer(b"".join(payloads), np.uint8).reshape(n, -1) if n else \
        np.zeros((0, sum(s.nbytes for s in specs)), np.uint8)
    features = {}
    offset = 0
    for s in specs:
        column = np.ascontiguousarray(record[:, offset:offset + s.nbytes])
        features[s.name] = column.view(s.np_dtype).reshape((n, *s.shape))
        offset += s.nbytes
    score_array = None
    if header.score_spec is not None:
        score_array = (np.stack(scores) if scores else
                       np.zeros((0, *header.score_spec.shape), header.score_spec.np_dtype))
    return TrainingLog(feature_specs=specs, score_spec=header.score_spec,
                       advice_spec=header.advice_spec, features=features,
                       scores=score_array, contexts=np.array(contexts, dtype=str),
                       observation_ids=np.array(ids, dtype=np.int64))
