"""LLVM training logs: tests/data/training_log_golden.log (written by hand
from LLVM's documented format by tests/data/make_training_log_golden.py; the
C++ TrainingLogWriter reproduces it byte for byte, tests/cpp/
test_training_log.cpp) reads into numpy with mlbridge.read_training_log, and
is readable by LLVM's own reader.

LLVM's reader is llvm/lib/Analysis/models/log_reader.py; the format was
checked against its version at llvm-project commit
507565d2b609cdde94e4be98513046225ff064ba (the one that reads the optional
"advice" header key). The tests must not use the network, so
`llvm_log_reader_events` below follows that script's algorithm step by step
(a header line; per event an optional context line, an observation line,
the feature bytes read by spec size, one readline for the "\\n"; with a
score, an outcome line whose number equals the observation's, the score
bytes, one readline) and asserts each of its assumptions.
"""

import ctypes
import io
import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest

from mlbridge import ProtocolError
from mlbridge.training_log import read_training_log

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "training_log_golden.log"

# log_reader.py's element types (the only ones it accepts).
LLVM_TYPES = {"float": ctypes.c_float, "double": ctypes.c_double, "int8_t": ctypes.c_int8,
              "uint8_t": ctypes.c_uint8, "int16_t": ctypes.c_int16,
              "uint16_t": ctypes.c_uint16, "int32_t": ctypes.c_int32,
              "uint32_t": ctypes.c_uint32, "int64_t": ctypes.c_int64,
              "uint64_t": ctypes.c_uint64}


def llvm_log_reader_events(data: bytes):
    """log_reader.py's read_stream, as (context, id, [feature bytes], score bytes)."""
    f = io.BufferedReader(io.BytesIO(data))
    header = json.loads(f.readline())

    def size(spec):
        assert spec["type"] in LLVM_TYPES, spec
        return math.prod(int(d) for d in spec["shape"]) * ctypes.sizeof(LLVM_TYPES[spec["type"]])

    specs = header["features"]
    score = header.get("score")
    events, context = [], None
    while event_str := f.readline():
        event = json.loads(event_str)
        if "context" in event:
            context = event["context"]
            event = json.loads(f.readline())
        obs_id = int(event["observation"])
        features = [f.read(size(s)) for s in specs]
        assert f.readline() == b"\n"
        value = None
        if score is not None:
            outcome = json.loads(f.readline())
            assert int(outcome["outcome"]) == obs_id
            value = f.read(size(score))
            assert f.readline() == b"\n"
        events.append((context, obs_id, features, value))
    return header, events


def test_golden_log_reads_into_numpy():
    log = read_training_log(GOLDEN)
    assert [s.name for s in log.feature_specs] == [
        "callee_basic_block_count", "edge_weights", "pair", "flags", "ratio",
        "inlining_decision"]
    assert log.score_spec.name == "reward" and log.score_spec.dtype == "float"
    assert log.advice_spec.name == "inlining_decision"
    assert len(log) == 4
    assert list(log.contexts) == ["main", "main", 'f"q\n\x01', "main"]
    assert log.observation_ids.tolist() == [0, 1, 0, 2]
    f = log.features
    assert f["callee_basic_block_count"].dtype == np.int64
    assert f["callee_basic_block_count"][:, 0].tolist() == [10, 11, 12, 13]
    assert f["edge_weights"].shape == (4, 2, 3) and f["edge_weights"].dtype == np.float32
    np.testing.assert_array_equal(
        f["edge_weights"][2], (0.5 * np.arange(6) + 2).reshape(2, 3).astype(np.float32))
    assert f["pair"].tolist() == [[0, 1 << 20], [-1, 1 << 20], [-2, 1 << 20], [-3, 1 << 20]]
    assert f["flags"].dtype == np.uint8 and f["flags"][1].tolist() == [1, 1, 255]
    np.testing.assert_array_equal(f["ratio"][:, 0], [1 / 3, 1 / 4, 1 / 5, 1 / 6])
    assert f["inlining_decision"][:, 0].tolist() == [0, 1, 0, 1]
    assert log.scores.shape == (4, 1)
    assert log.scores[:, 0].tolist() == [2.0, 1.75, 1.5, 1.25]


def test_golden_log_follows_llvm_log_reader():
    data = GOLDEN.read_bytes()
    header, events = llvm_log_reader_events(data)
    assert list(header) == ["features", "score", "advice"]  # LLVM's key order
    log = read_training_log(data)
    assert len(events) == len(log)
    for i, (context, obs_id, features, score) in enumerate(events):
        assert context == log.contexts[i] and obs_id == log.observation_ids[i]
        for spec, raw in zip(log.feature_specs, features):
            assert raw == log.features[spec.name][i].tobytes()
        assert score == struct.pack("<f", log.scores[i, 0])


def test_a_log_without_score_or_advice():
    header = (b'{"features":[{"name":"x","type":"int32_t","port":0,"shape":[2]}]}\n')
    data = header + b'{"observation":0}\n' + struct.pack("<2i", 4, -5) + b"\n"
    log = read_training_log(data)
    assert log.scores is None and log.score_spec is None and log.advice_spec is None
    assert log.contexts.tolist() == [""] and log.features["x"].tolist() == [[4, -5]]
    _, events = llvm_log_reader_events(data)
    assert events == [(None, 0, [struct.pack("<2i", 4, -5)], None)]
    empty = read_training_log(header)
    assert len(empty) == 0 and empty.features["x"].shape == (0, 2)


@pytest.mark.parametrize("cut, message", [
    (lambda d: d[:-3], "truncated"),                                  # inside a score
    (lambda d: d[:d.rindex(b'{"outcome"')], "ends before the outcome"),
    (lambda d: b"", "no header"),
    (lambda d: d.replace(b'{"outcome":2}', b'{"outcome":1}'), "does not follow"),
    (lambda d: d + d[:d.index(b"\n") + 1], "second header"),
])
def test_malformed_logs_are_errors(cut, message):
    with pytest.raises(ProtocolError, match=message):
        read_training_log(cut(GOLDEN.read_bytes()))
