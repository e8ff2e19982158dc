"""Finds ``mlbridge_grpc_native``, the C++ gRPC server core (src/python_ext)
that :class:`~mlbridge.grpc.GrpcCompilerInterface` serves through in
inference mode (where it is looked for: :mod:`mlbridge._native`)."""

from .. import _native

MODULE = "mlbridge_grpc_native"


def load():
    """(module, None), or (None, why it is not available). Cached."""
    return _native.load(MODULE)
