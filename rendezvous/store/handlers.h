// Store request handling, shared by the gRPC Store service and the fuzzer (no gRPC types).
//
// Each Handle* validates one request (non-empty namespace, sizes via KvTable) and applies it.
// Waiting requests (Get with timeout_ms > 0, Wait) are split: WaitDeadline validates the timeout
// and the service registers a KvTable waiter.
#ifndef ACCEL_RENDEZVOUS_STORE_HANDLERS_H_
#define ACCEL_RENDEZVOUS_STORE_HANDLERS_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "accel/rendezvous/v1/rendezvous.pb.h"
#include "rendezvous/store/kv_table.h"

namespace accel::rendezvous {

absl::Status CheckNamespace(const std::string& ns);
absl::Status HandleSet(KvTable& table, const v1::SetRequest& request);
// Does not wait: NOT_FOUND when absent.
absl::StatusOr<v1::GetResponse> HandleGetNow(KvTable& table, const v1::GetRequest& request);
absl::StatusOr<v1::AddResponse> HandleAdd(KvTable& table, const v1::AddRequest& request);
absl::StatusOr<v1::DeleteResponse> HandleDelete(KvTable& table, const v1::DeleteRequest& request);
absl::StatusOr<v1::CompareSetResponse> HandleCompareSet(KvTable& table,
                                                        const v1::CompareSetRequest& request);
// Returns now + timeout_ms, no later than `call_deadline`. INVALID_ARGUMENT for a negative timeout.
absl::StatusOr<absl::Time> WaitDeadline(std::int64_t timeout_ms, absl::Time now,
                                        absl::Time call_deadline);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_STORE_HANDLERS_H_
