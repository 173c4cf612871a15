#include "rendezvous/grpc/auth.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/unique_fd.h"
#include "rendezvous/join/checks.h"

namespace accel::rendezvous {

bool TokenMatches(std::string_view expected, std::string_view given) {
  return SecretsMatch(expected, given);
}

absl::Status CheckToken(const grpc::CallbackServerContext& context, std::string_view expected,
                        std::string_view operation) {
  if (expected.empty()) return absl::OkStatus();
  // The server asks for client certificates only when it has a token, and then closes every
  // connection whose certificate lacks the token's proof (transport.h): a peer certificate on a
  // call proves the token.
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr && auth->IsPeerAuthenticated()) return absl::OkStatus();
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kTokenMetadataKey);
  if (it != metadata.end() &&
      TokenMatches(expected, std::string_view(it->second.data(), it->second.size()))) {
    return absl::OkStatus();
  }
  return absl::UnauthenticatedError(absl::StrCat(
      Av(operation), " from ", context.peer(), ": ",
      it == metadata.end() ? "no rendezvous token was sent" : "the rendezvous token is wrong",
      " (set rdzv_token_file or ACCEL_RDZV_TOKEN to the job's token)"));
}

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpc(const grpc::Status& status, std::string_view operation) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(Av(operation), ": ", status.error_message()));
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  std::string out;
  char buffer[8192];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat("read ", path));
    if (n == 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
    if (out.size() > (1 << 20)) {
      return absl::InvalidArgumentError(absl::StrCat("read ", path, ": larger than 1 MiB"));
    }
  }
  return out;
}

}  // namespace accel::rendezvous
