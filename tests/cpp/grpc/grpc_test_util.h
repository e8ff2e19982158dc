//===- grpc_test_util.h - Fakes and helpers for the gRPC tests -*- C++ -*-===//
//
// FakeModelServer: an in-process mlbridge.v1.ModelService whose behaviour
// can be set to inject faults (slow, wrong dtype, error, empty reply).
// FakeGarbageServer: a TCP listener that answers every connection with
// bytes that are not HTTP/2. Both listen on 127.0.0.1 at a free port.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_TESTS_GRPC_TEST_UTIL_H
#define MLBRIDGE_TESTS_GRPC_TEST_UTIL_H

#include "mlbridge.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace mlbridge::testing {

namespace pb = ::mlbridge::v1;

/// The default policy: echo every feature's bytes back as the advice (the
/// advice dtype; the features concatenated).
inline pb::Advice echoPolicy(const pb::Observation &O) {
  pb::Advice A;
  auto *T = A.mutable_tensor();
  T->set_name(O.advice().name());
  T->set_dtype(O.advice().dtype());
  std::string Data;
  for (const pb::Tensor &F : O.features())
    if (F.dtype() == O.advice().dtype())
      Data += F.data();
  const int Size = O.advice().dtype() == pb::DTYPE_FLOAT || O.advice().dtype() == pb::DTYPE_INT32 ||
                           O.advice().dtype() == pb::DTYPE_UINT32
                       ? 4
                   : O.advice().dtype() == pb::DTYPE_DOUBLE || O.advice().dtype() == pb::DTYPE_INT64 ||
                           O.advice().dtype() == pb::DTYPE_UINT64
                       ? 8
                   : O.advice().dtype() == pb::DTYPE_INT16 || O.advice().dtype() == pb::DTYPE_UINT16
                       ? 2
                       : 1;
  T->add_shape(static_cast<int64_t>(Data.size() / Size));
  T->set_data(Data);
  return A;
}

class FakeModelServer final : public pb::ModelService::Service {
public:
  using Policy = std::function<pb::Advice(const pb::Observation &)>;

  explicit FakeModelServer(Policy P = echoPolicy,
                           std::shared_ptr<grpc::ServerCredentials> Creds =
                               grpc::InsecureServerCredentials())
      : P(std::move(P)) {
    grpc::ServerBuilder B;
    B.AddListeningPort("127.0.0.1:0", Creds, &Port);
    B.RegisterService(this);
    B.SetMaxReceiveMessageSize(64 << 20);
    B.SetMaxSendMessageSize(64 << 20);
    B.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    Server = B.BuildAndStart();
  }
  ~FakeModelServer() override { stop(); }

  void stop() {
    if (Server) {
      Server->Shutdown(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(200));
      Server->Wait();
      Server.reset();
    }
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(Port); }

  grpc::Status Evaluate(grpc::ServerContext *Ctx, const pb::Observation *Req,
                        pb::Advice *Reply) override {
    {
      std::lock_guard<std::mutex> L(M);
      Requests.push_back(*Req);
    }
    if (DelayMs > 0) {
      // Fault injection: a slow model (stops early if the call is gone).
      auto Until = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(DelayMs);
      while (std::chrono::steady_clock::now() < Until && !Ctx->IsCancelled())
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (StatusToReturn.error_code() != grpc::OK)
      return StatusToReturn;
    *Reply = P(*Req);
    return grpc::Status::OK;
  }

  grpc::Status EndSession(grpc::ServerContext *, const pb::SessionEnd *S,
                          pb::Empty *) override {
    std::lock_guard<std::mutex> L(M);
    Ended.push_back(S->session());
    return grpc::Status::OK;
  }

  std::vector<pb::Observation> requests() {
    std::lock_guard<std::mutex> L(M);
    return Requests;
  }
  std::vector<std::string> ended() {
    std::lock_guard<std::mutex> L(M);
    return Ended;
  }

  int Port = 0;
  Policy P;
  std::atomic<int> DelayMs{0};
  grpc::Status StatusToReturn = grpc::Status::OK;

private:
  std::unique_ptr<grpc::Server> Server;
  std::mutex M;
  std::vector<pb::Observation> Requests;
  std::vector<std::string> Ended;
};

/// Binds 127.0.0.1:0 to learn a free port, then releases it (for "no
/// server there" tests).
inline int freePort() {
  int Fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in A{};
  A.sin_family = AF_INET;
  A.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  A.sin_port = 0;
  ::bind(Fd, reinterpret_cast<sockaddr *>(&A), sizeof A);
  socklen_t Len = sizeof A;
  ::getsockname(Fd, reinterpret_cast<sockaddr *>(&A), &Len);
  ::close(Fd);
  return ntohs(A.sin_port);
}

/// A listening socket on 127.0.0.1 (holds a port; accepts nothing).
class PortHolder {
public:
  PortHolder() {
    Fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in A{};
    A.sin_family = AF_INET;
    A.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(Fd, reinterpret_cast<sockaddr *>(&A), sizeof A);
    ::listen(Fd, 4);
    socklen_t Len = sizeof A;
    ::getsockname(Fd, reinterpret_cast<sockaddr *>(&A), &Len);
    Port = ntohs(A.sin_port);
  }
  ~PortHolder() { ::close(Fd); }
  int Fd = -1;
  int Port = 0;
};

/// Fault injection: answers every TCP connection with garbage bytes.
class FakeGarbageServer {
public:
  FakeGarbageServer() {
    Thread = std::thread([this] { run(); });
  }
  ~FakeGarbageServer() {
    Stop = true;
    Thread.join();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(L.Port); }
  std::atomic<int> Connections{0};

private:
  void run() {
    while (!Stop) {
      pollfd P{L.Fd, POLLIN, 0};
      if (::poll(&P, 1, 20) <= 0)
        continue;
      int C = ::accept(L.Fd, nullptr, nullptr);
      if (C < 0)
        continue;
      ++Connections;
      static const char Junk[] = "\x17\x03\x03garbage, not HTTP/2 \xff\xfe\x00\x01"
                                 "HTTP/1.1 400 Bad Request\r\n\r\n";
      (void)!::write(C, Junk, sizeof Junk - 1);
      ::close(C);
    }
  }
  PortHolder L;
  std::atomic<bool> Stop{false};
  std::thread Thread;
};

/// A self-signed certificate for 127.0.0.1 / localhost, made with openssl
/// in a fresh temporary directory.
struct SelfSignedCert {
  std::string Dir, Cert, Key;
  bool Ok = false;
  SelfSignedCert() {
    char Tmpl[] = "/tmp/mlbridge-tls-XXXXXX";
    if (!::mkdtemp(Tmpl))
      return;
    Dir = Tmpl;
    Cert = Dir + "/cert.pem";
    Key = Dir + "/key.pem";
    std::string Cmd = std::string(MLBRIDGE_OPENSSL) +
                      " req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
                      " -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
                      Key + " -out " + Cert + " >/dev/null 2>&1";
    Ok = std::system(Cmd.c_str()) == 0;
  }
  ~SelfSignedCert() {
    if (!Dir.empty())
      (void)!std::system(("rm -rf " + Dir).c_str());
  }
};

inline double msSince(std::chrono::steady_clock::time_point T) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - T)
      .count();
}

} // namespace mlbridge::testing

#endif // MLBRIDGE_TESTS_GRPC_TEST_UTIL_H
