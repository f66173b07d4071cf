// Readiness and status for a service manager: systemd's sd_notify protocol,
// spoken directly (no libsystemd), so `Type=notify` units start their
// dependents only once the server serves and the agent has joined.
//
// The protocol: a datagram of "KEY=value" lines sent to the AF_UNIX socket
// named by $NOTIFY_SOCKET (a path, or an abstract name when it starts with
// '@'). Without $NOTIFY_SOCKET (started by hand, by `muster dev`, by a test)
// every call does nothing and succeeds.
//
//   READY=1        the service is up (server: serving; agent: registered)
//   RELOADING=1    a reload (SIGHUP) began; READY=1 again when it is done
//   STOPPING=1     shutting down
//   STATUS=...     one line that `systemctl status` shows
//
// Thread-safety: any thread; each call opens and closes its own socket.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace muster {

// Sends `state` (one or more "KEY=value" lines) to $NOTIFY_SOCKET. OK when
// the variable is unset; an error naming the socket when it is set but the
// datagram cannot be sent (a caller logs it and carries on: a service that
// runs is worth more than one that reported so).
Status NotifyServiceManager(std::string_view state);

// The same to an explicit socket name: for tests.
Status NotifyServiceManagerAt(const std::string& socket_name, std::string_view state);

}  // namespace muster
