"""The Protobuf SerDes over named pipes: a C++ PipeModelRunner with
SerDesKind::Protobuf against PipeCompilerInterface(serdes="protobuf"),
every dtype."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import grpc_helpers as H  # noqa: E402

from mlbridge import PipeCompilerInterface  # noqa: E402


def test_every_type_over_pipes(procs):
    with PipeCompilerInterface(serdes="protobuf", timeout=20) as iface:
        proc = procs.spawn(H.compiler_cmd("--base", iface.base, "--scenario", "pipe-types"),
                           text=True)
        served = iface.serve(H.echo, sessions=1, timeout=20)
        H.check_every_type_echoed(proc)
    assert served == 12
