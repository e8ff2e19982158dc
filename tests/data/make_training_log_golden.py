"""Writes tests/data/training_log_golden.log: an LLVM training log with
scores, built by hand from the format LLVM documents and implements in
llvm/include/llvm/Analysis/Utils/TrainingLogger.h and
llvm/lib/Analysis/TrainingLogger.cpp (LLVM 17-19), WITHOUT the mlbridge
package: every JSON line is a literal string below, every tensor is packed
with the struct module (little-endian, as on x86-64).

The format, as LLVM writes it:
* one header line, compact JSON: {"features":[SPEC,...],"score":SPEC,
  "advice":SPEC} ("score" only when rewards are logged, "advice" only when
  given; a SPEC is {"name":...,"type":...,"port":...,"shape":[...]} in that
  key order, as llvm::TensorSpec::toJSON writes it);
* {"context":"NAME"} lines (llvm::json escapes: \\" \\\\ \\n \\t \\r, other
  control bytes as \\u00xx);
* per observation {"observation":N} (N from 0 per context name, continuing
  when a name comes back), the raw bytes of every feature in header order,
  then "\\n";
* with a score spec, after each observation {"outcome":N}, the score's raw
  bytes, "\\n".

tests/cpp/test_training_log.cpp writes the same records with
mlbridge::TrainingLogWriter and compares the bytes; tests/python/
test_training_log.py reads the file back. Rerun this script only to change
the test case (then update both tests).
"""

import struct
import sys
from pathlib import Path

HEADER = (
    '{"features":['
    '{"name":"callee_basic_block_count","type":"int64_t","port":0,"shape":[1]},'
    '{"name":"edge_weights","type":"float","port":0,"shape":[2,3]},'
    '{"name":"pair","type":"int32_t","port":0,"shape":[2]},'
    '{"name":"flags","type":"uint8_t","port":0,"shape":[3]},'
    '{"name":"ratio","type":"double","port":0,"shape":[1]},'
    '{"name":"inlining_decision","type":"int64_t","port":0,"shape":[1]}'
    '],'
    '"score":{"name":"reward","type":"float","port":0,"shape":[1]},'
    '"advice":{"name":"inlining_decision","type":"int64_t","port":0,"shape":[1]}'
    '}\n'
)


def observation(i: int) -> bytes:
    """The feature bytes of the i-th observation written (0, 1, 2, ...)."""
    return (struct.pack("<q", 10 + i)
            + struct.pack("<6f", *[0.5 * k + i for k in range(6)])
            + struct.pack("<2i", -i, 1 << 20)
            + struct.pack("<3B", i % 2, 1, 255)
            + struct.pack("<d", 1.0 / (i + 3))
            + struct.pack("<q", i % 2))


def reward(i: int) -> bytes:
    return struct.pack("<f", 2.0 - 0.25 * i)


# (context line or None, observation number within its context) in order.
RECORDS = [
    ('{"context":"main"}\n', 0),
    (None, 1),
    ('{"context":"f\\"q\\n\\u0001"}\n', 0),   # the name f"q<LF><SOH>
    ('{"context":"main"}\n', 2),
]


def golden() -> bytes:
    out = [HEADER.encode()]
    for i, (context, n) in enumerate(RECORDS):
        if context:
            out.append(context.encode())
        out.append(b'{"observation":%d}\n' % n + observation(i) + b"\n")
        out.append(b'{"outcome":%d}\n' % n + reward(i) + b"\n")
    return b"".join(out)


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else \
        Path(__file__).with_name("training_log_golden.log")
    path.write_bytes(golden())
    print(f"wrote {path}")
