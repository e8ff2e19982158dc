#include "transport/shm_channel.h"

#include "transport/shm_layout.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace mlbridge {

using namespace shm_layout;

namespace {

// A sleeping wait rechecks the ring this often even without a wake-up: a
// safety net should a wake-up ever be lost (it costs no measurable CPU).
constexpr int kSleepSliceMs = 50;

/// The hello datagram the model sends with its three descriptors.
struct Hello {
  uint64_t Magic;
  uint32_t Version;
  uint32_t Flags;
  uint64_t Capacity;
};
static_assert(sizeof(Hello) == kHelloBytes, "the hello of docs/shm.md");

uint64_t *word(char *Region, size_t Offset) {
  return reinterpret_cast<uint64_t *>(Region + Offset);
}
uint64_t loadAcquire(char *Region, size_t Offset) {
  return __atomic_load_n(word(Region, Offset), __ATOMIC_ACQUIRE);
}
void storeRelease(char *Region, size_t Offset, uint64_t V) {
  __atomic_store_n(word(Region, Offset), V, __ATOMIC_RELEASE);
}
// Store then load with a full barrier between them (the sleeping-flag
// handshake: a store of one side must be seen before its next load).
void storeFenced(char *Region, size_t Offset, uint64_t V) {
  __atomic_store_n(word(Region, Offset), V, __ATOMIC_SEQ_CST);
}
uint64_t loadFenced(char *Region, size_t Offset) {
  return __atomic_load_n(word(Region, Offset), __ATOMIC_SEQ_CST);
}

void closeAll(const int *Fds, size_t N) {
  for (size_t I = 0; I < N; ++I)
    if (Fds[I] >= 0)
      ::close(Fds[I]);
}

/// Receives the hello and its descriptors, waiting until Until.
Status receiveHello(int Sock, const std::string &Path, Deadline Until,
                    Hello &H, int (&Fds)[3]) {
  for (;;) {
    struct pollfd P = {Sock, POLLIN, 0};
    int Ms = millisUntil(Until);
    if (Ms == 0)
      return Status(ErrorCode::Timeout,
                    "the model at '" + Path +
                        "' did not accept the connection before the deadline "
                        "(busy with another session?)");
    int R = ::poll(&P, 1, Ms);
    if (R < 0 && errno != EINTR)
      return Status(ErrorCode::IOError, "poll: " + errnoText(errno));
    if (R <= 0)
      continue;
    alignas(struct cmsghdr) char Control[CMSG_SPACE(sizeof(int) * 3)];
    struct iovec Iov = {&H, sizeof H};
    struct msghdr M = {};
    M.msg_iov = &Iov;
    M.msg_iovlen = 1;
    M.msg_control = Control;
    M.msg_controllen = sizeof Control;
    ssize_t N = ::recvmsg(Sock, &M, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (N < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    // A reset: the model closed its listener (exited) with us queued on it.
    if (N == 0 || (N < 0 && errno == ECONNRESET))
      return Status(ErrorCode::PeerClosed,
                    "the model closed '" + Path + "' before its hello");
    if (N < 0)
      return Status(ErrorCode::IOError,
                    "reading the model's hello on '" + Path +
                        "': " + errnoText(errno));
    size_t Got = 0;
    for (struct cmsghdr *C = CMSG_FIRSTHDR(&M); C; C = CMSG_NXTHDR(&M, C))
      if (C->cmsg_level == SOL_SOCKET && C->cmsg_type == SCM_RIGHTS) {
        size_t K = (C->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t I = 0; I < K; ++I) {
          int Fd;
          std::memcpy(&Fd, CMSG_DATA(C) + I * sizeof(int), sizeof Fd);
          if (Got < 3)
            Fds[Got++] = Fd;
          else
            ::close(Fd);
        }
      }
    if (size_t(N) != sizeof H || Got != 3 || (M.msg_flags & MSG_CTRUNC))
      return Status(ErrorCode::Malformed,
                    "the peer at '" + Path +
                        "' is not an mlbridge shared-memory model (bad hello)");
    return Status::ok();
  }
}

} // namespace

Expected<std::unique_ptr<MessageChannel>>
ShmChannel::connect(const std::string &Path, Deadline Until,
                    std::chrono::microseconds Spin) {
  struct sockaddr_un Addr = {};
  Addr.sun_family = AF_UNIX;
  if (Path.empty() || Path.size() >= sizeof Addr.sun_path)
    return Status(ErrorCode::InvalidArgument,
                  "shared-memory socket path must have 1.." +
                      std::to_string(sizeof Addr.sun_path - 1) + " bytes: '" +
                      Path + "'");
  std::memcpy(Addr.sun_path, Path.c_str(), Path.size());

  // Non-blocking: a blocking connect() to a listener whose queue is full
  // waits in the kernel until the model accepts, whatever the deadline.
  // Here a full queue (EAGAIN), like a missing listener, is retried until
  // Until.
  const auto Start = Clock::now();
  std::chrono::microseconds Step(1000);
  int Sock = -1;
  for (;;) {
    Sock = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (Sock < 0)
      return Status(ErrorCode::IOError, "socket: " + errnoText(errno));
    if (::connect(Sock, reinterpret_cast<struct sockaddr *>(&Addr),
                  sizeof Addr) == 0)
      break;
    int E = errno;
    ::close(Sock);
    if (E != ENOENT && E != ECONNREFUSED && E != EAGAIN && E != EINTR)
      return Status(ErrorCode::IOError,
                    "cannot connect to '" + Path + "': " + errnoText(E));
    if (Clock::now() >= Until) {
      const std::string Waited = std::to_string(millisSince(Start));
      if (E == EAGAIN)
        return Status(ErrorCode::Timeout,
                      "the model at '" + Path +
                          "' accepted no connection within " + Waited +
                          " ms (its listen queue is full: busy with other "
                          "compilers, stopped or stuck)");
      return Status(ErrorCode::NotFound,
                    "no model listening at '" + Path + "' (waited " + Waited +
                        " ms); start the model side first");
    }
    backoff(Step, Until);
  }

  // Only a process of our own user may serve us.
  struct ucred Cred = {};
  socklen_t CredLen = sizeof Cred;
  if (::getsockopt(Sock, SOL_SOCKET, SO_PEERCRED, &Cred, &CredLen) != 0 ||
      Cred.uid != ::getuid()) {
    ::close(Sock);
    return Status(ErrorCode::IOError, "the process listening at '" + Path +
                                          "' belongs to another user");
  }

  Hello H = {};
  int Fds[3] = {-1, -1, -1};
  if (Status S = receiveHello(Sock, Path, Until, H, Fds); !S.isOk()) {
    closeAll(Fds, 3);
    ::close(Sock);
    return S;
  }
  auto Fail = [&](ErrorCode C, const std::string &Why) {
    closeAll(Fds, 3);
    ::close(Sock);
    return Status(C, "shared-memory channel '" + Path + "': " + Why);
  };
  if (H.Magic != kMagic || H.Version != kVersion)
    return Fail(ErrorCode::Malformed,
                "unsupported hello (version " + std::to_string(H.Version) + ")");
  if (H.Capacity < kMinCapacity || H.Capacity > kMaxCapacity ||
      H.Capacity % 8 != 0)
    return Fail(ErrorCode::Malformed,
                "invalid ring capacity " + std::to_string(H.Capacity));
  const size_t RegionBytes = kControlBytes + 2 * size_t(H.Capacity);
  struct stat St;
  if (::fstat(Fds[0], &St) != 0 || uint64_t(St.st_size) != RegionBytes)
    return Fail(ErrorCode::Malformed,
                "the memory file does not have the announced size");
  void *P = ::mmap(nullptr, RegionBytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                   Fds[0], 0);
  if (P == MAP_FAILED)
    return Fail(ErrorCode::IOError, "mmap: " + errnoText(errno));
  ::close(Fds[0]);
  char *Region = static_cast<char *>(P);
  if (loadAcquire(Region, kMagicOffset) != kMagic ||
      loadAcquire(Region, kCapacityOffset) != H.Capacity ||
      loadAcquire(Region, kRequestHead) || loadAcquire(Region, kRequestTail) ||
      loadAcquire(Region, kReplyHead) || loadAcquire(Region, kReplyTail) ||
      loadAcquire(Region, kCompilerSleeping)) {
    ::munmap(P, RegionBytes);
    Fds[0] = -1;
    return Fail(ErrorCode::Malformed,
                "the control block is not a fresh one matching the hello");
  }
  return std::unique_ptr<MessageChannel>(new ShmChannel(
      Path, Sock, Fds[1], Fds[2], Region, RegionBytes, H.Capacity, Spin));
}

ShmChannel::ShmChannel(std::string Path, int Socket, int WakeModel,
                       int WakeSelf, char *Region, size_t RegionBytes,
                       uint64_t Capacity, std::chrono::microseconds Spin)
    : Path(std::move(Path)), Socket(Socket), WakeModel(WakeModel),
      WakeSelf(WakeSelf), Region(Region), RegionBytes(RegionBytes),
      Capacity(Capacity), Spinner(Spin) {}

ShmChannel::~ShmChannel() {
  ::close(Socket); // the model sees the hang-up: end of session
  ::close(WakeModel);
  ::close(WakeSelf);
  ::munmap(Region, RegionBytes);
}

Status ShmChannel::peerGone() const {
  return Status(ErrorCode::PeerClosed,
                "the model closed the shared-memory channel '" + Path +
                    "' (process exited?)");
}

Status ShmChannel::write(const WireMessage &Msg, Deadline Until) {
  const uint64_t Bytes = Msg.totalSize();
  if (Bytes > maxMessageBytes())
    return Status(ErrorCode::TooLarge,
                  "message of " + std::to_string(Bytes) +
                      " bytes exceeds the shared-memory ring of '" + Path +
                      "' (" + std::to_string(maxMessageBytes()) +
                      " bytes); give the model side a larger capacity");
  const uint64_t Need = kLengthBytes + padTo8(Bytes);
  uint64_t Head = loadAcquire(Region, kRequestHead);
  uint64_t Offset = Head % Capacity;
  // Wrap when the record does not fit before the end -- and when the model
  // has read everything and the record fits before the marker, so requests
  // keep reusing the same pages instead of walking through the whole ring
  // (the process's RSS stays flat).
  const bool Empty = loadAcquire(Region, kRequestTail) == Head;
  const uint64_t Skip = Offset + Need > Capacity || (Empty && Need <= Offset)
                            ? Capacity - Offset
                            : 0;
  // Room: the model frees what it has read when it answers, so waiting is
  // rare (a backlog of contexts); poll its progress and its liveness.
  while (!Empty &&
         Head + Skip + Need - loadAcquire(Region, kRequestTail) > Capacity) {
    int Ms = millisUntil(Until);
    if (Ms == 0)
      return Status(ErrorCode::Timeout,
                    "the model stopped reading '" + Path +
                        "' (write deadline passed)");
    struct pollfd P = {Socket, POLLIN, 0};
    if (::poll(&P, 1, 1) > 0)
      return peerGone();
  }
  char *Ring = Region + kControlBytes;
  if (Skip) {
    std::memcpy(Ring + Offset, &kWrapMarker, kLengthBytes);
    Head += Skip;
    Offset = 0;
  }
  std::memcpy(Ring + Offset, &Bytes, 8);
  char *To = Ring + Offset + 8;
  Msg.ranges(Ranges);
  for (const ByteRange &R : Ranges) {
    std::memcpy(To, R.Data, R.Size);
    To += R.Size;
  }
  storeFenced(Region, kRequestHead, Head + Need);
  if (!loadFenced(Region, kModelSleeping))
    return Status::ok(); // the model is polling the ring: no syscall
  const uint64_t One = 1;
  if (::write(WakeModel, &One, 8) != 8 && errno != EAGAIN)
    return Status(ErrorCode::IOError, "waking the model: " + errnoText(errno));
  return Status::ok();
}

Status ShmChannel::awaitReply() {
  if (loadAcquire(Region, kReplyHead) != Read)
    return Status::ok();
  const auto Start = Clock::now();
  SpinPacer Pacer(Start, std::min(Start + Spinner.next(), ReadDeadline));
  do {
    if (loadAcquire(Region, kReplyHead) != Read) {
      Spinner.update(std::chrono::duration_cast<SpinBudget::Micros>(
          Clock::now() - Start));
      return Status::ok();
    }
  } while (Pacer.pause());
  // Sleep: announce it, then look once more (the model checks the flag
  // after publishing, so one of the two sees the other).
  storeFenced(Region, kCompilerSleeping, 1);
  Status Result = Status::ok();
  for (;;) {
    if (loadFenced(Region, kReplyHead) != Read)
      break;
    struct pollfd P[2] = {{WakeSelf, POLLIN, 0}, {Socket, POLLIN, 0}};
    int Ms = millisUntil(ReadDeadline);
    if (Ms == 0) {
      Result = Status(ErrorCode::Timeout, "no reply from the model on '" +
                                              Path + "' before the deadline");
      break;
    }
    int R = ::poll(P, 2, std::min(Ms, kSleepSliceMs));
    if (R < 0 && errno != EINTR) {
      Result = Status(ErrorCode::IOError, "poll: " + errnoText(errno));
      break;
    }
    if (R > 0 && (P[0].revents & POLLIN)) {
      uint64_t Count;
      (void)!::read(WakeSelf, &Count, 8); // reset; the ring tells what came
    }
    if (loadAcquire(Region, kReplyHead) != Read)
      break;
    if (R > 0 && P[1].revents) {
      Result = peerGone();
      break;
    }
  }
  storeRelease(Region, kCompilerSleeping, 0);
  Spinner.update(
      std::chrono::duration_cast<SpinBudget::Micros>(Clock::now() - Start));
  return Result;
}

Status ShmChannel::nextRecord() {
  const auto *Ring =
      reinterpret_cast<const unsigned char *>(Region + kControlBytes + Capacity);
  // Each round waits (against the deadline) unless the model published
  // past Read; a published wrap marker moves Read past it. So the loop
  // never turns without looking at the clock or making progress.
  for (;;) {
    if (Status S = awaitReply(); !S.isOk())
      return S;
    const RingRecord R =
        findRecord(Ring, Capacity, Read, loadAcquire(Region, kReplyHead));
    if (R.State == RingRecord::Kind::Empty) {
      Read = R.Start;
      continue;
    }
    if (R.State == RingRecord::Kind::Corrupt)
      return Status(ErrorCode::Malformed,
                    "corrupt reply ring of '" + Path + "' at position " +
                        std::to_string(Read) + ": " + R.Problem);
    Read = R.Start;
    InRecord = true;
    RecordBytes = R.Length;
    Pos = reinterpret_cast<const char *>(Ring) + Read % Capacity + kLengthBytes;
    End = Pos + R.Length;
    return Status::ok();
  }
}

Status ShmChannel::readExact(void *Dst, size_t N) {
  if (!InRecord)
    if (Status S = nextRecord(); !S.isOk())
      return S;
  if (size_t(End - Pos) < N)
    return Status(ErrorCode::Malformed,
                  "the model's reply (" + std::to_string(RecordBytes) +
                      " bytes) is shorter than the advice needs");
  std::memcpy(Dst, Pos, N);
  Pos += N;
  return Status::ok();
}

Status ShmChannel::readLine(std::string &Line, size_t MaxBytes) {
  if (!InRecord)
    if (Status S = nextRecord(); !S.isOk())
      return S;
  const size_t Avail = size_t(End - Pos);
  const char *NL =
      static_cast<const char *>(std::memchr(Pos, '\n', std::min(Avail, MaxBytes + 1)));
  if (!NL)
    return Avail > MaxBytes
               ? Status(ErrorCode::TooLarge, "line from the model exceeds " +
                                                 std::to_string(MaxBytes) +
                                                 " bytes")
               : Status(ErrorCode::Malformed,
                        "the model's reply ends inside a line");
  Line.assign(Pos, NL);
  Pos = NL + 1;
  return Status::ok();
}

Status ShmChannel::endReply() {
  if (!InRecord)
    return Status::ok();
  const uint64_t Unread = uint64_t(End - Pos);
  InRecord = false;
  Read += kLengthBytes + padTo8(RecordBytes);
  storeRelease(Region, kReplyTail, Read);
  if (Unread)
    return Status(ErrorCode::Malformed,
                  "the model's reply has " + std::to_string(Unread) +
                      " bytes more than the advice");
  if (loadAcquire(Region, kReplyHead) != Read)
    return Status(ErrorCode::Malformed,
                  "the model sent more than one reply to one request");
  return Status::ok();
}

} // namespace mlbridge
