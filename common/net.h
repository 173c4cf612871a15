// Ports for servers this launcher does not run itself: PickFreePort (MASTER_PORT for torch scripts,
// a single process's job) and CheckPortFree (main_process_port on one machine, before launching).
// LocalAddressFor: whether an address is this machine's.
#ifndef ACCEL_COMMON_NET_H_
#define ACCEL_COMMON_NET_H_

#include <sys/socket.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace accel {

// Returns a TCP port that was free on `host` a moment ago: binds port 0 there, reads the port the
// kernel chose and closes the socket (another process may take it before the caller binds it).
// `host` is an IPv4 or IPv6 (contains ':') address; "" or a name that is not an address means
// every address. Errors: socket(2)/bind(2)'s errno, e.g. "pick free port: bind 10.0.0.9:0: Cannot
// assign requested address".
absl::StatusOr<int> PickFreePort(const std::string& host);

// Returns the numeric text of an IPv4 or IPv6 socket address ("" for another family).
std::string AddressText(const struct sockaddr* address);

// Returns the numeric address of `host` (an address, or a name resolved with getaddrinfo) that
// belongs to this machine: one a socket here can bind. NOT_FOUND when none does (the address is
// another machine's, or reached through NAT), naming what `host` resolved to; the resolver's
// error when the name does not resolve.
absl::StatusOr<std::string> LocalAddressFor(const std::string& host);
// Returns OK when a server could bind TCP `port` on `host` now (with SO_REUSEADDR, as torch's
// TCPStore binds, so a port in TIME_WAIT counts as free). FAILED_PRECONDITION "port N on HOST is
// in use" when something listens there; other bind errors as "check port N on HOST: <errno>".
// `host` as for PickFreePort.
absl::Status CheckPortFree(const std::string& host, int port);

}  // namespace accel

#endif  // ACCEL_COMMON_NET_H_
