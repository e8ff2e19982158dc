"""A fault-injecting fake compiler over gRPC (tests only), in either mode:

  inference  a client of the model's ModelService at ADDRESS: requests
             {"i": k} for k = 0, 1, 2 (context "f<k>"), then EndSession
  training   serves mlbridge.v1.CompilerService on 127.0.0.1:0 (prints its
             address): hands the trainer observations {"i": k} one at a
             time, then reports the end of the session

and checks every answer is 2 k (exit 3 otherwise), except that at one step
it injects a fault:

  steps   open (connected / listening, nothing sent) | first (the first
          request) | observation (the second request) | reply (while the
          model answers the second request) | close (instead of ending
          the session)
  faults  kill (SIGKILL itself, right after sending) | stop (SIGSTOP
          itself) | truncate (the request's bytes cut in half, then exits)
          | duplicate (the step's message twice; training: an answered
          observation handed out again) | giveup (inference reply: the
          compiler stops waiting for the answer, then goes on)

    python fault_injecting_grpc_compiler.py inference ADDRESS STEP FAULT
    python fault_injecting_grpc_compiler.py training - STEP FAULT
"""

import os
import sys
import threading
import time
from concurrent import futures

import grpc
import numpy as np

from fault_matrix import FAKE_PATIENCE_S, inject_into_self
from mlbridge import TensorSpec
from mlbridge.grpc._proto import pb2, pb2_grpc
from mlbridge.grpc.tensors import decode_advice, spec_to_pb, tensor_to_pb

FEATURE = TensorSpec("i", "int64_t", [1])
ADVICE = TensorSpec("twice", "int64_t", [1])
COUNT = 3
SESSION = f"fault-injecting-{os.getpid()}"


def observation(k, id=0):
    obs = pb2.Observation(session=SESSION, context=f"f{k}", index=0, id=id)
    tensor_to_pb(FEATURE, k, obs.features.add(), "feature")
    spec_to_pb(ADVICE, obs.advice)
    return obs


def is_right(advice, k):
    return int(np.ravel(decode_advice(advice, ADVICE, 1 << 20))[0]) == 2 * k


def step_of(k):
    return "first" if k == 0 else "observation"


def freeze_or_die(fault):
    if fault in ("kill", "stop"):
        inject_into_self(fault, 0)


def infer(address, step, fault):
    channel = grpc.insecure_channel(address)
    grpc.channel_ready_future(channel).result(timeout=FAKE_PATIENCE_S)
    stub = pb2_grpc.ModelServiceStub(channel)
    if step == "open":
        freeze_or_die(fault)
    for k in range(COUNT):
        request = observation(k)
        if step == step_of(k) and fault == "truncate":
            raw = channel.unary_unary("/mlbridge.v1.ModelService/Evaluate")
            try:
                raw(request.SerializeToString()[:request.ByteSize() // 2],
                    timeout=FAKE_PATIENCE_S)
            except grpc.RpcError:
                return 0  # refused, as it must be
            return 4
        if step == step_of(k) and fault == "duplicate":
            calls = [stub.Evaluate.future(request, timeout=FAKE_PATIENCE_S) for _ in range(2)]
            if not all(is_right(c.result(), k) for c in calls):
                return 3
            continue
        if step == "reply" and k == 1 and fault == "giveup":
            try:  # a deadline too short for any answer: the compiler gives up
                stub.Evaluate(request, timeout=0.001)
            except grpc.RpcError:
                pass
            continue
        call = stub.Evaluate.future(request, timeout=FAKE_PATIENCE_S)
        if step == step_of(k) or (step == "reply" and k == 1):
            freeze_or_die(fault)  # with the request on its way
        if not is_right(call.result(), k):
            return 3
    if step == "close":
        freeze_or_die(fault)  # instead of EndSession
    end = pb2.SessionEnd(session=SESSION)
    for _ in range(2 if step == "close" and fault == "duplicate" else 1):
        stub.EndSession(end, timeout=FAKE_PATIENCE_S)
    return 0


class FaultInjectingCompilerService(pb2_grpc.CompilerServiceServicer):
    """One observation pending at a time, like GrpcModelRunner in training
    mode; ``done`` is set with the exit status."""

    def __init__(self, step, fault):
        self.step, self.fault = step, fault
        self.lock = threading.Lock()
        self.k = 0               # the observation pending (COUNT: the session ended)
        self.faulted = False     # the fault is injected once
        self.replay = None       # duplicate: an answered observation to hand out again
        self.done = threading.Event()
        self.status = 0

    def finish(self, status):
        self.status = status
        self.done.set()

    def fault_here(self, here):
        if self.step != here or self.faulted:
            return False
        self.faulted = True
        return True

    def GetObservation(self, request, context):
        with self.lock:
            if self.replay is not None:
                k, self.replay = self.replay, None
                return pb2.ObservationReply(observation=observation(k, id=k + 1))
            k = self.k
            if k == COUNT:
                if self.fault_here("close"):
                    freeze_or_die(self.fault)  # instead of reporting the end
                self.finish(0)
                return pb2.ObservationReply(session_end=pb2.SessionEnd(session=SESSION))
            obs = observation(k, id=k + 1)
            if self.fault != "duplicate" and self.fault_here(step_of(k)):
                if self.fault == "truncate":
                    obs.features[0].data = obs.features[0].data[:4]
                    self.finish(0)
                freeze_or_die(self.fault)
            return pb2.ObservationReply(observation=obs)

    def SendAction(self, action, context):
        with self.lock:
            k = self.k
            if k == COUNT or action.id != k + 1 or action.session != SESSION:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                              f"observation {action.id} of session {action.session!r} is "
                              f"not awaiting an action")
            if k == 1 and self.fault_here("reply"):
                freeze_or_die(self.fault)  # the action came: gone before taking it
            if not is_right(action.advice, k):
                self.finish(3)
            self.k += 1
            if self.fault == "duplicate" and self.fault_here(step_of(k)):
                self.replay = k
            return pb2.Empty()

    def EndEpisode(self, request, context):
        self.finish(0)
        return pb2.Empty()


def serve(step, fault):
    service = FaultInjectingCompilerService(step, fault)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb2_grpc.add_CompilerServiceServicer_to_server(service, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"127.0.0.1:{port}", flush=True)
    if step == "open":
        freeze_or_die(fault)
    service.done.wait(FAKE_PATIENCE_S)
    time.sleep(0.2)  # the last reply on its way
    server.stop(None)
    return service.status


if __name__ == "__main__":
    mode, address, step, fault = sys.argv[1:5]
    sys.exit(infer(address, step, fault) if mode == "inference" else serve(step, fault))
