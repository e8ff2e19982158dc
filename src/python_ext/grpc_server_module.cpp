//===- python_ext/grpc_server_module.cpp - CPython module over ServerCore -===//
//
// mlbridge_grpc_native.Server: what mlbridge.grpc.GrpcCompilerInterface
// (inference mode) serves through when this module is built. Plain CPython
// C API: one type, five methods.
//
//   Server(address, max_message_bytes, answer_timeout, max_pending,
//          methods: {"/pkg.Service/Method": kind}, tls)  # tls: None or
//          (key_pem, cert_pem, root_pem (b"": none), require_client_cert)
//   .port
//   .next(timeout) -> None (timed out) | (kind, id, method, payload: bytes)
//   .answer(id, reply: bytes) -> 0 sent | 1 gone | 2 too large
//   .fail(id, status_code: int, message) -> bool
//   .close()
//
// next() waits with the GIL released, in slices so Ctrl-C is seen.
//
//===----------------------------------------------------------------------===//

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "grpc_server_core.h"

#include <algorithm>
#include <new>

namespace {

using namespace mlbridge::pyserver;

/// next() checks for signals this often while it waits.
constexpr std::chrono::milliseconds kSignalSlice{200};

struct ServerObject {
  PyObject_HEAD
  ServerCore *Core;
};

int serverInit(ServerObject *Self, PyObject *Args, PyObject *) {
  const char *Address;
  int MaxBytes;
  double AnswerTimeout;
  Py_ssize_t MaxPending;
  PyObject *Methods, *Tls;
  if (!PyArg_ParseTuple(Args, "sidnO!O", &Address, &MaxBytes, &AnswerTimeout,
                        &MaxPending, &PyDict_Type, &Methods, &Tls))
    return -1;
  if (Self->Core) {
    PyErr_SetString(PyExc_RuntimeError, "Server is already initialized");
    return -1;
  }
  if (MaxBytes <= 0 || !(AnswerTimeout > 0) || MaxPending <= 0) {
    PyErr_SetString(PyExc_ValueError,
                    "max_message_bytes, answer_timeout and max_pending must be positive");
    return -1;
  }
  ServerConfig C;
  C.Address = Address;
  C.MaxMessageBytes = MaxBytes;
  C.AnswerTimeout = std::chrono::milliseconds(
      static_cast<long long>(std::min(AnswerTimeout, 1e9) * 1000.0));
  C.MaxPendingCalls = static_cast<size_t>(MaxPending);
  PyObject *Key, *Value;
  Py_ssize_t Pos = 0;
  while (PyDict_Next(Methods, &Pos, &Key, &Value)) {
    const char *Name = PyUnicode_AsUTF8(Key);
    long Kind = PyLong_AsLong(Value);
    if (!Name || (Kind == -1 && PyErr_Occurred()))
      return -1;
    if (Kind != 0 && Kind != 1) {
      PyErr_SetString(PyExc_ValueError, "method kind must be 0 (request) or 1 (session end)");
      return -1;
    }
    C.Methods[Name] = Kind == 0 ? MethodKind::Request : MethodKind::SessionEnd;
  }
  if (Tls != Py_None) {
    const char *KeyPem, *CertPem, *RootPem;
    int Require;
    if (!PyArg_ParseTuple(Tls, "yyyp", &KeyPem, &CertPem, &RootPem, &Require))
      return -1;
    C.UseTls = true;
    C.KeyPem = KeyPem;
    C.CertPem = CertPem;
    C.RootPem = RootPem;
    C.RequireClientCert = Require;
  }
  std::string Error;
  std::unique_ptr<ServerCore> Core;
  Py_BEGIN_ALLOW_THREADS
  Core = ServerCore::start(C, Error);
  Py_END_ALLOW_THREADS
  if (!Core) {
    PyErr_SetString(PyExc_OSError, Error.c_str());
    return -1;
  }
  Self->Core = Core.release();
  return 0;
}

void serverDealloc(ServerObject *Self) {
  if (Self->Core) {
    ServerCore *Core = Self->Core;
    Self->Core = nullptr;
    Py_BEGIN_ALLOW_THREADS
    delete Core;
    Py_END_ALLOW_THREADS
  }
  PyTypeObject *Type = Py_TYPE(Self);
  auto Free = reinterpret_cast<freefunc>(PyType_GetSlot(Type, Py_tp_free));
  Free(Self);
  Py_DECREF(Type); // instances of a heap type own a reference to it
}

bool live(ServerObject *Self) {
  if (Self->Core)
    return true;
  PyErr_SetString(PyExc_RuntimeError, "the server is not initialized");
  return false;
}

PyObject *serverNext(ServerObject *Self, PyObject *Arg) {
  if (!live(Self))
    return nullptr;
  double Seconds = PyFloat_AsDouble(Arg);
  if (Seconds == -1.0 && PyErr_Occurred())
    return nullptr;
  Seconds = std::clamp(Seconds, 0.0, 1e7);
  const auto Until =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(Seconds));
  Incoming In;
  NextResult R;
  for (;;) {
    const auto Slice = std::min(Until, Clock::now() + kSignalSlice);
    Py_BEGIN_ALLOW_THREADS
    R = Self->Core->next(Slice, In);
    Py_END_ALLOW_THREADS
    if (R != NextResult::TimedOut || Clock::now() >= Until)
      break;
    if (PyErr_CheckSignals() < 0)
      return nullptr;
  }
  if (R == NextResult::Closed) {
    PyErr_SetString(PyExc_EOFError, "the server is closed");
    return nullptr;
  }
  if (R == NextResult::TimedOut)
    Py_RETURN_NONE;
  PyObject *Payload = PyBytes_FromStringAndSize(nullptr, Py_ssize_t(In.size()));
  if (!Payload)
    return nullptr;
  In.copyTo(PyBytes_AS_STRING(Payload));
  return Py_BuildValue("(iKs#N)", In.Kind == MethodKind::Request ? 0 : 1,
                       static_cast<unsigned long long>(In.Id), In.Method.data(),
                       Py_ssize_t(In.Method.size()), Payload);
}

PyObject *serverAnswer(ServerObject *Self, PyObject *Args) {
  unsigned long long Id;
  Py_buffer Reply;
  if (!live(Self) || !PyArg_ParseTuple(Args, "Ky*", &Id, &Reply))
    return nullptr;
  // Sending may take a while (gRPC writes inline): other Python threads run
  // meanwhile; the buffer stays valid, its object is held by the arguments.
  AnswerResult R;
  Py_BEGIN_ALLOW_THREADS
  R = Self->Core->answer(
      Id, std::string_view(static_cast<const char *>(Reply.buf), size_t(Reply.len)));
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&Reply);
  return PyLong_FromLong(static_cast<long>(R));
}

PyObject *serverFail(ServerObject *Self, PyObject *Args) {
  unsigned long long Id;
  int Code;
  const char *Message;
  Py_ssize_t Len;
  if (!live(Self) || !PyArg_ParseTuple(Args, "Kis#", &Id, &Code, &Message, &Len))
    return nullptr;
  if (Code <= 0 || Code > 16) {
    PyErr_SetString(PyExc_ValueError, "status code must be a gRPC error code (1-16)");
    return nullptr;
  }
  std::string Text(Message, size_t(Len));
  bool Ok;
  Py_BEGIN_ALLOW_THREADS
  Ok = Self->Core->fail(Id, static_cast<grpc::StatusCode>(Code), Text);
  Py_END_ALLOW_THREADS
  return PyBool_FromLong(Ok);
}

PyObject *serverClose(ServerObject *Self, PyObject *) {
  if (!live(Self))
    return nullptr;
  Py_BEGIN_ALLOW_THREADS
  Self->Core->shutdown();
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

PyObject *serverPort(ServerObject *Self, void *) {
  if (!live(Self))
    return nullptr;
  return PyLong_FromLong(Self->Core->port());
}

PyMethodDef ServerMethods[] = {
    {"next", reinterpret_cast<PyCFunction>(serverNext), METH_O,
     "next(timeout) -> None | (kind, id, method, payload)"},
    {"answer", reinterpret_cast<PyCFunction>(serverAnswer), METH_VARARGS,
     "answer(id, reply) -> 0 sent, 1 gone, 2 too large"},
    {"fail", reinterpret_cast<PyCFunction>(serverFail), METH_VARARGS,
     "fail(id, code, message) -> bool"},
    {"close", reinterpret_cast<PyCFunction>(serverClose), METH_NOARGS,
     "stop serving; waiting calls end with UNAVAILABLE"},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef ServerGetSet[] = {
    {"port", reinterpret_cast<getter>(serverPort), nullptr, "the bound port", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot ServerSlots[] = {
    {Py_tp_doc, const_cast<char *>(
                    "A gRPC server whose calls are taken and answered from Python.")},
    {Py_tp_new, reinterpret_cast<void *>(PyType_GenericNew)},
    {Py_tp_init, reinterpret_cast<void *>(serverInit)},
    {Py_tp_dealloc, reinterpret_cast<void *>(serverDealloc)},
    {Py_tp_methods, ServerMethods},
    {Py_tp_getset, ServerGetSet},
    {0, nullptr}};

PyType_Spec ServerSpec = {"mlbridge_grpc_native.Server", sizeof(ServerObject), 0,
                          Py_TPFLAGS_DEFAULT, ServerSlots};

PyModuleDef Module = {PyModuleDef_HEAD_INIT, "mlbridge_grpc_native",
                      "gRPC server core of mlbridge.grpc (inference mode).", -1,
                      nullptr, nullptr, nullptr, nullptr, nullptr};

} // namespace

PyMODINIT_FUNC PyInit_mlbridge_grpc_native() {
  PyObject *M = PyModule_Create(&Module);
  if (!M)
    return nullptr;
  PyObject *Type = PyType_FromSpec(&ServerSpec);
  if (!Type || PyModule_AddObject(M, "Server", Type) < 0) {
    Py_XDECREF(Type);
    Py_DECREF(M);
    return nullptr;
  }
  return M;
}
