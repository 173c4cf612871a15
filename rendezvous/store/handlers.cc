#include "rendezvous/store/handlers.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace accel::rendezvous {

absl::Status CheckNamespace(const std::string& ns) {
  if (ns.empty()) return absl::InvalidArgumentError("store request: the namespace is empty");
  return absl::OkStatus();
}

absl::Status HandleSet(KvTable& table, const v1::SetRequest& request) {
  if (absl::Status s = CheckNamespace(request.ns()); !s.ok()) return s;
  return table.Set(request.ns(), request.key(), request.value());
}

absl::StatusOr<v1::GetResponse> HandleGetNow(KvTable& table, const v1::GetRequest& request) {
  if (absl::Status s = CheckNamespace(request.ns()); !s.ok()) return s;
  absl::StatusOr<std::string> value = table.Get(request.ns(), request.key());
  if (!value.ok()) return value.status();
  v1::GetResponse response;
  response.set_value(*std::move(value));
  return response;
}

absl::StatusOr<v1::AddResponse> HandleAdd(KvTable& table, const v1::AddRequest& request) {
  if (absl::Status s = CheckNamespace(request.ns()); !s.ok()) return s;
  absl::StatusOr<std::int64_t> value = table.Add(request.ns(), request.key(), request.delta());
  if (!value.ok()) return value.status();
  v1::AddResponse response;
  response.set_value(*value);
  return response;
}

absl::StatusOr<v1::DeleteResponse> HandleDelete(KvTable& table, const v1::DeleteRequest& request) {
  if (absl::Status s = CheckNamespace(request.ns()); !s.ok()) return s;
  absl::StatusOr<bool> existed = table.Delete(request.ns(), request.key());
  if (!existed.ok()) return existed.status();
  v1::DeleteResponse response;
  response.set_existed(*existed);
  return response;
}

absl::StatusOr<v1::CompareSetResponse> HandleCompareSet(KvTable& table,
                                                        const v1::CompareSetRequest& request) {
  if (absl::Status s = CheckNamespace(request.ns()); !s.ok()) return s;
  absl::StatusOr<std::string> value =
      table.CompareSet(request.ns(), request.key(), request.expected(), request.desired());
  if (!value.ok()) return value.status();
  v1::CompareSetResponse response;
  response.set_value(*std::move(value));
  return response;
}

absl::StatusOr<absl::Time> WaitDeadline(std::int64_t timeout_ms, absl::Time now,
                                        absl::Time call_deadline) {
  if (timeout_ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("store wait: timeout_ms=", timeout_ms, " is negative"));
  }
  return std::min(now + absl::Milliseconds(timeout_ms), call_deadline);
}

}  // namespace accel::rendezvous
