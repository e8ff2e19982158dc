"""User-defined services: serve a method of your own .proto, with the
request's fields as features and the advice written into a reply field,
through protobuf reflection (the mirror of C++ ``UserMessageSchema``).

Feature names are field paths: ``"a"``, nested messages ``"loop.trip_count"``,
elements of repeated message fields ``"blocks[2].size"``. A repeated scalar
field is a 1-D array; a singular one has shape ``[1]``; ``string`` fields
are ``str``, ``bytes`` fields ``uint8`` arrays. Fields with presence
(messages, proto2, proto3 ``optional``) appear only when set.

::

    pb = load_proto("posetrl.proto")
    svc = UserService("/posetrl.PosetRL/GetAdvice", pb.Observation, pb.Action,
                      advice_field="action")
    with GrpcCompilerInterface(user_service=svc) as iface:
        ...
"""

import importlib
import os
import sys
import tempfile
import threading

import grpc
import numpy as np
from google.protobuf.descriptor import FieldDescriptor as FD

from ..errors import MLBridgeError, ProtocolError
from ..tensor_spec import DYNAMIC, TensorSpec
from ..values import coerce
from .tensors import GrpcObservation

__all__ = ["UserService", "load_proto", "flatten_message"]

_CPP_TO_DTYPE = {
    FD.CPPTYPE_INT32: "int32_t",
    FD.CPPTYPE_INT64: "int64_t",
    FD.CPPTYPE_UINT32: "uint32_t",
    FD.CPPTYPE_UINT64: "uint64_t",
    FD.CPPTYPE_DOUBLE: "double",
    FD.CPPTYPE_FLOAT: "float",
    FD.CPPTYPE_BOOL: "bool",
    FD.CPPTYPE_ENUM: "int32_t",
    FD.CPPTYPE_STRING: "string",
}

_load_lock = threading.Lock()


def _is_repeated(field):
    # protobuf >= 5 has is_repeated; older runtimes only label.
    rep = getattr(field, "is_repeated", None)
    if rep is not None:
        return rep if isinstance(rep, bool) else rep()
    return field.label == FD.LABEL_REPEATED


def _has_presence(field):
    return bool(getattr(field, "has_presence", False))


def _field_dtype(field):
    if field.type == FD.TYPE_BYTES:
        return "uint8_t"
    return _CPP_TO_DTYPE[field.cpp_type]


def flatten_message(msg, prefix=""):
    """(name, TensorSpec, value) of every field of ``msg``, as features."""
    out = []
    for field in msg.DESCRIPTOR.fields:
        name = prefix + field.name
        value = getattr(msg, field.name)
        if field.cpp_type == FD.CPPTYPE_MESSAGE:
            if _is_repeated(field):
                for i, elem in enumerate(value):
                    out += flatten_message(elem, f"{name}[{i}].")
            elif msg.HasField(field.name):
                out += flatten_message(value, name + ".")
            continue
        if not _is_repeated(field) and _has_presence(field) and not msg.HasField(field.name):
            continue
        dtype = _field_dtype(field)
        if dtype == "string":
            text = value
            if _is_repeated(field):
                if len(value) != 1:
                    raise ProtocolError(f"field {name!r}: a repeated string field is a "
                                        f"feature only with exactly one element, got "
                                        f"{len(value)}")
                text = value[0]
            out.append((name, TensorSpec(name, "string", (len(text.encode("utf-8")),)), text))
            continue
        if dtype == "uint8_t" and not _is_repeated(field):
            arr = np.frombuffer(bytes(value), np.uint8)
        else:
            items = list(value) if _is_repeated(field) else [value]
            arr = np.array(items, dtype=TensorSpec("x", dtype).np_dtype)
        arr.flags.writeable = False
        out.append((name, TensorSpec(name, dtype, arr.shape), arr))
    return out


def _resolve_reply_field(descriptor, path):
    d = descriptor
    parts = path.split(".")
    field = None
    for i, part in enumerate(parts):
        name = part.split("[", 1)[0]
        field = d.fields_by_name.get(name)
        if field is None:
            raise MLBridgeError(f"message {d.full_name} has no field {name!r}; its fields: "
                                f"{', '.join(f.name for f in d.fields) or 'none'}")
        if i + 1 < len(parts):
            if field.cpp_type != FD.CPPTYPE_MESSAGE:
                raise MLBridgeError(f"advice field {path!r}: {name!r} is not a message")
            d = field.message_type
    if field.cpp_type == FD.CPPTYPE_MESSAGE:
        raise MLBridgeError(f"advice field {path!r} is a message; name one of its fields")
    return field


class UserService:
    """A user-defined unary method served by GrpcCompilerInterface.

    ``method``: ``"/package.Service/Method"``; ``request_class`` /
    ``reply_class``: generated message classes (e.g. from
    :func:`load_proto`); ``advice_field``: path of the reply field that
    holds the advice. The advice spec follows that field: its dtype, shape
    ``[1]`` (singular) or ``[-1]`` (repeated).
    """

    def __init__(self, method, request_class, reply_class, advice_field):
        if not (isinstance(method, str) and method.startswith("/") and method.count("/") == 2):
            raise ValueError(f"method must look like '/package.Service/Method', got {method!r}")
        self.method = method
        self.request_class = request_class
        self.reply_class = reply_class
        self.advice_field = advice_field
        field = _resolve_reply_field(reply_class.DESCRIPTOR, advice_field)
        dtype = _field_dtype(field)
        if dtype == "string" or _is_repeated(field) or (dtype == "uint8_t"
                                                        and field.type == FD.TYPE_BYTES):
            shape = (DYNAMIC,)
        else:
            shape = (1,)
        self.advice_spec = TensorSpec(advice_field, dtype, shape)

    def _handler(self, iface):
        service, name = self.method[1:].split("/")

        def handle(request, context):
            return iface._handle_request(request, context, self._convert)

        return grpc.method_handlers_generic_handler(service, {
            name: grpc.unary_unary_rpc_method_handler(
                handle, request_deserializer=self.request_class.FromString,
                response_serializer=self.reply_class.SerializeToString)})

    def _convert(self, request):
        feats = flatten_message(request)
        specs = tuple(s for _, s, _ in feats)
        values = {n: v for n, _, v in feats}
        obs = GrpcObservation(0, None, specs, self.advice_spec, values=values)
        obs.session = ""
        return obs

    def _encode_reply(self, obs, advice):
        spec = self.advice_spec
        data = coerce(spec, advice, "advice")
        reply = self.reply_class()
        parts = self.advice_field.split(".")
        msg = reply
        for part in parts[:-1]:
            name, _, idx = part.partition("[")
            sub = getattr(msg, name)
            if idx:
                i = int(idx.rstrip("]"))
                while len(sub) <= i:
                    sub.add()
                msg = sub[i]
            else:
                msg = sub
        leaf = parts[-1]
        field = msg.DESCRIPTOR.fields_by_name[leaf]
        if spec.is_string:
            setattr(msg, leaf, data.decode("utf-8"))
        elif field.type == FD.TYPE_BYTES:
            setattr(msg, leaf, data.tobytes())
        elif _is_repeated(field):
            rep = getattr(msg, leaf)
            del rep[:]
            rep.extend(data.tolist())
        else:
            setattr(msg, leaf, data.tolist()[0])
        return reply


def load_proto(proto_file, import_paths=None):
    """Compiles ``proto_file`` with grpcio-tools (into a private temporary
    directory) and returns its ``_pb2`` module."""
    from grpc_tools import protoc

    proto_file = os.path.abspath(proto_file)
    if not os.path.isfile(proto_file):
        raise FileNotFoundError(proto_file)
    paths = [os.path.abspath(p) for p in (import_paths or [os.path.dirname(proto_file)])]
    rel = None
    for p in paths:
        if proto_file.startswith(p + os.sep):
            rel = os.path.relpath(proto_file, p)
            break
    if rel is None:
        raise MLBridgeError(f"{proto_file} is not below an import path ({', '.join(paths)})")
    module = rel[:-len(".proto")].replace(os.sep, ".") + "_pb2"
    with _load_lock:
        if module in sys.modules:
            return sys.modules[module]
        out = tempfile.mkdtemp(prefix="mlbridge-proto-")
        include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
        args = ["grpc_tools.protoc"] + [f"-I{p}" for p in paths] + [
            f"-I{include}", f"--python_out={out}", rel]
        if protoc.main(args) != 0:
            raise MLBridgeError(f"cannot compile {proto_file} (grpc_tools.protoc failed)")
        sys.path.insert(0, out)
        try:
            return importlib.import_module(module)
        finally:
            sys.path.remove(out)
