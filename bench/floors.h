//===- bench/floors.h - Physical floors of the transports ------------------===//
//
// A floor is what moving the same request bytes costs with nothing else in
// the way: a second C++ process that receives the tensor bytes and answers
// 4 bytes, with no SerDes, no Python and no model. Each transport is
// measured twice, once with both ends sleeping in the kernel between
// messages (Blocking) and once with both ends polling (Spinning); the
// benchmark keeps the faster of the two per size, so the floor holds on an
// idle machine (where waking a sleeping reader costs tens of µs) as well as
// on a loaded one (where spinning steals the peer's CPU).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_BENCH_FLOORS_H
#define MLBRIDGE_BENCH_FLOORS_H

#include <memory>
#include <string>
#include <vector>

namespace bench {

enum class Wait { Blocking, Spinning };
const char *waitName(Wait W);

class TransportFloor {
public:
  virtual ~TransportFloor();
  /// One round trip: Payload to the peer process, 4 bytes back. Returns
  /// the elapsed microseconds; dies if the peer is gone.
  virtual double once(const std::vector<char> &Payload) = 0;
};

/// Two FIFOs (1 MiB pipe buffers, as the pipe runner asks for): an 8-byte
/// length and the payload out, 4 bytes back. Spinning: non-blocking reads
/// retried until data arrives.
std::unique_ptr<TransportFloor> makeFifoFloor(Wait W);

/// A shared mapping: the payload memcpy'd in, a sequence number bumped,
/// 4 bytes back the same way. Blocking: futex wait/wake; Spinning: both
/// ends poll the sequence numbers.
std::unique_ptr<TransportFloor> makeShmFloor(Wait W, size_t MaxBytes);

#ifdef MLBRIDGE_BENCH_GRPC
/// A raw gRPC unary call (generic stub, bytes in, 4 bytes out) to a C++
/// callback service in another process (`Self --grpc-floor-server`) over
/// loopback TCP. Blocking: the client waits on a callback; Spinning: the
/// client polls its completion queue with a zero deadline.
std::unique_ptr<TransportFloor> makeGrpcFloor(Wait W, const std::string &Self);
/// The server process; serves until its stdin reaches EOF.
int grpcFloorServerMain();
#endif

} // namespace bench

#endif // MLBRIDGE_BENCH_FLOORS_H
