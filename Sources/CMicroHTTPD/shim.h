#ifndef GATEWAY_MHD_SHIM_H
#define GATEWAY_MHD_SHIM_H
#include <stdint.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <microhttpd.h>

/* MHD_start_daemon is variadic. Options come from Swift as a MHD_OptionItem array terminated by
   {MHD_OPTION_END, 0, NULL}. The logger and the completion and connection callbacks are passed typed,
   because as two-pointer options they would need a function pointer cast to intptr_t. The logger goes
   first so that errors while starting (bind, TLS material) reach it too. */
static inline struct MHD_Daemon *gateway_mhd_start(unsigned int flags, uint16_t port,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    MHD_NotifyConnectionCallback connections, void *connections_cls,
    MHD_LogCallback logger, void *logger_cls,
    const struct MHD_OptionItem *options) {
  return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                          MHD_OPTION_EXTERNAL_LOGGER, logger, logger_cls,
                          MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                          MHD_OPTION_NOTIFY_CONNECTION, connections, connections_cls,
                          MHD_OPTION_ARRAY, options,
                          MHD_OPTION_END);
}

/* MHD_get_daemon_info is variadic. 0 when the daemon cannot tell. */
static inline uint16_t gateway_mhd_bound_port(struct MHD_Daemon *daemon) {
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
  return info ? info->port : 0;
}

/* MHD_get_connection_info is variadic. Writes the peer's numeric address (IPv4 or IPv6, NUL-terminated)
   into buffer and its port into *port; returns 0 on success, -1 when the address is unknown. */
static inline int gateway_mhd_client_address(struct MHD_Connection *connection, char *buffer,
                                             size_t length, uint16_t *port) {
  const union MHD_ConnectionInfo *info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == NULL || info->client_addr == NULL || length == 0) return -1;
  const struct sockaddr *address = info->client_addr;
  if (address->sa_family == AF_INET) {
    const struct sockaddr_in *v4 = (const struct sockaddr_in *)(const void *)address;
    if (inet_ntop(AF_INET, &v4->sin_addr, buffer, (socklen_t)length) == NULL) return -1;
    *port = ntohs(v4->sin_port);
    return 0;
  }
  if (address->sa_family == AF_INET6) {
    const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)(const void *)address;
    if (inet_ntop(AF_INET6, &v6->sin6_addr, buffer, (socklen_t)length) == NULL) return -1;
    *port = ntohs(v6->sin6_port);
    return 0;
  }
  return -1;
}

/* MHD_get_connection_info is variadic. The connection's socket, or -1 when the daemon cannot tell. */
static inline int gateway_mhd_connection_fd(struct MHD_Connection *connection) {
  const union MHD_ConnectionInfo *info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
  return info ? (int)info->connect_fd : -1;
}

/* Linux's TCP_INFO as far as tcpi_bytes_received (kernel 4.1+). glibc's struct tcp_info mirrors the
   kernel's up to tcpi_total_retrans (104 bytes) and stops there; the kernel's struct only ever grows at
   its end, so the next four 64-bit fields follow at the same offsets as in <linux/tcp.h>, which cannot
   be included next to glibc's <netinet/tcp.h>. If glibc ever extends its copy, the assertion stops the
   build instead of letting the fields below shift. */
struct gateway_tcp_info {
  struct tcp_info base;
  uint64_t pacing_rate;
  uint64_t max_pacing_rate;
  uint64_t bytes_acked;
  uint64_t bytes_received;
};
_Static_assert(sizeof(struct tcp_info) == 104, "glibc's struct tcp_info changed: recheck gateway_tcp_info");
_Static_assert(offsetof(struct gateway_tcp_info, bytes_received) == 128, "tcpi_bytes_received is at 128");

/* How many bytes the kernel has received on the TCP socket fd so far (read by the application or
   not). 0 on success; -1 when the kernel does not say (getsockopt failed, or too old to report it). */
static inline int gateway_tcp_bytes_received(int fd, uint64_t *bytes) {
  struct gateway_tcp_info info;
  socklen_t length = (socklen_t)sizeof info;
  memset(&info, 0, sizeof info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return -1;
  if (length < (socklen_t)(offsetof(struct gateway_tcp_info, bytes_received) + sizeof(uint64_t))) return -1;
  *bytes = info.bytes_received;
  return 0;
}

/* Formats one MHD log message (printf-style format + va_list) into buffer, truncating; returns the
   untruncated length like vsnprintf. Kept in C so Swift never handles a va_list. */
static inline int gateway_mhd_format_log(char *buffer, size_t length, const char *format, va_list args) {
  return vsnprintf(buffer, length, format, args);
}

#endif
