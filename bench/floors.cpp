//===- bench/floors.cpp - Physical floors of the transports ----------------===//
#include "floors.h"
#include "bench_util.h"

#ifdef MLBRIDGE_BENCH_GRPC
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <future>
#endif

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace bench {

const char *waitName(Wait W) {
  return W == Wait::Blocking ? "blocking" : "spinning";
}

TransportFloor::~TransportFloor() = default;

namespace {

// ---- FIFO ---------------------------------------------------------------------
constexpr int kPipeBytes = 1 << 20;

class FifoFloor final : public TransportFloor {
public:
  explicit FifoFloor(Wait W) : Mode(W) {
    Dir = makeTmpDir("mlbridge-bench-fifo");
    const std::string A = Dir + "/a2b", B = Dir + "/b2a";
    if (::mkfifo(A.c_str(), 0600) || ::mkfifo(B.c_str(), 0600))
      die("mkfifo: " + std::string(std::strerror(errno)));
    std::fflush(nullptr);
    pid_t Pid = ::fork();
    if (Pid < 0)
      die("fork: " + std::string(std::strerror(errno)));
    if (Pid == 0)
      serve(A, B);
    Child.adopt(Pid);
    Out = ::open(A.c_str(), O_WRONLY);
    In = ::open(B.c_str(), O_RDONLY);
    if (Out < 0 || In < 0)
      die("open fifo: " + std::string(std::strerror(errno)));
    prepare(In, Out);
  }
  double once(const std::vector<char> &Payload) override {
    uint64_t Len = Payload.size();
    float Y;
    double T0 = nowUs();
    if (!writeAll(Out, &Len, 8) || !writeAll(Out, Payload.data(), Len) ||
        !readAll(In, &Y, 4)) // spins when In is non-blocking
      die("fifo floor: peer gone");
    return nowUs() - T0;
  }
  ~FifoFloor() override {
    ::close(Out);
    ::close(In);
    finish(Child, std::chrono::seconds(5));
    ::unlink((Dir + "/a2b").c_str());
    ::unlink((Dir + "/b2a").c_str());
  }

private:
  void prepare(int ReadFd, int WriteFd) {
    (void)::fcntl(ReadFd, F_SETPIPE_SZ, kPipeBytes);
    (void)::fcntl(WriteFd, F_SETPIPE_SZ, kPipeBytes);
    if (Mode == Wait::Spinning)
      ::fcntl(ReadFd, F_SETFL, ::fcntl(ReadFd, F_GETFL) | O_NONBLOCK);
  }
  [[noreturn]] void serve(const std::string &A, const std::string &B) {
    ::alarm(600); // never outlive a broken parent for long
    int R = ::open(A.c_str(), O_RDONLY), Wr = ::open(B.c_str(), O_WRONLY);
    prepare(R, Wr);
    std::vector<char> Buf;
    uint64_t Len;
    while (readAll(R, &Len, 8)) {
      Buf.resize(Len);
      if (!readAll(R, Buf.data(), Len))
        break;
      float Y = 0;
      if (!writeAll(Wr, &Y, 4))
        break;
    }
    ::_exit(0);
  }

  Wait Mode;
  mlbridge::ChildProcess Child;
  int Out = -1, In = -1;
  std::string Dir;
};

// ---- shared memory ----------------------------------------------------------------
long futex(std::atomic<uint32_t> *Word, int Op, uint32_t Val,
           const struct timespec *Timeout) {
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(Word), Op, Val,
                   Timeout, nullptr, 0);
}

struct alignas(64) ShmControl {
  alignas(64) std::atomic<uint32_t> Request{0};
  alignas(64) std::atomic<uint32_t> Reply{0};
  uint64_t Length = 0;
  float Answer = 0;
  std::atomic<uint32_t> Stop{0};
};
static_assert(std::atomic<uint32_t>::is_always_lock_free,
              "futex words must be plain 32-bit integers");

class ShmFloor final : public TransportFloor {
public:
  ShmFloor(Wait W, size_t MaxBytes) : Mode(W), Bytes(sizeof(ShmControl) + MaxBytes) {
    void *P = ::mmap(nullptr, Bytes, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (P == MAP_FAILED)
      die("mmap: " + std::string(std::strerror(errno)));
    Ctl = new (P) ShmControl;
    Data = static_cast<char *>(P) + sizeof(ShmControl);
    std::fflush(nullptr);
    const pid_t Parent = ::getpid();
    pid_t Pid = ::fork();
    if (Pid < 0)
      die("fork: " + std::string(std::strerror(errno)));
    if (Pid == 0)
      serve(Parent);
    Child.adopt(Pid);
  }
  double once(const std::vector<char> &Payload) override {
    double T0 = nowUs();
    std::memcpy(Data, Payload.data(), Payload.size());
    Ctl->Length = Payload.size();
    const uint32_t Seq = Ctl->Reply.load(std::memory_order_relaxed);
    post(Ctl->Request);
    if (!await(Ctl->Reply, Seq, Child.pid()))
      die("shm floor: peer gone");
    volatile float Y = Ctl->Answer;
    (void)Y;
    return nowUs() - T0;
  }
  ~ShmFloor() override {
    Ctl->Stop.store(1);
    post(Ctl->Request);
    finish(Child, std::chrono::seconds(5));
    ::munmap(Ctl, Bytes);
  }

private:
  void post(std::atomic<uint32_t> &Word) {
    Word.fetch_add(1, std::memory_order_seq_cst);
    if (Mode == Wait::Blocking)
      futex(&Word, FUTEX_WAKE, 1, nullptr);
  }
  /// Waits until Word != Seen; false if Other died meanwhile (checked
  /// every 100 ms of waiting).
  bool await(std::atomic<uint32_t> &Word, uint32_t Seen, pid_t Other) {
    for (unsigned Spins = 0;; ++Spins) {
      if (Word.load(std::memory_order_acquire) != Seen)
        return true;
      if (Mode == Wait::Spinning) {
        cpuRelax();
        if ((Spins & 0xfffff) != 0xfffff)
          continue;
      } else {
        struct timespec T = {0, 100 * 1000 * 1000};
        futex(&Word, FUTEX_WAIT, Seen, &T);
        if (Word.load(std::memory_order_acquire) != Seen)
          return true;
      }
      if (::kill(Other, 0) != 0)
        return false;
    }
  }
  [[noreturn]] void serve(pid_t Parent) {
    ::alarm(600);
    uint32_t Seen = 0;
    for (;;) {
      if (!await(Ctl->Request, Seen, Parent) || Ctl->Stop.load())
        ::_exit(0);
      Seen = Ctl->Request.load(std::memory_order_acquire);
      Ctl->Answer = 0;
      post(Ctl->Reply);
    }
  }

  Wait Mode;
  size_t Bytes;
  ShmControl *Ctl = nullptr;
  char *Data = nullptr;
  mlbridge::ChildProcess Child;
};

#ifdef MLBRIDGE_BENCH_GRPC
// ---- gRPC -----------------------------------------------------------------------
// The service answers every call with 4 bytes. No protobuf, no mlbridge.
class RawService final : public grpc::CallbackGenericService {
  grpc::ServerGenericBidiReactor *
  CreateReactor(grpc::GenericCallbackServerContext *) override {
    class Reactor final : public grpc::ServerGenericBidiReactor {
    public:
      Reactor() { StartRead(&Req); }
      void OnReadDone(bool Ok) override {
        if (!Ok) {
          Finish(grpc::Status::OK);
          return;
        }
        float Y = 0;
        grpc::Slice S(&Y, 4);
        Resp = grpc::ByteBuffer(&S, 1);
        StartWriteAndFinish(&Resp, grpc::WriteOptions(), grpc::Status::OK);
      }
      void OnDone() override { delete this; }

    private:
      grpc::ByteBuffer Req, Resp;
    };
    return new Reactor;
  }
};

constexpr int kGrpcMaxMessage = 64 << 20;
const char *const kRawMethod = "/bench.Raw/Call";

class GrpcFloor final : public TransportFloor {
public:
  GrpcFloor(Wait W, const std::string &Self) : Mode(W) {
    Server = spawnPiped({Self, "--grpc-floor-server"});
    std::string L = readLine(Server, std::chrono::seconds(30));
    if (L.rfind("port ", 0) != 0)
      die("raw gRPC server (floor) did not start");
    grpc::ChannelArguments A;
    A.SetMaxSendMessageSize(kGrpcMaxMessage);
    A.SetMaxReceiveMessageSize(kGrpcMaxMessage);
    Stub = std::make_unique<grpc::GenericStub>(grpc::CreateCustomChannel(
        "127.0.0.1:" + L.substr(5), grpc::InsecureChannelCredentials(), A));
  }
  double once(const std::vector<char> &Payload) override {
    double T0 = nowUs();
    grpc::Slice S(Payload.data(), Payload.size());
    grpc::ByteBuffer Req(&S, 1), Resp;
    grpc::ClientContext Ctx;
    Ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::Status St = Mode == Wait::Blocking ? callBlocking(Ctx, Req, Resp)
                                             : callSpinning(Ctx, Req, Resp);
    if (!St.ok())
      die("raw gRPC call: " + St.error_message());
    return nowUs() - T0;
  }
  ~GrpcFloor() override {
    Stub.reset();
    finish(Server, std::chrono::seconds(5)); // the server exits on stdin EOF
    Queue.Shutdown();
    void *Tag;
    bool Ok;
    while (Queue.Next(&Tag, &Ok)) {
    }
  }

private:
  grpc::Status callBlocking(grpc::ClientContext &Ctx, grpc::ByteBuffer &Req,
                            grpc::ByteBuffer &Resp) {
    std::promise<grpc::Status> Done;
    Stub->UnaryCall(&Ctx, kRawMethod, grpc::StubOptions(), &Req, &Resp,
                    [&](grpc::Status St) { Done.set_value(St); });
    return Done.get_future().get();
  }
  grpc::Status callSpinning(grpc::ClientContext &Ctx, grpc::ByteBuffer &Req,
                            grpc::ByteBuffer &Resp) {
    auto Call = Stub->PrepareUnaryCall(&Ctx, kRawMethod, Req, &Queue);
    Call->StartCall();
    grpc::Status St;
    int Tag = 1;
    Call->Finish(&Resp, &St, &Tag);
    for (;;) {
      void *Got = nullptr;
      bool Ok = false;
      auto R = Queue.AsyncNext(&Got, &Ok, gpr_time_0(GPR_CLOCK_MONOTONIC));
      if (R == grpc::CompletionQueue::GOT_EVENT && Got == &Tag)
        return St;
      if (R == grpc::CompletionQueue::SHUTDOWN)
        return grpc::Status(grpc::StatusCode::CANCELLED, "queue shut down");
    }
  }

  Wait Mode;
  mlbridge::ChildProcess Server;
  std::unique_ptr<grpc::GenericStub> Stub;
  grpc::CompletionQueue Queue;
};
#endif

} // namespace

std::unique_ptr<TransportFloor> makeFifoFloor(Wait W) {
  return std::make_unique<FifoFloor>(W);
}
std::unique_ptr<TransportFloor> makeShmFloor(Wait W, size_t MaxBytes) {
  return std::make_unique<ShmFloor>(W, MaxBytes);
}

#ifdef MLBRIDGE_BENCH_GRPC
std::unique_ptr<TransportFloor> makeGrpcFloor(Wait W, const std::string &Self) {
  return std::make_unique<GrpcFloor>(W, Self);
}

int grpcFloorServerMain() {
  RawService Svc;
  int Port = 0;
  grpc::ServerBuilder B;
  B.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &Port);
  B.SetMaxReceiveMessageSize(kGrpcMaxMessage);
  B.RegisterCallbackGenericService(&Svc);
  std::unique_ptr<grpc::Server> Server = B.BuildAndStart();
  if (!Server || !Port)
    return 1;
  std::printf("port %d\n", Port);
  std::fflush(stdout);
  char C;
  while (::read(0, &C, 1) > 0) {
  }
  Server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return 0;
}
#endif

} // namespace bench
