//===- core/log_line.cpp - An integration's one log line ------------------===//

#include "mlbridge/log_line.h"

#include "mlbridge/json_escape.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace mlbridge {

LogLine::LogLine(std::string_view Integration, std::string_view Module,
                 std::string_view Runner, uint64_t Asked, uint64_t Fallbacks)
    : Text("{") {
  add("integration", Integration);
  add("module", Module);
  add("runner", Runner);
  add("asked", static_cast<int64_t>(Asked));
  add("fallbacks", static_cast<int64_t>(Fallbacks));
}

void LogLine::key(std::string_view Key) {
  if (Text.size() > 1)
    Text += ',';
  Text += '"';
  Text += Key;
  Text += "\":";
}

LogLine &LogLine::add(std::string_view Key, int64_t V) {
  key(Key);
  Text += std::to_string(V);
  return *this;
}

LogLine &LogLine::add(std::string_view Key, std::string_view V) {
  key(Key);
  Text += '"' + jsonEscape(V) + '"';
  return *this;
}

LogLine &LogLine::add(std::string_view Key, const std::vector<int64_t> &V) {
  key(Key);
  Text += '[';
  for (size_t I = 0; I < V.size(); ++I)
    Text += (I ? "," : "") + std::to_string(V[I]);
  Text += ']';
  return *this;
}

Status appendLine(const std::string &Path, const std::string &Line) {
  int Fd = ::open(Path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (Fd < 0)
    return Status(ErrorCode::IOError, "cannot open log file '" + Path +
                                     "': " + std::strerror(errno));
  const std::string Data = Line + "\n";
  const char *P = Data.data();
  size_t Left = Data.size();
  Status Result = Status::ok();
  while (Left > 0) {
    ssize_t N = ::write(Fd, P, Left);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0) {
      Result = Status(ErrorCode::IOError, "cannot write log file '" + Path +
                                         "': " + std::strerror(errno));
      break;
    }
    P += N;
    Left -= static_cast<size_t>(N);
  }
  ::close(Fd);
  return Result;
}

} // namespace mlbridge
