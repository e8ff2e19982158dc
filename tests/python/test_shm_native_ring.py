"""mlbridge_shm_native.Ring.take (src/python_ext/shm_ring_module.cpp) finds a
request record with the checks of the C++ reader (findRecord in
src/transport/shm_layout.h): the ring's indices are checked before a wrap
marker is followed, and a corrupt ring gives None -- mlbridge.shm then reads the
record itself and reports it -- never a record.

The rings are built by hand in an anonymous mapping here; the layout
constants are read from that header, the one definition."""

import mmap
import re
import struct
from pathlib import Path

import pytest

from build_components import require_component
from mlbridge import _native

LAYOUT = {name: int(value, 0) for name, value in re.findall(
    r"^constexpr std::\w+ k(\w+) = (0x[0-9A-Fa-f]+|\d+);", (
        Path(__file__).resolve().parents[2] / "src/transport/shm_layout.h").read_text(),
    re.MULTILINE)}
CAP = LAYOUT["MinCapacity"]
CONTROL = LAYOUT["ControlBytes"]
WRAP = LAYOUT["WrapMarker"]
U64 = struct.Struct("<Q")
OBSERVATION = b'{"observation":3}\n' + b"\x07" * 8 + b"\n"  # an 8-byte payload
RECORD_BYTES = 8 + (len(OBSERVATION) + 7) // 8 * 8


@pytest.fixture
def native():
    require_component("shm_python_fast_path")
    module, why = _native.load("mlbridge_shm_native")
    assert module is not None, why
    return module


def ring(native, head, words):
    """A Ring over a request ring holding `words` ({position: bytes}),
    published up to `head`."""
    mm = mmap.mmap(-1, CONTROL + 2 * CAP)
    for position, data in words.items():
        mm[CONTROL + position:CONTROL + position + len(data)] = data
    U64.pack_into(mm, LAYOUT["RequestHead"], head)
    return native.Ring(mm, CAP, -1), mm


def record_at(position):
    return {position: U64.pack(len(OBSERVATION)) + OBSERVATION}


def test_the_layout_header_is_read():
    assert (LAYOUT["Magic"], LAYOUT["ControlBytes"], LAYOUT["RequestHead"]) == (
        0x31304D4853424C4D, 4096, 64)


def test_a_record_behind_a_wrap_marker_is_taken(native):
    marker = CAP - 96
    r, mm = ring(native, head=CAP + RECORD_BYTES,
                 words={marker: U64.pack(WRAP), **record_at(0)})
    assert r.take(marker, 8) == (3, CONTROL + 8 + 18, CAP, CAP + RECORD_BYTES)
    r.close()
    mm.close()


@pytest.mark.parametrize("next_, head, words", [
    # Past the marker the head looks plausible, but it is more than the
    # capacity ahead of the reader: the record there is stale, not published.
    (CAP - 96, CAP - 96 + CAP + 8, {CAP - 96: U64.pack(WRAP), **record_at(0)}),
    # A marker at the ring's start (no writer puts one there).
    (0, CAP, {0: U64.pack(WRAP)}),
    # A marker the head has not passed.
    (CAP - 96, CAP - 96 + 8, {CAP - 96: U64.pack(WRAP)}),
    # The head moved backwards.
    (CAP, CAP - 8, record_at(0)),
], ids=["head more than the capacity ahead", "marker at the start",
        "marker beyond the head", "head behind the reader"])
def test_a_corrupt_ring_is_never_a_record(native, next_, head, words):
    r, mm = ring(native, head, words)
    assert r.take(next_, 8) is None
    r.close()
    mm.close()
