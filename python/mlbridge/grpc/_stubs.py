"""Generates the Python stubs of proto/mlbridge.proto into ``_generated/``.

Run by the CMake build, by ``scripts/install-deps.sh`` and by ``pip install
./python`` (python/setup.py); never imported by the package at run time.
Uses the ``grpcio-tools`` of the running interpreter, which matches its
``protobuf`` runtime (python/requirements/grpc.txt pins both)::

    python -m mlbridge.grpc._stubs [--proto-dir DIR] [--out DIR]

The modules are written to a temporary directory and moved into place, so
two builds running at once never leave a half-written file.
"""

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

PROTO_NAME = "mlbridge.proto"
PACKAGE = "mlbridge.grpc._generated"
HERE = Path(__file__).resolve().parent


def default_proto_dir():
    """``<repo>/proto`` when running from a source checkout."""
    return HERE.parents[2] / "proto"


def proto_digest(proto_dir):
    return hashlib.sha256((Path(proto_dir) / PROTO_NAME).read_bytes()).hexdigest()


def generate(proto_dir=None, out_dir=None):
    """Writes mlbridge_pb2.py, mlbridge_pb2_grpc.py, __init__.py and
    PROTO_SHA256 into ``out_dir`` (default: ``_generated`` next to this file)."""
    from grpc_tools import protoc  # grpcio-tools: a build-time dependency

    proto_dir = Path(proto_dir or default_proto_dir()).resolve()
    out_dir = Path(out_dir or HERE / "_generated").resolve()
    proto = proto_dir / PROTO_NAME
    if not proto.is_file():
        raise FileNotFoundError(f"{proto} not found")
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".stubs-", dir=out_dir.parent))
    try:
        # Map the proto to a virtual path inside the package, so the
        # generated grpc module imports "mlbridge.grpc._generated.mlbridge_pb2".
        virtual = PACKAGE.replace(".", "/")
        rc = protoc.main([
            "grpc_tools.protoc",
            f"-I{virtual}={proto_dir}",
            f"-I{include}",
            f"--python_out={tmp}",
            f"--grpc_python_out={tmp}",
            f"{virtual}/{PROTO_NAME}",
        ])
        if rc != 0:
            raise RuntimeError(f"grpc_tools.protoc failed ({rc}) on {proto}")
        src = tmp / virtual
        (src / "__init__.py").write_text(
            '"""Generated from proto/mlbridge.proto; do not edit."""\n')
        (src / "PROTO_SHA256").write_text(proto_digest(proto_dir) + "\n")
        out_dir.mkdir(exist_ok=True)
        for name in ("mlbridge_pb2.py", "mlbridge_pb2_grpc.py", "__init__.py",
                     "PROTO_SHA256"):
            os.replace(src / name, out_dir / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--proto-dir", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    try:
        out = generate(args.proto_dir, args.out)
    except Exception as e:  # a build step: one clear line, non-zero exit
        print(f"mlbridge.grpc._stubs: {e}", file=sys.stderr)
        return 1
    print(f"mlbridge.grpc._stubs: wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
