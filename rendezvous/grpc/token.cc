#include "rendezvous/grpc/token.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/env_contract.h"
#include "common/env_reader.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "rendezvous/grpc/auth.h"

namespace accel::rendezvous {

absl::StatusOr<std::string> GenerateToken() {
  absl::StatusOr<std::string> token = RandomHex(32);
  if (!token.ok()) return Annotate(token.status(), "generate rendezvous token");
  return token;
}

absl::StatusOr<std::string> LoadToken(const std::string& token_file) {
  if (token_file.empty()) {
    const char* token = env::Get(env::kRdzvToken);
    return std::string(token == nullptr ? "" : token);
  }
  absl::StatusOr<std::string> text = ReadFileToString(token_file);
  if (!text.ok()) return Annotate(text.status(), "read rdzv_token_file");
  std::string line = text->substr(0, text->find('\n'));
  absl::StripAsciiWhitespace(&line);
  if (line.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("read rdzv_token_file ", token_file, ": the file holds no token"));
  }
  return line;
}

}  // namespace accel::rendezvous
