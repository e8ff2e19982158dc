"""A user-defined .proto through reflection: the C++ compiler fills
usertest.LoopFeatures by field name (nested, repeated, string, indexed
repeated messages) from a .proto loaded at run time, and the Python model
serves usertest.LoopOptimizer/Advise from the same file."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import grpc_helpers as H  # noqa: E402

from mlbridge.grpc import GrpcCompilerInterface, UserService, load_proto  # noqa: E402


def test_user_defined_service(procs):
    pb = load_proto(str(H.USER_PROTO))
    svc = UserService("/usertest.LoopOptimizer/Advise", pb.LoopFeatures, pb.LoopAdvice,
                      advice_field="decision.unroll")
    assert svc.advice_spec.dtype == "int32_t"
    seen = []
    with GrpcCompilerInterface(timeout=20, user_service=svc) as iface:
        proc = procs.spawn(H.compiler_cmd(
            "--address", iface.address, "--scenario", "user", "--proto", H.USER_PROTO,
            "--method", "/usertest.LoopOptimizer/Advise",
            "--request-type", "usertest.LoopFeatures", "--reply-type", "usertest.LoopAdvice",
            "--advice-field", "decision.unroll"), text=True)
        obs = iface.evaluate(timeout=20)
        seen.append(obs)
        iface.populate_buffer(int(obs["loop.trip_count"][0] // 250))
        lines, err = H.events(proc)
    assert proc.returncode == 0, err + str(lines)
    assert H.by_event(lines, "user") == [{"event": "user", "unroll": 4}]
    unknown = H.by_event(lines, "error")[0]
    assert unknown["where"] == "user-unknown" and unknown["code"] == "invalid-argument"
    assert "usertest.Loop has no field 'no_such_field'" in unknown["message"]
    obs = seen[0]
    assert obs["loop.body_size"].tolist() == [7]
    assert obs["weights"].tolist() == [0.5, 1.5, -2.0]
    assert obs["function"] == "main"
    assert obs["blocks[1].size"].tolist() == [12]
    assert obs["hot"].tolist() == [True]
    assert "ratio" not in obs  # optional and unset: absent, not 0
