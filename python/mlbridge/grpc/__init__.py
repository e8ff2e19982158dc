"""mlbridge.grpc: the model side of ML-Compiler-Bridge over gRPC.

Both directions of the paper, with the same ``evaluate()`` /
``populate_buffer()`` loop as pipes::

    from mlbridge.grpc import GrpcCompilerInterface

    # Inference mode: this process serves, compilers connect to it.
    with GrpcCompilerInterface("127.0.0.1:50051") as iface:
        while (obs := iface.evaluate()) is not None:
            iface.populate_buffer(int(obs["callee_size"][0] < 50))

    # Training mode: each compiler serves, this trainer drives them all.
    with GrpcCompilerInterface(mode="training",
                               compilers=["127.0.0.1:5001", "127.0.0.1:5002"]) as iface:
        iface.serve(policy)

In inference mode the server is the C++ server core
(``mlbridge_grpc_native``, built by CMake into ``<build>/python``) when it
can be imported, else grpcio's (``iface.server_kind`` says which; see
docs/grpc.md).

Also: the "protobuf" SerDes for pipes (``mlbridge.serdes.get("protobuf")``),
user-defined services through reflection (:class:`UserService`,
:func:`load_proto`). Needs ``grpcio`` and ``protobuf``
(python/requirements/grpc.txt) and the stubs generated from
proto/mlbridge.proto by the build (CMake), ``scripts/install-deps.sh`` or
``pip install ./python``. Everything is imported lazily, so ``import
mlbridge`` never needs gRPC.
"""

from .._lazy import lazy_attributes as _lazy_attributes

__all__ = [
    "GrpcCompilerInterface",
    "GrpcInferenceInterface",
    "GrpcTrainingInterface",
    "TlsFiles",
    "UserService",
    "load_proto",
    "pb2",
    "pb2_grpc",
    "DEFAULT_MAX_MESSAGE_BYTES",
]

__getattr__, __dir__ = _lazy_attributes(globals(), {
    "GrpcCompilerInterface": ".interface",
    "GrpcInferenceInterface": ".inference",
    "GrpcTrainingInterface": ".training",
    "TlsFiles": ".interface",
    "DEFAULT_MAX_MESSAGE_BYTES": ".interface",
    "UserService": ".user",
    "load_proto": ".user",
    "pb2": "._proto",
    "pb2_grpc": "._proto",
})
