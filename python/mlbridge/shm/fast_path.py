"""The bitstream fast path of the shared-memory model side: a request record
that is exactly one bitstream observation (line and payload) for the
current header is decoded in one step -- by the native module
``mlbridge_shm_native`` when the session has it, else here -- with feature
arrays kept per ring position (docs/shm.md, "The native fast path").
Anything else is left to the codec's decode_message."""

from ..messages import Observation
from ..serdes import bitstream as _bitstream

__all__ = ["observation"]

# Longer than the longest observation line mlbridge writes.
_MAX_LINE_LOOK = 40


def observation(session, state):
    """The next request as an Observation when its record is one bitstream
    observation for ``state``'s header (what mlbridge's compilers write
    between headers); None for any other record, which is then current and
    unread for decode_message."""
    layout = state.cache
    if layout is None or session.pos < session.end:
        return None
    if session.ring is not None and not layout.strings and not layout.bools:
        if not session.has_request():
            session.wait_for_request(session.deadline, "a message", 0)
        taken = session.ring.take(session.next, layout.nbytes)
        if taken is not None:
            return native_observation(session, state, layout, *taken)
    session.next_record(session.deadline, "a message", 0)
    pos = session.pos
    end = session.end
    mm = session.mm
    nl = mm.find(b"\n", pos, min(end, pos + _MAX_LINE_LOOK))
    if nl < 0 or end - nl != layout.nbytes + 2:
        return None
    index = _bitstream.observation_index(mm[pos:nl])
    if index is None:
        return None
    session.pos = nl + 1
    return _bitstream.read_observation(session, state, index)


def native_observation(session, state, layout, index, pos, record, next_record):
    """The observation the native take() found (what read_observation makes
    for the same record, with views kept per ring position)."""
    session.read = record
    session.next = next_record
    session.pos = session.end = pos + layout.nbytes + 1
    if session.fast_layout is not layout:
        session.fast_layout = layout
        session.fast_views = {}
    seen = session.fast_views.get(pos)
    if seen is None:
        if len(session.fast_views) >= layout.MAX_VIEWS:
            session.fast_views.clear()
        seen = session.fast_views[pos] = (session.view[pos:pos + layout.nbytes], {})
    raw = seen[0]
    return Observation(index, state.context, layout.specs, state.advice_spec,
                       values=seen[1], raw=raw, layout=layout.entries, buf=raw,
                       names=layout.names)
