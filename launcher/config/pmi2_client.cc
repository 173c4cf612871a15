#include "launcher/config/pmi2_client.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace accel::launcher {
namespace {

constexpr std::size_t kLengthField = 6;       // "%-6d" before each PMI-2 command
constexpr std::size_t kMaxCommand = 1 << 16;  // far above any reply this client asks for

bool IsPlainText(absl::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

// Waits until `fd` is ready for `events` or `deadline` passes.
absl::Status WaitFor(int fd, short events, absl::Time deadline, absl::string_view what) {
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat(what, ": no answer from Slurm in time"));
    }
    pollfd p = {fd, events, 0};
    const int ms = static_cast<int>(std::min<int64_t>(
        absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))), 60'000));
    const int n = ::poll(&p, 1, ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat(what, ": poll"));
    if (n > 0) return absl::OkStatus();
  }
}

}  // namespace

std::optional<std::string> Pmi2Client::Command::Find(absl::string_view key) const {
  for (const auto& [k, v] : pairs) {
    if (k == key) return v;
  }
  return std::nullopt;
}

absl::StatusOr<std::string> Pmi2Client::Encode(const Command& command) {
  std::string body = absl::StrCat("cmd=", command.name, ";");
  if (!IsPlainText(command.name)) {
    return absl::InvalidArgumentError(absl::StrCat("PMI-2 command '", command.name, "'"));
  }
  for (const auto& [key, value] : command.pairs) {
    if (key.empty() || !IsPlainText(key) || !IsPlainText(value)) {
      return absl::InvalidArgumentError(absl::StrCat("PMI-2 ", command.name, ": '", key, "=", value,
                                                     "' has characters outside [A-Za-z0-9_.-]"));
    }
    absl::StrAppend(&body, key, "=", value, ";");
  }
  std::string length = absl::StrCat(body.size());
  if (length.size() > kLengthField) return absl::InvalidArgumentError("PMI-2 command too long");
  length.resize(kLengthField, ' ');
  return length + body;
}

absl::StatusOr<Pmi2Client::Command> Pmi2Client::Decode(absl::string_view body) {
  Command out;
  for (absl::string_view field : absl::StrSplit(body, ';', absl::SkipEmpty())) {
    const std::size_t eq = field.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("PMI-2 reply: malformed field '", field, "'"));
    }
    std::string key(field.substr(0, eq));
    std::string value(field.substr(eq + 1));
    if (out.name.empty() && out.pairs.empty()) {
      if (key != "cmd") {
        return absl::InvalidArgumentError(
            absl::StrCat("PMI-2 reply: expected cmd= first, got '", field, "'"));
      }
      out.name = std::move(value);
      continue;
    }
    out.pairs.emplace_back(std::move(key), std::move(value));
  }
  if (out.name.empty()) return absl::InvalidArgumentError("PMI-2 reply: no cmd");
  return out;
}

absl::StatusOr<Pmi2Client> Pmi2Client::Create(UniqueFd fd, absl::string_view jobid, int rank,
                                              absl::Time deadline) {
  Pmi2Client client(std::move(fd));
  // PMI-1's line-based handshake announces version 2; everything after it is PMI-2.
  ACCEL_RETURN_IF_ERROR(client.WriteAll("cmd=init pmi_version=2 pmi_subversion=0\n", deadline));
  ACCEL_ASSIGN_OR_RETURN(std::string line, client.ReadLine(deadline));
  if (line.find("cmd=response_to_init") != 0 || line.find(" rc=0") == std::string::npos) {
    return absl::UnavailableError(absl::StrCat("PMI-2 init: unexpected reply '", line, "'"));
  }
  Command init{
      "fullinit",
      {{"pmijobid", std::string(jobid)}, {"pmirank", absl::StrCat(rank)}, {"threaded", "FALSE"}}};
  ACCEL_ASSIGN_OR_RETURN(Command reply, client.Call(init, deadline));
  const std::optional<std::string> got_rank = reply.Find("rank");
  const std::optional<std::string> got_size = reply.Find("size");
  if (!got_rank || !got_size || !absl::SimpleAtoi(*got_rank, &client.rank_) ||
      !absl::SimpleAtoi(*got_size, &client.size_) || client.size_ < 1 || client.rank_ < 0 ||
      client.rank_ >= client.size_) {
    return absl::UnavailableError("PMI-2 fullinit: the reply has no valid rank and size");
  }
  return client;
}

absl::Status Pmi2Client::Put(absl::string_view key, absl::string_view value, absl::Time deadline) {
  return Call({"kvs-put", {{"key", std::string(key)}, {"value", std::string(value)}}}, deadline)
      .status();
}

absl::Status Pmi2Client::Fence(absl::Time deadline) {
  return Call({"kvs-fence", {}}, deadline).status();
}

absl::StatusOr<std::optional<std::string>> Pmi2Client::Get(absl::string_view key,
                                                           absl::Time deadline) {
  ACCEL_ASSIGN_OR_RETURN(Command reply,
                         Call({"kvs-get", {{"srcid", "-1"}, {"key", std::string(key)}}}, deadline));
  if (reply.Find("found") != "TRUE") return std::optional<std::string>();
  return reply.Find("value");
}

absl::Status Pmi2Client::Finalize(absl::Time deadline) {
  absl::Status status = Call({"finalize", {}}, deadline).status();
  fd_.reset();
  return status;
}

absl::StatusOr<Pmi2Client::Command> Pmi2Client::Call(const Command& command, absl::Time deadline) {
  const std::string what = absl::StrCat("PMI-2 ", command.name);
  ACCEL_ASSIGN_OR_RETURN(std::string bytes, Encode(command));
  ACCEL_RETURN_IF_ERROR(Annotate(WriteAll(bytes, deadline), what));
  ACCEL_ASSIGN_OR_RETURN(std::string length_text, ReadExactly(kLengthField, deadline));
  std::size_t length = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(length_text), &length) || length == 0 ||
      length > kMaxCommand) {
    return absl::UnavailableError(absl::StrCat(what, ": bad length field '", length_text, "'"));
  }
  ACCEL_ASSIGN_OR_RETURN(std::string body, ReadExactly(length, deadline));
  ACCEL_ASSIGN_OR_RETURN(Command reply, Decode(body));
  if (reply.name != command.name + "-response") {
    return absl::UnavailableError(absl::StrCat(what, ": unexpected reply '", body, "'"));
  }
  if (reply.Find("rc") != "0") {
    return absl::UnavailableError(
        absl::StrCat(what, ": Slurm answered rc=", reply.Find("rc").value_or("?"), " ",
                     reply.Find("errmsg").value_or("")));
  }
  return reply;
}

absl::Status Pmi2Client::WriteAll(absl::string_view bytes, absl::Time deadline) {
  while (!bytes.empty()) {
    ACCEL_RETURN_IF_ERROR(WaitFor(fd_.get(), POLLOUT, deadline, "PMI-2 write"));
    const ssize_t n = ::write(fd_.get(), bytes.data(), bytes.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, "PMI-2 write");
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Pmi2Client::ReadExactly(std::size_t n, absl::Time deadline) {
  std::string out(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    ACCEL_RETURN_IF_ERROR(WaitFor(fd_.get(), POLLIN, deadline, "PMI-2 read"));
    const ssize_t r = ::read(fd_.get(), out.data() + got, n - got);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0) return absl::ErrnoToStatus(errno, "PMI-2 read");
    if (r == 0) return absl::UnavailableError("PMI-2 read: Slurm closed the PMI socket");
    got += static_cast<std::size_t>(r);
  }
  return out;
}

absl::StatusOr<std::string> Pmi2Client::ReadLine(absl::Time deadline) {
  std::string line;
  while (line.empty() || line.back() != '\n') {
    if (line.size() > kMaxCommand) return absl::UnavailableError("PMI-2 init: reply too long");
    ACCEL_ASSIGN_OR_RETURN(std::string c, ReadExactly(1, deadline));
    line += c;
  }
  line.pop_back();
  return line;
}

}  // namespace accel::launcher
