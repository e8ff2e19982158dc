"""The generated stubs (``pb2``, ``pb2_grpc``), with a clear error when they
are missing or were generated from another version of the proto."""

from pathlib import Path

from ..errors import MLBridgeError

_HERE = Path(__file__).resolve().parent


def _missing(detail):
    return ImportError(
        f"mlbridge.grpc: {detail}. Generate the stubs with a build "
        f"(cmake --build <dir>), scripts/install-deps.sh, "
        f"`python -m mlbridge.grpc._stubs`, or install with `pip install ./python`.")


try:
    import grpc  # noqa: F401
    import google.protobuf  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(f"mlbridge.grpc needs grpcio and protobuf "
                      f"(pip install -r python/requirements/grpc.txt): {e}") from None

try:
    from ._generated import mlbridge_pb2 as pb2
    from ._generated import mlbridge_pb2_grpc as pb2_grpc
except ImportError as e:
    raise _missing(f"the generated stubs cannot be imported ({e})") from None


def _check_fresh():
    """In a source checkout, stubs older than proto/mlbridge.proto are an error."""
    stamp = _HERE / "_generated" / "PROTO_SHA256"
    proto = _HERE.parents[2] / "proto" / "mlbridge.proto"
    if not proto.is_file() or not stamp.is_file():
        return
    import hashlib
    if stamp.read_text().strip() != hashlib.sha256(proto.read_bytes()).hexdigest():
        raise _missing(f"the generated stubs are older than {proto}")


_check_fresh()

__all__ = ["pb2", "pb2_grpc", "MLBridgeError"]
