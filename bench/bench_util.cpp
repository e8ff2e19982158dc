//===- bench/bench_util.cpp - What every part of mlbridge-bench shares -----===//
#include "bench_util.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace bench {

Config Cfg;

std::vector<int> sizes() {
  if (Cfg.Quick)
    return {500, 5000, 50000};
  std::vector<int> S;
  for (int N = 500; N <= kMaxN; N += 500)
    S.push_back(N);
  return S;
}
int reps() { return Cfg.Reps ? Cfg.Reps : (Cfg.Quick ? 5 : 21); }

bool selected(const std::string &Name) {
  std::stringstream Only(Cfg.Only);
  std::string Part;
  while (std::getline(Only, Part, ','))
    if (Name.find(Part) != std::string::npos)
      return true;
  return Cfg.Only.empty();
}

double nowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> V) {
  if (V.empty())
    return NAN;
  std::sort(V.begin(), V.end());
  size_t M = V.size() / 2;
  return V.size() % 2 ? V[M] : (V[M - 1] + V[M]) / 2;
}
double pct(std::vector<double> V, double P) {
  if (V.empty())
    return NAN;
  std::sort(V.begin(), V.end());
  return V[std::min(V.size() - 1, size_t(P * double(V.size() - 1) + 0.5))];
}

void say(const char *Fmt, ...) {
  va_list A;
  va_start(A, Fmt);
  std::vfprintf(Cfg.Json ? stderr : stdout, Fmt, A);
  va_end(A);
  std::fflush(Cfg.Json ? stderr : stdout);
}

// ---- exits: children killed, temporary directories removed -----------------
namespace {
std::vector<std::string> TmpDirs;

void removeTmpDirs() {
  for (auto &D : TmpDirs) {
    if (DIR *Dir = ::opendir(D.c_str())) {
      while (dirent *E = ::readdir(Dir))
        if (std::strcmp(E->d_name, ".") && std::strcmp(E->d_name, ".."))
          ::unlink((D + "/" + E->d_name).c_str());
      ::closedir(Dir);
    }
    ::rmdir(D.c_str());
  }
  TmpDirs.clear();
}

void onSignal(int Sig) {
  mlbridge::killAllChildren(); // best effort
  ::_exit(128 + Sig);
}
} // namespace

void cleanUpOnExit() {
  ::signal(SIGINT, onSignal);
  ::signal(SIGTERM, onSignal);
  std::atexit(removeTmpDirs);
  std::atexit(mlbridge::killAllChildren); // first: children, then FIFOs
}

void die(const std::string &Msg) {
  std::fprintf(stderr, "mlbridge-bench: error: %s\n", Msg.c_str());
  mlbridge::killAllChildren();
  removeTmpDirs();
  std::exit(1);
}

std::string makeTmpDir(const char *Prefix) {
  std::string T = std::string("/tmp/") + Prefix + "-XXXXXX";
  if (!::mkdtemp(T.data()))
    die("mkdtemp: " + std::string(std::strerror(errno)));
  TmpDirs.push_back(T);
  return T;
}

// ---- bytes and children ------------------------------------------------------
void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

namespace {
/// Moves N bytes from or to P with Io (read or write), retrying after
/// EINTR and, on a non-blocking fd, spinning on EAGAIN.
template <typename Ptr, typename IoFn> bool allBytes(Ptr P, size_t N, IoFn Io) {
  while (N) {
    ssize_t K = Io(P, N);
    if (K < 0 && (errno == EINTR || errno == EAGAIN)) {
      if (errno == EAGAIN)
        cpuRelax();
      continue;
    }
    if (K <= 0)
      return false;
    P += K;
    N -= size_t(K);
  }
  return true;
}
} // namespace

bool readAll(int Fd, void *B, size_t N) {
  return allBytes(static_cast<char *>(B), N,
                  [Fd](char *P, size_t L) { return ::read(Fd, P, L); });
}
bool writeAll(int Fd, const void *B, size_t N) {
  return allBytes(static_cast<const char *>(B), N,
                  [Fd](const char *P, size_t L) { return ::write(Fd, P, L); });
}

mlbridge::ChildProcess spawnPiped(const std::vector<std::string> &Argv) {
  mlbridge::ChildProcess C;
  if (mlbridge::Status S =
          C.spawn(Argv, {}, mlbridge::ChildProcess::Stdio::Pipes);
      !S.isOk())
    die(S.toString());
  return C;
}

std::string readLine(mlbridge::ChildProcess &C,
                     std::chrono::milliseconds Timeout) {
  mlbridge::Expected<std::string> L = C.readLine(Timeout);
  return L ? *L : std::string();
}

int finish(mlbridge::ChildProcess &C, std::chrono::milliseconds Timeout) {
  C.closeInput();
  mlbridge::Expected<int> St = C.wait(Timeout);
  return St ? *St : -1;
}

long statusKb(pid_t P, const std::string &Field) {
  std::ifstream F(P ? "/proc/" + std::to_string(P) + "/status"
                    : std::string("/proc/self/status"));
  const std::string Key = Field + ":";
  std::string L;
  while (std::getline(F, L))
    if (L.rfind(Key, 0) == 0)
      return std::atol(L.c_str() + Key.size());
  return -1;
}

} // namespace bench
