//===- python_ext/shm_ring_module.cpp - native hot path of the shm model side -===//
//
// mlbridge_shm_native.Ring: the two steps of python/mlbridge/shm/ that a
// small request spends most of its time in, done without the interpreter.
// Only the common case is handled; for anything else a method returns None
// and mlbridge.shm does the step itself (same checks, same errors), so the
// protocol has one definition: docs/shm.md and docs/protocol.md.
//
//   Ring(mapping, capacity, wake_peer)  # mapping: the session's writable mmap
//   .take(next, nbytes) -> None | (index, payload_offset, record, next_record)
//       The request record at ring position `next` (or at the ring's start
//       when a wrap marker is there) when it is published, well formed and
//       exactly one bitstream observation line ({"observation":N}) followed
//       by an `nbytes` payload and '\n'. `record`: its ring position. The
//       ring's indices are checked as the C++ reader checks them (one
//       findRecord, src/transport/shm_layout.h): a corrupt ring is None,
//       and mlbridge.shm reports it.
//   .reply(head, data, session, request) -> None | new head
//       Appends `data` as one reply record at ring position `head` (behind
//       the reply frame when `session` is not 0), as mlbridge.shm's try_write() does,
//       publishes it and wakes a sleeping compiler -- when it fits without
//       waiting.
//   .close()  # lets the mapping go (call before closing the mmap)
//
//===----------------------------------------------------------------------===//

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "mlbridge/stream_model_runner.h"
#include "transport/shm_layout.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <utility>

#include <unistd.h>

namespace {

using namespace mlbridge::shm_layout;

constexpr char kObservationPrefix[] = "{\"observation\":";
constexpr size_t kPrefixLength = sizeof(kObservationPrefix) - 1;
// Longer observation lines are not what mlbridge writes (mlbridge.shm looks as far).
constexpr size_t kMaxLineLook = 40;
constexpr size_t kMaxIndexDigits = 18;
constexpr size_t kFrameBytes = mlbridge::ReplyFrame::Bytes; // protocol §5.1

struct RingObject {
  PyObject_HEAD
  Py_buffer Mapping;
  bool HasMapping;
  uint64_t Capacity;
  int WakePeer;
};

uint8_t *bytesAt(RingObject *Self, size_t Offset) {
  return static_cast<uint8_t *>(Self->Mapping.buf) + Offset;
}

uint64_t acquireControl(RingObject *Self, size_t Offset) {
  return __atomic_load_n(reinterpret_cast<uint64_t *>(bytesAt(Self, Offset)),
                         __ATOMIC_ACQUIRE);
}

bool checkOpen(RingObject *Self) {
  if (Self->HasMapping)
    return true;
  PyErr_SetString(PyExc_ValueError, "the ring is closed");
  return false;
}

int ringInit(RingObject *Self, PyObject *Args, PyObject *) {
  PyObject *Mapping;
  unsigned long long Capacity;
  int WakePeer;
  if (!PyArg_ParseTuple(Args, "OKi", &Mapping, &Capacity, &WakePeer))
    return -1;
  if (Self->HasMapping) {
    PyErr_SetString(PyExc_ValueError, "the ring is already initialized");
    return -1;
  }
  if (PyObject_GetBuffer(Mapping, &Self->Mapping, PyBUF_WRITABLE | PyBUF_SIMPLE) < 0)
    return -1;
  Self->HasMapping = true;
  if (Capacity < 8 || Capacity % 8 ||
      static_cast<uint64_t>(Self->Mapping.len) != kControlBytes + 2 * Capacity) {
    PyBuffer_Release(&Self->Mapping);
    Self->HasMapping = false;
    PyErr_SetString(PyExc_ValueError, "the mapping is not a control block and two rings "
                                      "of this capacity");
    return -1;
  }
  Self->Capacity = Capacity;
  Self->WakePeer = WakePeer;
  return 0;
}

void ringDealloc(RingObject *Self) {
  if (Self->HasMapping)
    PyBuffer_Release(&Self->Mapping);
  PyTypeObject *Type = Py_TYPE(Self);
  auto Free = reinterpret_cast<freefunc>(PyType_GetSlot(Type, Py_tp_free));
  Free(Self);
  Py_DECREF(Type); // instances of a heap type own a reference to it
}

PyObject *ringClose(RingObject *Self, PyObject *) {
  if (Self->HasMapping)
    PyBuffer_Release(&Self->Mapping);
  Self->HasMapping = false;
  Py_RETURN_NONE;
}

/// N when [Line, Line+Length) is exactly {"observation":N} with N written as
/// mlbridge.serdes.bitstream's observation_index accepts it; -1 otherwise.
long long observationIndex(const uint8_t *Line, size_t Length) {
  if (Length < kPrefixLength + 2 || std::memcmp(Line, kObservationPrefix, kPrefixLength) ||
      Line[Length - 1] != '}')
    return -1;
  const uint8_t *Digits = Line + kPrefixLength;
  size_t Count = Length - kPrefixLength - 1;
  if (Count > kMaxIndexDigits || (Count > 1 && Digits[0] == '0'))
    return -1;
  long long Index = 0;
  for (size_t I = 0; I < Count; ++I) {
    if (Digits[I] < '0' || Digits[I] > '9')
      return -1;
    Index = Index * 10 + (Digits[I] - '0');
  }
  return Index;
}

/// Reads Count unsigned 64-bit arguments into Out, after the method's
/// argument count and its ring are checked; false with a Python error set.
bool unsignedArgs(RingObject *Self, PyObject *const *Args, Py_ssize_t NArgs,
                  Py_ssize_t Expected, const char *Usage,
                  std::initializer_list<std::pair<Py_ssize_t, uint64_t *>> Out) {
  if (NArgs != Expected) {
    PyErr_SetString(PyExc_TypeError, Usage);
    return false;
  }
  for (const auto &[Index, Value] : Out)
    *Value = PyLong_AsUnsignedLongLong(Args[Index]);
  return !PyErr_Occurred() && checkOpen(Self);
}

PyObject *ringTake(RingObject *Self, PyObject *const *Args, Py_ssize_t NArgs) {
  uint64_t Next, NBytes;
  if (!unsignedArgs(Self, Args, NArgs, 2, "take(next, nbytes)",
                    {{0, &Next}, {1, &NBytes}}))
    return nullptr;
  const uint64_t Cap = Self->Capacity;
  const RingRecord R = findRecord(bytesAt(Self, kControlBytes), Cap, Next,
                                  acquireControl(Self, kRequestHead));
  if (R.State != RingRecord::Kind::Record)
    Py_RETURN_NONE; // nothing yet, or a corrupt ring mlbridge.shm reports
  const uint8_t *Pos = bytesAt(Self, kControlBytes + R.Start % Cap + kLengthBytes);
  const uint8_t *End = Pos + R.Length;
  size_t Look = static_cast<size_t>(std::min<uint64_t>(R.Length, kMaxLineLook));
  const uint8_t *Newline = static_cast<const uint8_t *>(std::memchr(Pos, '\n', Look));
  if (!Newline || static_cast<uint64_t>(End - Newline) != NBytes + 2 || End[-1] != '\n')
    Py_RETURN_NONE;
  long long Index = observationIndex(Pos, static_cast<size_t>(Newline - Pos));
  if (Index < 0)
    Py_RETURN_NONE;
  size_t Payload = static_cast<size_t>(Newline + 1 - bytesAt(Self, 0));
  return Py_BuildValue("(LnKK)", Index, static_cast<Py_ssize_t>(Payload),
                       static_cast<unsigned long long>(R.Start),
                       static_cast<unsigned long long>(R.Start + kLengthBytes +
                                                       padTo8(R.Length)));
}

PyObject *ringReply(RingObject *Self, PyObject *const *Args, Py_ssize_t NArgs) {
  uint64_t Head, Session, Request;
  if (!unsignedArgs(Self, Args, NArgs, 4, "reply(head, data, session, request)",
                    {{0, &Head}, {2, &Session}, {3, &Request}}))
    return nullptr;
  char *Data;
  Py_ssize_t DataLength;
  if (PyBytes_AsStringAndSize(Args[1], &Data, &DataLength) < 0)
    return nullptr;
  uint64_t Cap = Self->Capacity;
  uint64_t Frame = Session ? kFrameBytes : 0;
  uint64_t N = Frame + static_cast<uint64_t>(DataLength);
  uint64_t Need = kLengthBytes + padTo8(N);
  uint64_t Off = Head % Cap;
  uint64_t Tail = acquireControl(Self, kReplyTail);
  // Wrap when the record does not fit before the end, and also when the
  // compiler has read everything and it fits before the marker: replies
  // reuse the same pages. Waiting for room is mlbridge.shm's to do.
  bool Empty = Tail == Head;
  uint64_t Skip = Off + Need > Cap || (Empty && Need <= Off) ? Cap - Off : 0;
  if (N > Cap - kLengthBytes || (!Empty && Head + Skip + Need - Tail > Cap))
    Py_RETURN_NONE;
  if (Skip) {
    std::memcpy(bytesAt(Self, kControlBytes + Cap + Off), &kWrapMarker, kLengthBytes);
    Head += Skip;
    Off = 0;
  }
  uint8_t *At = bytesAt(Self, kControlBytes + Cap + Off);
  std::memcpy(At, &N, kLengthBytes);
  if (Frame) {
    uint64_t Fields[3] = {Session, Request, static_cast<uint64_t>(DataLength)};
    static_assert(sizeof Fields == kFrameBytes, "session, request, length");
    std::memcpy(At + kLengthBytes, Fields, sizeof Fields);
  }
  std::memcpy(At + kLengthBytes + Frame, Data, static_cast<size_t>(DataLength));
  Head += Need;
  __atomic_store_n(reinterpret_cast<uint64_t *>(bytesAt(Self, kReplyHead)), Head,
                   __ATOMIC_RELEASE);
  // The compiler sets its flag, then looks at the head: one of the two
  // sees the other.
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (acquireControl(Self, kCompilerSleeping)) {
    uint64_t One = 1;
    // A full eventfd counter (EAGAIN) already wakes the compiler.
    if (write(Self->WakePeer, &One, sizeof One) < 0 && errno != EAGAIN)
      return PyErr_SetFromErrno(PyExc_OSError);
  }
  return PyLong_FromUnsignedLongLong(Head);
}

PyMethodDef RingMethods[] = {
    {"take", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(ringTake)),
     METH_FASTCALL, "take(next, nbytes) -> None | (index, payload_offset, record, next_record)"},
    {"reply", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(ringReply)),
     METH_FASTCALL, "reply(head, data, session, request) -> None | new head"},
    {"close", reinterpret_cast<PyCFunction>(ringClose), METH_NOARGS,
     "close(): release the mapping"},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot RingSlots[] = {
    {Py_tp_doc, const_cast<char *>("The request and reply rings of one shared-memory session.")},
    {Py_tp_new, reinterpret_cast<void *>(PyType_GenericNew)},
    {Py_tp_init, reinterpret_cast<void *>(ringInit)},
    {Py_tp_dealloc, reinterpret_cast<void *>(ringDealloc)},
    {Py_tp_methods, RingMethods},
    {0, nullptr}};

PyType_Spec RingSpec = {"mlbridge_shm_native.Ring", sizeof(RingObject), 0, Py_TPFLAGS_DEFAULT,
                        RingSlots};

PyModuleDef ModuleDef = {PyModuleDef_HEAD_INIT, "mlbridge_shm_native",
                         "Native hot path of mlbridge's shared-memory model side.", -1,
                         nullptr, nullptr, nullptr, nullptr, nullptr};

} // namespace

PyMODINIT_FUNC PyInit_mlbridge_shm_native() {
  PyObject *M = PyModule_Create(&ModuleDef);
  if (!M)
    return nullptr;
  PyObject *Type = PyType_FromSpec(&RingSpec);
  if (!Type || PyModule_AddObject(M, "Ring", Type) < 0) {
    Py_XDECREF(Type);
    Py_DECREF(M);
    return nullptr;
  }
  return M;
}
