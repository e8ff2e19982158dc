#include "transport/fifo_channel.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

namespace mlbridge {

namespace {

constexpr size_t kReadBufferBytes = 64 * 1024;
constexpr int kPipeBytes = 1 << 20; // fewer wake-ups for large tensors

/// Whoever can write a FIFO can answer in the model's place: only a FIFO
/// of our own that neither group nor others may write is used. Read
/// permission is left alone: LLVM's interactive_host.py makes its FIFOs
/// with mode 0666, 0644 under the usual umask.
Status checkOwnFifo(const struct stat &St, const std::string &Path) {
  if (S_ISLNK(St.st_mode))
    return Status(ErrorCode::InvalidArgument,
                  "'" + Path + "' is a symbolic link; refusing to follow it "
                               "(give the FIFO's own path)");
  if (!S_ISFIFO(St.st_mode))
    return Status(ErrorCode::InvalidArgument,
                  "'" + Path + "' exists but is not a FIFO");
  if (St.st_uid != ::geteuid())
    return Status(ErrorCode::InvalidArgument,
                  "FIFO '" + Path + "' belongs to user " +
                      std::to_string(St.st_uid) +
                      ", not to this process; refusing it (another user "
                      "could read the features or answer in the model's "
                      "place)");
  if (St.st_mode & (S_IWGRP | S_IWOTH)) {
    char Mode[8];
    std::snprintf(Mode, sizeof Mode, "%04o",
                  static_cast<unsigned>(St.st_mode & 07777));
    return Status(ErrorCode::InvalidArgument,
                  "FIFO '" + Path + "' has mode " + Mode +
                      "; refusing it (other users could write to it and "
                      "answer in the model's place): remove the group and "
                      "other write permissions (chmod go-w)");
  }
  return Status::ok();
}

/// Sleeps in poll() until Fd has Events or Until passes: then Late() is
/// the error.
template <typename TimeoutError>
Status pollUntil(int Fd, short Events, Deadline Until, TimeoutError Late) {
  const int Ms = millisUntil(Until);
  if (Ms == 0)
    return Late();
  struct pollfd P = {Fd, Events, 0};
  if (::poll(&P, 1, Ms) < 0 && errno != EINTR)
    return Status(ErrorCode::IOError, "poll: " + errnoText(errno));
  return Status::ok();
}

Status waitForFifo(const std::string &Path, Deadline Until, bool Create,
                   Clock::time_point Start) {
  std::chrono::microseconds Step(1000);
  for (;;) {
    struct stat St;
    if (::lstat(Path.c_str(), &St) == 0)
      return checkOwnFifo(St, Path);
    int E = errno;
    if (E != ENOENT)
      return Status(ErrorCode::IOError,
                    "cannot stat '" + Path + "': " + errnoText(E));
    // EEXIST here means the path appeared meanwhile: check it again.
    if (Create && ::mkfifo(Path.c_str(), 0600) != 0 && errno != EEXIST)
      return Status(ErrorCode::IOError, "cannot create FIFO '" + Path +
                                            "': " + errnoText(errno));
    if (Create)
      continue; // lstat sees the new FIFO, or what replaced it
    if (Clock::now() >= Until) {
      return Status(ErrorCode::NotFound,
                    "FIFO '" + Path + "' does not exist (waited " +
                        std::to_string(millisSince(Start)) +
                        " ms); start the model side first");
    }
    backoff(Step, Until);
  }
}

Status checkOpened(int Fd, const std::string &Path) {
  struct stat St;
  if (::fstat(Fd, &St) != 0)
    return Status(ErrorCode::IOError,
                  "cannot stat '" + Path + "': " + errnoText(errno));
  return checkOwnFifo(St, Path);
}

/// Blocks SIGPIPE in this thread for its lifetime and swallows a SIGPIPE
/// raised meanwhile, so a dead reader shows up as EPIPE, not a signal that
/// kills the compiler. The process-wide disposition is left alone. Two
/// system calls per write: block and restore -- or, when the thread already
/// blocks SIGPIPE, block (a no-op that tells us so) and a look at what is
/// pending (one SIGPIPE there before ours must stay pending).
class SigpipeGuard {
public:
  SigpipeGuard() {
    sigemptyset(&Set);
    sigaddset(&Set, SIGPIPE);
    Active = pthread_sigmask(SIG_BLOCK, &Set, &Old) == 0;
    AlreadyBlocked = Active && sigismember(&Old, SIGPIPE) == 1;
    if (AlreadyBlocked) {
      sigset_t Pending;
      sigemptyset(&Pending);
      sigpending(&Pending);
      WasPending = sigismember(&Pending, SIGPIPE) == 1;
    }
    // Unblocked until now, no SIGPIPE can be pending for this thread.
  }
  void noteEpipe() { SawEpipe = true; }
  ~SigpipeGuard() {
    if (!Active)
      return;
    if (SawEpipe && !WasPending) {
      struct timespec Zero = {0, 0};
      while (sigtimedwait(&Set, nullptr, &Zero) < 0 && errno == EINTR) {
      }
    }
    if (!AlreadyBlocked)
      pthread_sigmask(SIG_SETMASK, &Old, nullptr);
  }

private:
  sigset_t Set, Old;
  bool WasPending = false, Active = false, AlreadyBlocked = false,
       SawEpipe = false;
};

} // namespace

Expected<std::unique_ptr<MessageChannel>>
FifoChannel::open(const std::string &InPath, const std::string &OutPath,
                  Deadline Until, bool Create, std::chrono::microseconds Spin) {
  const auto Start = Clock::now();
  if (Status S = waitForFifo(InPath, Until, Create, Start); !S.isOk())
    return S;
  if (Status S = waitForFifo(OutPath, Until, Create, Start); !S.isOk())
    return S;

  // Non-blocking read-open succeeds at once and registers us as the reader
  // the model's write-open is waiting for.
  int In = ::open(InPath.c_str(),
                  O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (In < 0)
    return Status(ErrorCode::IOError,
                  "cannot open '" + InPath + "': " + errnoText(errno));
  // The path may have been swapped since it was checked: check the FIFO
  // actually opened.
  if (Status S = checkOpened(In, InPath); !S.isOk()) {
    ::close(In);
    return S;
  }
  // One compiler per channel: a second one would read the first one's
  // answers. The lock lives as long as this descriptor.
  if (::flock(In, LOCK_EX | LOCK_NB) != 0) {
    int E = errno;
    ::close(In);
    if (E == EWOULDBLOCK)
      return Status(ErrorCode::InvalidArgument,
                    "pipe channel '" + InPath +
                        "' is in use by another compiler session (one "
                        "compiler per FIFO pair; give each its own channel)");
    return Status(ErrorCode::IOError,
                  "cannot lock '" + InPath + "': " + errnoText(E));
  }
  // Bytes already waiting were written before this session asked anything:
  // a reply an earlier compiler left unread. Drop them (bounded: a pipe
  // holds at most kPipeBytes).
  char Stale[4096];
  for (size_t Dropped = 0; Dropped < 2 * size_t(kPipeBytes);) {
    ssize_t N = ::read(In, Stale, sizeof Stale);
    if (N <= 0)
      break;
    Dropped += static_cast<size_t>(N);
  }

  // A non-blocking write-open fails with ENXIO until the model opens its
  // reading end: poll for it instead of blocking forever as LLVM does.
  std::chrono::microseconds Step(1000);
  int Out = -1;
  for (;;) {
    Out = ::open(OutPath.c_str(),
                 O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (Out >= 0) {
      if (Status S = checkOpened(Out, OutPath); !S.isOk()) {
        ::close(Out);
        ::close(In);
        return S;
      }
      break;
    }
    int E = errno;
    if (E == EINTR)
      continue;
    if (E != ENXIO) {
      ::close(In);
      return Status(ErrorCode::IOError,
                    "cannot open '" + OutPath + "': " + errnoText(E));
    }
    if (Clock::now() >= Until) {
      ::close(In);
      return Status(ErrorCode::Timeout,
                    "no model opened '" + OutPath + "' for reading within " +
                        std::to_string(millisSince(Start)) + " ms");
    }
    backoff(Step, Until);
  }
  // Best effort: larger pipes move big tensors with fewer context switches.
  (void)::fcntl(Out, F_SETPIPE_SZ, kPipeBytes);
  (void)::fcntl(In, F_SETPIPE_SZ, kPipeBytes);
  return std::unique_ptr<MessageChannel>(
      new FifoChannel(In, Out, InPath, OutPath, Spin));
}

FifoChannel::FifoChannel(int InFd, int OutFd, std::string InPath,
                         std::string OutPath, std::chrono::microseconds Spin)
    : InFd(InFd), OutFd(OutFd), InPath(std::move(InPath)),
      OutPath(std::move(OutPath)), Spinner(Spin), Buffer(kReadBufferBytes) {}

FifoChannel::~FifoChannel() {
  ::close(OutFd); // the model sees EOF: end of session
  ::close(InFd);
}

Status FifoChannel::write(const WireMessage &Msg, Deadline Until) {
  Msg.ranges(Ranges);
  Iov.clear();
  for (const ByteRange &R : Ranges)
    if (R.Size)
      Iov.push_back({const_cast<void *>(R.Data), R.Size});

  SigpipeGuard Guard;
  size_t Next = 0;
  while (Next < Iov.size()) {
    int Count = static_cast<int>(std::min<size_t>(Iov.size() - Next, IOV_MAX));
    ssize_t N = ::writev(OutFd, &Iov[Next], Count);
    if (N < 0) {
      int E = errno;
      if (E == EINTR)
        continue;
      if (E == EPIPE) {
        Guard.noteEpipe();
        return Status(ErrorCode::PeerClosed,
                      "the model closed '" + OutPath + "' (broken pipe)");
      }
      if (E != EAGAIN)
        return Status(ErrorCode::IOError,
                      "writing '" + OutPath + "': " + errnoText(E));
      if (Status S = pollUntil(OutFd, POLLOUT, Until, [&] {
            return Status(ErrorCode::Timeout,
                          "the model stopped reading '" + OutPath +
                              "' (write deadline passed)");
          });
          !S.isOk())
        return S;
      continue; // POLLERR/POLLHUP surface as EPIPE on the next writev
    }
    // Advance past what was written, possibly mid-iovec.
    size_t Left = static_cast<size_t>(N);
    while (Next < Iov.size() && Left >= Iov[Next].iov_len)
      Left -= Iov[Next++].iov_len;
    if (Left) {
      Iov[Next].iov_base = static_cast<char *>(Iov[Next].iov_base) + Left;
      Iov[Next].iov_len -= Left;
    }
  }
  return Status::ok();
}

Status FifoChannel::fill() {
  if (Begin == End)
    Begin = End = 0;
  else if (End == Buffer.size()) {
    std::memmove(Buffer.data(), Buffer.data() + Begin, End - Begin);
    End -= Begin;
    Begin = 0;
  }
  bool Waiting = false; // the pipe was empty: time the wait for Spinner
  Clock::time_point WaitStart;
  SpinPacer Pacer(WaitStart, WaitStart);
  for (;;) {
    ssize_t N = ::read(InFd, Buffer.data() + End, Buffer.size() - End);
    if (N > 0) {
      End += static_cast<size_t>(N);
      if (Waiting)
        Spinner.update(
            std::chrono::duration_cast<SpinBudget::Micros>(Clock::now() - WaitStart));
      return Status::ok();
    }
    if (N == 0)
      return Status(ErrorCode::PeerClosed,
                    "the model closed '" + InPath + "' (end of file)");
    int E = errno;
    if (E == EINTR)
      continue;
    if (E != EAGAIN)
      return Status(ErrorCode::IOError,
                    "reading '" + InPath + "': " + errnoText(E));
    if (!Waiting) {
      Waiting = true;
      WaitStart = Clock::now();
      Pacer = SpinPacer(WaitStart,
                        std::min(WaitStart + Spinner.next(), ReadDeadline));
    }
    if (Pacer.pause()) // spinning: read again
      continue;
    if (Status S = pollUntil(InFd, POLLIN, ReadDeadline, [&] {
          return Status(ErrorCode::Timeout, "no reply from the model on '" +
                                                InPath + "' before the deadline");
        });
        !S.isOk())
      return S;
  }
}

Status FifoChannel::readExact(void *Dst, size_t N) {
  char *Out = static_cast<char *>(Dst);
  while (N) {
    if (Begin == End)
      if (Status S = fill(); !S.isOk())
        return S;
    size_t Take = std::min(N, End - Begin);
    std::memcpy(Out, Buffer.data() + Begin, Take);
    Begin += Take;
    Out += Take;
    N -= Take;
  }
  return Status::ok();
}

namespace {

Status extraReply(const std::string &Path, const char *When) {
  return Status(ErrorCode::Malformed,
                "the model sent bytes on '" + Path + "' " + When +
                    " (more than one reply to a request); the channel is out "
                    "of step");
}

} // namespace

Status FifoChannel::endReply() {
  return Begin == End ? Status::ok() : extraReply(InPath, "after its reply");
}

Status FifoChannel::checkIdle() {
  struct pollfd P = {InFd, POLLIN, 0};
  if (Begin != End || (::poll(&P, 1, 0) > 0 && (P.revents & POLLIN)))
    return extraReply(InPath, "after its last reply");
  return Status::ok();
}

Status FifoChannel::readLine(std::string &Line, size_t MaxBytes) {
  Line.clear();
  for (;;) {
    const char *From = Buffer.data() + Begin;
    const char *NL = static_cast<const char *>(
        std::memchr(From, '\n', End - Begin));
    size_t Take = NL ? static_cast<size_t>(NL - From) : End - Begin;
    if (Line.size() + Take > MaxBytes)
      return Status(ErrorCode::TooLarge,
                    "line from the model exceeds " + std::to_string(MaxBytes) +
                        " bytes");
    Line.append(From, Take);
    Begin += Take;
    if (NL) {
      ++Begin; // the '\n'
      return Status::ok();
    }
    if (Status S = fill(); !S.isOk())
      return S;
  }
}

} // namespace mlbridge
