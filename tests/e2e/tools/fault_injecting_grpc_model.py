"""A fault-injecting fake model side over gRPC (tests only), in either mode:

  inference  serves mlbridge.v1.ModelService on 127.0.0.1:0 (prints its
             address), answering {"i": i} with 2 i
  training   a trainer driving the compiler's CompilerService at ADDRESS
             (GetObservation, SendAction of 2 i) until its session ends

except that at one step it injects a fault:

  steps   open (before serving / before the first call) | first (the
          session's first request: what a pipe sends as header, context
          and observation) | observation (a later request) | reply (the
          answer to the second request) | close (EndSession / after the
          last answer)
  faults  kill (SIGKILL itself) | stop (SIGSTOP itself) | delay (sleeps
          DELAY seconds, then goes on); at the reply also truncate (the
          tensor's data cut in half), wrongtype (int32 for int64), empty
          (neither advice nor error); training also duplicate (the action
          sent twice)

    python fault_injecting_grpc_model.py inference - STEP FAULT DELAY
    python fault_injecting_grpc_model.py training ADDRESS STEP FAULT DELAY

(ADDRESS "-": read it from stdin after printing "ready".)
"""

import struct
import sys
import time
from concurrent import futures

import grpc

from fault_matrix import FAKE_PATIENCE_S, inject_into_self
from mlbridge.grpc._proto import pb2, pb2_grpc
from mlbridge.grpc.tensors import encode_advice, observation_from_pb

MAX_BYTES = 1 << 20
COUNT = 3  # requests of the compiler's session (the matrix's "requests" scenario)
REPLY_FAULTS = ("truncate", "wrongtype", "empty", "duplicate")


class Faults:
    def __init__(self, step, fault, delay):
        self.step, self.fault, self.delay = step, fault, delay

    def at(self, here):
        if here == self.step and self.fault not in REPLY_FAULTS:
            inject_into_self(self.fault, self.delay)

    def request(self, index):
        """The step a request is: the first, or a later observation."""
        self.at("first" if index == 0 else "observation")

    def advice(self, observation, index):
        """The answer to request ``index``, spoilt at the reply step."""
        obs = observation_from_pb(observation, MAX_BYTES)
        advice = encode_advice(obs.advice_spec, 2 * int(obs["i"][0]))
        if index != 1 or self.step != "reply":
            return advice
        self.at("reply")
        if self.fault == "truncate":
            advice.tensor.data = advice.tensor.data[:4]
        elif self.fault == "wrongtype":
            advice.tensor.dtype = pb2.DTYPE_INT32
            advice.tensor.data = struct.pack("<i", 2 * int(obs["i"][0]))
        elif self.fault == "empty":
            advice = pb2.Advice()
        return advice


class FaultInjectingModelService(pb2_grpc.ModelServiceServicer):
    def __init__(self, faults):
        self.faults = faults
        self.requests = 0

    def Evaluate(self, request, context):
        index = self.requests
        self.requests += 1
        self.faults.request(index)
        return self.faults.advice(request, index)

    def EndSession(self, request, context):
        self.faults.at("close")
        return pb2.Empty()


def serve(faults):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb2_grpc.add_ModelServiceServicer_to_server(FaultInjectingModelService(faults), server)
    port = server.add_insecure_port("127.0.0.1:0")
    print(f"127.0.0.1:{port}", flush=True)
    faults.at("open")
    server.start()
    server.wait_for_termination(FAKE_PATIENCE_S)


def train(address, faults):
    print("ready", flush=True)
    if address == "-":
        address = sys.stdin.readline().strip()
    stub = pb2_grpc.CompilerServiceStub(grpc.insecure_channel(address))
    faults.at("open")
    for index in range(COUNT):
        reply = stub.GetObservation(pb2.ObservationRequest(), timeout=FAKE_PATIENCE_S,
                                    wait_for_ready=True)
        if reply.WhichOneof("result") != "observation":
            return 1
        faults.request(index)
        action = pb2.Action(id=reply.observation.id, session=reply.observation.session,
                            advice=faults.advice(reply.observation, index))
        try:
            stub.SendAction(action, timeout=FAKE_PATIENCE_S)
        except grpc.RpcError:
            # Refused (a spoilt action, or one past the deadline): hold on,
            # answering nothing more.
            time.sleep(FAKE_PATIENCE_S)
            return 0
        if index == 1 and faults.step == "reply" and faults.fault == "duplicate":
            try:
                stub.SendAction(action, timeout=FAKE_PATIENCE_S)
            except grpc.RpcError:
                pass  # refused: nothing awaits it any more
    faults.at("close")  # before learning that the session ended
    reply = stub.GetObservation(pb2.ObservationRequest(), timeout=FAKE_PATIENCE_S)
    return 0 if reply.WhichOneof("result") == "session_end" else 1


if __name__ == "__main__":
    mode, address, step, fault, delay = sys.argv[1:6]
    faults = Faults(step, fault, float(delay))
    sys.exit(serve(faults) if mode == "inference" else train(address, faults))
