// Pmi2Client: the task side of the PMI-2 wire protocol that a Slurm job step started with
// `--mpi=pmi2` (or MpiDefault=pmi2) offers each task on the inherited socket $PMI_FD.
//
// Only what a small key-value exchange needs: init and fullinit (Create), kvs-put, kvs-fence,
// kvs-get and finalize. Commands are "cmd=NAME;key=value;..." behind a 6-character length field;
// keys and values are restricted to [A-Za-z0-9_.-] (Slurm's parser does not undo the ';;'
// escape). Every call takes a deadline and polls the socket, so a task whose peers never fence
// gets DEADLINE_EXCEEDED instead of blocking. Not thread-safe; one client per socket.
#ifndef ACCEL_LAUNCHER_CONFIG_PMI2_CLIENT_H_
#define ACCEL_LAUNCHER_CONFIG_PMI2_CLIENT_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/unique_fd.h"

namespace accel::launcher {

class Pmi2Client {
 public:
  // Takes ownership of `fd` and initializes the session as task `rank` of PMI job `jobid`
  // ($PMI_RANK, $PMI_JOBID). Errors name the step that failed (e.g. "PMI-2 fullinit: rc=3").
  static absl::StatusOr<Pmi2Client> Create(UniqueFd fd, absl::string_view jobid, int rank,
                                           absl::Time deadline);

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Stores `value` under `key` in the job step's key-value space (visible after Fence).
  absl::Status Put(absl::string_view key, absl::string_view value, absl::Time deadline);
  // Blocks until every task of the step has fenced (or `deadline`).
  absl::Status Fence(absl::Time deadline);
  // Returns the value of `key`, or nullopt when no task put it.
  absl::StatusOr<std::optional<std::string>> Get(absl::string_view key, absl::Time deadline);
  // Ends the session and closes the socket.
  absl::Status Finalize(absl::Time deadline);

  // One parsed command: its name and its key=value pairs in order.
  struct Command {
    std::string name;
    std::vector<std::pair<std::string, std::string>> pairs;
    // Returns the value of `key`, or nullopt.
    std::optional<std::string> Find(absl::string_view key) const;
  };
  // Formats a command with its length field; INVALID_ARGUMENT for a key or value outside
  // [A-Za-z0-9_.-].
  static absl::StatusOr<std::string> Encode(const Command& command);
  // Parses the body of a command (after the length field).
  static absl::StatusOr<Command> Decode(absl::string_view body);

 private:
  explicit Pmi2Client(UniqueFd fd) : fd_(std::move(fd)) {}
  // Sends `command` and reads the reply, which must be `<name>-response` with rc=0.
  absl::StatusOr<Command> Call(const Command& command, absl::Time deadline);
  absl::Status WriteAll(absl::string_view bytes, absl::Time deadline);
  absl::StatusOr<std::string> ReadExactly(std::size_t n, absl::Time deadline);
  absl::StatusOr<std::string> ReadLine(absl::Time deadline);

  UniqueFd fd_;
  int rank_ = -1;
  int size_ = 0;
};

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_PMI2_CLIENT_H_
