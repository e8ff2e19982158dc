#!/usr/bin/env bash
# Generates the Python stubs of proto/mlbridge.proto into
# python/mlbridge/grpc/_generated with the project venv's grpcio-tools, so
# `PYTHONPATH=python` works without a CMake build. Idempotent: does nothing
# when the stubs match the proto.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=.venv/bin/python
gen=python/mlbridge/grpc/_generated
want=$(sha256sum proto/mlbridge.proto | cut -d' ' -f1)
if [[ -f $gen/PROTO_SHA256 && $(cat "$gen/PROTO_SHA256") == "$want" \
      && -f $gen/mlbridge_pb2.py && -f $gen/mlbridge_pb2_grpc.py ]]; then
  exit 0
fi
echo "install-deps: generating the Python gRPC stubs"
PYTHONPATH=python PYTHONDONTWRITEBYTECODE=1 "$py" -m mlbridge.grpc._stubs
