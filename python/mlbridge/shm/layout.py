"""The shared-memory channel's layout (docs/shm.md, "The channel, byte by
byte"): the hello datagram and the control block at the start of the
memory file, in byte offsets -- the units of the C++ definition
(src/transport/shm_layout.h), which tests/python/test_shm_layout.py
checks this module against, constant by constant.

This is the Python side's only copy: the model side and the Python test
compilers read their offsets from here.
"""

import struct

MAGIC = 0x31304D4853424C4D  # "MLBSHM01", little-endian
VERSION = 1
CONTROL_BYTES = 4096  # then the request ring (compiler -> model), then the reply ring
MIN_CAPACITY = 4096
MAX_CAPACITY = 1 << 40  # what a compiler accepts

# Control-block words (8 bytes each, on their own 64-byte lines).
# Offsets 0, 8 and 16 repeat the hello's magic, version and capacity.
MAGIC_OFFSET, VERSION_OFFSET, CAPACITY_OFFSET = 0, 8, 16
REQUEST_HEAD = 64    # written by the compiler
REQUEST_TAIL = 128   # written by the model
REPLY_HEAD = 192     # written by the model
REPLY_TAIL = 256     # written by the compiler
MODEL_SLEEPING = 320
COMPILER_SLEEPING = 384

# A record's length word holding this value: the record starts at offset 0.
WRAP_MARKER = (1 << 64) - 1
LENGTH_BYTES = 8  # a record's length word

# The hello datagram: magic, version, flags, capacity.
HELLO = struct.Struct("<QIIQ")
HELLO_BYTES = HELLO.size

U64 = struct.Struct("<Q")


def word(offset):
    """The index of the control-block word at byte ``offset`` in a
    ``memoryview.cast("Q")`` of the block."""
    return offset // 8


def record_bytes(length):
    """Ring bytes a record of ``length`` message bytes takes (length word,
    message, padding to 8)."""
    return LENGTH_BYTES + ((length + 7) & ~7)


def file_size(capacity):
    """The memory file's size for rings of ``capacity`` bytes."""
    return CONTROL_BYTES + 2 * capacity


def reply_ring(capacity):
    """Offset of the reply ring (model -> compiler) in the memory file."""
    return CONTROL_BYTES + capacity
