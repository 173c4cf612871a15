// Resolves the `network_interface` config key to the address other machines reach this one at.
#ifndef ACCEL_LAUNCHER_CONFIG_NETIF_H_
#define ACCEL_LAUNCHER_CONFIG_NETIF_H_

#include <string>

#include "absl/status/statusor.h"

namespace accel::launcher {

// Returns the first IPv4 address of interface `name` (getifaddrs). NotFound names the interfaces
// that do have one.
absl::StatusOr<std::string> InterfaceAddress(const std::string& name);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_NETIF_H_
