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
        lines, err = H.events(proc)
    assert proc.returncode == 0, err + str(lines)
    echoed = {e["dtype"]: e["ok"] for e in H.by_event(lines, "echo")}
    assert set(echoed) == H.ALL_DTYPES and all(echoed.values()), echoed
    assert served == 12
