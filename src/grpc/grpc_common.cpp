//===- grpc/grpc_common.cpp - Credentials, arguments, status mapping ------===//

#include "grpc_internal.h"
#include "support/checked_cast.h"

#include <grpc/grpc.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace mlbridge {

GrpcModelRunner::Impl::~Impl() = default;

namespace grpc_detail {

Status readFile(const std::string &Path, const char *What, std::string &Out) {
  if (Path.empty())
    return Status(ErrorCode::InvalidArgument,
                  std::string("TLS: no ") + What + " file given");
  std::ifstream In(Path, std::ios::binary);
  if (!In) {
    const int E = errno;
    return Status(E == ENOENT ? ErrorCode::NotFound : ErrorCode::IOError,
                  std::string("TLS: cannot read ") + What + " '" + Path +
                      "': " + std::strerror(E));
  }
  std::ostringstream S;
  S << In.rdbuf();
  Out = S.str();
  if (Out.empty())
    return Status(ErrorCode::InvalidArgument,
                  std::string("TLS: ") + What + " '" + Path + "' is empty");
  return Status::ok();
}

namespace {
/// The certificate chain and private key of Tls.
Status readCertAndKey(const GrpcTlsFiles &Tls, std::string &Cert,
                      std::string &Key) {
  if (Status S = readFile(Tls.CertFile, "certificate", Cert); !S.isOk())
    return S;
  return readFile(Tls.KeyFile, "private key", Key);
}
} // namespace

Expected<std::shared_ptr<grpc::ChannelCredentials>>
clientCredentials(const GrpcOptions &Opts) {
  if (!Opts.UseTls)
    return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions SO;
  if (Status S = readFile(Opts.Tls.RootCertFile, "root certificate",
                          SO.pem_root_certs);
      !S.isOk())
    return S;
  if (!Opts.Tls.CertFile.empty() || !Opts.Tls.KeyFile.empty())
    if (Status S = readCertAndKey(Opts.Tls, SO.pem_cert_chain,
                                  SO.pem_private_key);
        !S.isOk())
      return S;
  std::shared_ptr<grpc::ChannelCredentials> C = grpc::SslCredentials(SO);
  if (!C)
    return Status(ErrorCode::InvalidArgument, "TLS: unusable client credentials");
  return C;
}

Expected<std::shared_ptr<grpc::ServerCredentials>>
serverCredentials(const GrpcOptions &Opts) {
  if (!Opts.UseTls)
    return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions SO(
      Opts.Tls.RequireClientCert
          ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
          : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  grpc::SslServerCredentialsOptions::PemKeyCertPair Pair;
  if (Status S = readCertAndKey(Opts.Tls, Pair.cert_chain, Pair.private_key);
      !S.isOk())
    return S;
  SO.pem_key_cert_pairs.push_back(std::move(Pair));
  if (Opts.Tls.RequireClientCert)
    if (Status S = readFile(Opts.Tls.RootCertFile, "root certificate",
                            SO.pem_root_certs);
        !S.isOk())
      return S;
  std::shared_ptr<grpc::ServerCredentials> C = grpc::SslServerCredentials(SO);
  if (!C)
    return Status(ErrorCode::InvalidArgument, "TLS: unusable server credentials");
  return C;
}

grpc::ChannelArguments channelArguments(const GrpcOptions &Opts) {
  grpc::ChannelArguments A;
  const int Max = support::saturatingCast<int>(Opts.MaxMessageBytes);
  A.SetMaxReceiveMessageSize(Max);
  A.SetMaxSendMessageSize(Max);
  auto Ms = [](std::chrono::milliseconds D) {
    return support::saturatingCast<int>(D.count());
  };
  // gRPC reconnects with exponential backoff (x1.6) and +-20% jitter; these
  // bound it. An attempt may take up to the whole connect budget (a TLS
  // handshake across machines is slower than the first backoff step).
  A.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, Ms(Opts.InitialBackoff));
  A.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, Ms(Opts.MaxBackoff));
  A.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
           std::max(100, Ms(Opts.ConnectTimeout)));
  // Never resend a request behind the caller's back.
  A.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  // Each runner has its own connection: a dead one is not shared.
  A.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  if (Opts.UseTls && !Opts.Tls.ServerName.empty())
    A.SetSslTargetNameOverride(Opts.Tls.ServerName);
  return A;
}

const char *grpcCodeName(grpc::StatusCode Code) {
  switch (Code) {
  case grpc::OK: return "OK";
  case grpc::CANCELLED: return "CANCELLED";
  case grpc::UNKNOWN: return "UNKNOWN";
  case grpc::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
  case grpc::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
  case grpc::NOT_FOUND: return "NOT_FOUND";
  case grpc::ALREADY_EXISTS: return "ALREADY_EXISTS";
  case grpc::PERMISSION_DENIED: return "PERMISSION_DENIED";
  case grpc::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
  case grpc::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
  case grpc::ABORTED: return "ABORTED";
  case grpc::OUT_OF_RANGE: return "OUT_OF_RANGE";
  case grpc::UNIMPLEMENTED: return "UNIMPLEMENTED";
  case grpc::INTERNAL: return "INTERNAL";
  case grpc::UNAVAILABLE: return "UNAVAILABLE";
  case grpc::DATA_LOSS: return "DATA_LOSS";
  case grpc::UNAUTHENTICATED: return "UNAUTHENTICATED";
  default: return "UNKNOWN_CODE";
  }
}

Status fromGrpc(const grpc::Status &G, const std::string &What) {
  const std::string Text = What + ": gRPC " + grpcCodeName(G.error_code()) +
                           (G.error_message().empty()
                                ? std::string()
                                : ": " + G.error_message());
  switch (G.error_code()) {
  case grpc::DEADLINE_EXCEEDED:
    return Status(ErrorCode::Timeout, Text);
  case grpc::UNAVAILABLE:
  case grpc::CANCELLED:
    return Status(ErrorCode::PeerClosed, Text);
  case grpc::RESOURCE_EXHAUSTED:
    // A smaller message, or a less busy server, may pass.
    return Status(G.error_message().find("larger than max") != std::string::npos
                      ? ErrorCode::TooLarge
                      : ErrorCode::Unavailable,
                  Text);
  case grpc::UNIMPLEMENTED:
    return Status(ErrorCode::NotFound,
                  Text + " (the server does not offer this method: is it "
                         "the right service and mode?)");
  case grpc::INVALID_ARGUMENT:
  case grpc::FAILED_PRECONDITION:
  case grpc::OUT_OF_RANGE:
    // The model rejected this request, not the connection.
    return Status(ErrorCode::InvalidArgument, Text);
  case grpc::INTERNAL:
  case grpc::DATA_LOSS:
    return Status(ErrorCode::Malformed, Text);
  case grpc::UNAUTHENTICATED:
  case grpc::PERMISSION_DENIED:
    return Status(ErrorCode::IOError, Text);
  default:
    return Status(ErrorCode::IOError, Text);
  }
}

bool isLoopbackAddress(const std::string &Address) {
  if (Address.rfind("unix:", 0) == 0 || Address.rfind("unix-abstract:", 0) == 0)
    return true;
  std::string Host;
  if (!Address.empty() && Address[0] == '[') {
    size_t Close = Address.find(']');
    if (Close == std::string::npos)
      return false;
    Host = Address.substr(1, Close - 1);
  } else {
    std::string A = Address;
    if (A.rfind("ipv4:", 0) == 0)
      A = A.substr(5);
    size_t Colon = A.rfind(':');
    Host = Colon == std::string::npos ? A : A.substr(0, Colon);
  }
  return Host == "localhost" || Host == "::1" || Host.rfind("127.", 0) == 0;
}

namespace {

/// "127.0.0.1" <-> "::1": the two addresses "localhost" resolves to.
bool siblingOf(const std::string &Address, int &Family, std::string &Sibling) {
  std::string A = Address.rfind("ipv4:", 0) == 0   ? Address.substr(5)
                  : Address.rfind("ipv6:", 0) == 0 ? Address.substr(5)
                                                   : Address;
  if (A.rfind("127.0.0.1:", 0) == 0) {
    Family = AF_INET6;
    Sibling = "::1";
    return true;
  }
  if (A.rfind("[::1]:", 0) == 0) {
    Family = AF_INET;
    Sibling = "127.0.0.1";
    return true;
  }
  return false;
}

} // namespace

Status LoopbackSiblingClaim::claim(const std::string &Address, int Port) {
  release();
  int Family = 0;
  std::string Sibling;
  if (!siblingOf(Address, Family, Sibling) || Port <= 0)
    return Status::ok();
  sockaddr_storage SS{};
  socklen_t Len = 0;
  if (Family == AF_INET) {
    auto *Sin = reinterpret_cast<sockaddr_in *>(&SS);
    Sin->sin_family = AF_INET;
    Sin->sin_port = htons(static_cast<uint16_t>(Port));
    Sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    Len = sizeof *Sin;
  } else {
    auto *Sin6 = reinterpret_cast<sockaddr_in6 *>(&SS);
    Sin6->sin6_family = AF_INET6;
    Sin6->sin6_port = htons(static_cast<uint16_t>(Port));
    Sin6->sin6_addr = in6addr_loopback;
    Len = sizeof *Sin6;
  }
  const auto *SA = reinterpret_cast<const sockaddr *>(&SS);
  int Probe = ::socket(Family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (Probe < 0)
    return Status::ok(); // no such family here: nothing to share with
  // Loopback connects complete (or are refused) at once.
  const bool Served = ::connect(Probe, SA, Len) == 0;
  ::close(Probe);
  if (Served)
    return Status(ErrorCode::IOError,
                  "port " + std::to_string(Port) +
                      " is already served on " +
                      (Family == AF_INET6 ? "[::1]" : "127.0.0.1") +
                      " (the other loopback address): a client of "
                      "localhost:" + std::to_string(Port) +
                      " could reach either server; use another port");
  Fd = ::socket(Family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (Family == AF_INET6) {
    int One = 1;
    (void)::setsockopt(Fd, IPPROTO_IPV6, IPV6_V6ONLY, &One, sizeof One);
  }
  // Best effort: the address may be unavailable (no IPv6) or in a
  // TIME_WAIT; nobody can listen there now either way.
  if (Fd >= 0 && ::bind(Fd, SA, Len) != 0)
    release();
  return Status::ok();
}

void LoopbackSiblingClaim::release() {
  if (Fd >= 0)
    ::close(Fd);
  Fd = -1;
}

std::string randomSessionId() {
  std::random_device RD;
  std::mt19937_64 G((uint64_t(RD()) << 32) ^ RD());
  static const char Hex[] = "0123456789abcdef";
  std::string S = std::to_string(::getpid()) + "-";
  uint64_t V = G();
  for (int I = 0; I < 12; ++I, V >>= 4)
    S += Hex[V & 15];
  return S;
}

std::chrono::system_clock::time_point toSystem(Deadline D) {
  const auto Left = D - std::chrono::steady_clock::now();
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(Left);
}

} // namespace grpc_detail
} // namespace mlbridge
