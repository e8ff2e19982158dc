"""Make the in-tree package importable without installing it; fixtures
shared by several test modules."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS_DIR = os.path.dirname(HERE)  # build_components.py
PYTHON_DIR = os.path.abspath(os.path.join(HERE, "..", "..", "python"))

for path in (PYTHON_DIR, TESTS_DIR, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)


@pytest.fixture(params=["native", "grpcio"])
def server(request, monkeypatch):
    """The gRPC inference server every interface of a test uses (modules of
    gRPC tests apply it to all their tests with ``usefixtures``)."""
    from build_components import built_components
    if request.param == "native" and not built_components()["grpc_python_core"]:
        pytest.skip("the build says component 'grpc_python_core' is off "
                    "(sanitizer builds leave the Python extension out)")
    monkeypatch.setenv("MLBRIDGE_GRPC_SERVER", request.param)
    return request.param
