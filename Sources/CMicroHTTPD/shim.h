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
#include <microhttpd.h>

/* MHD_start_daemon is variadic. Options come from Swift as a MHD_OptionItem array terminated by
   {MHD_OPTION_END, 0, NULL}. The logger and the completion callback are passed typed, because as
   two-pointer options they would need a function pointer cast to intptr_t. The logger goes first so
   that errors while starting (bind, TLS material) reach it too. */
static inline struct MHD_Daemon *gateway_mhd_start(unsigned int flags, uint16_t port,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    MHD_LogCallback logger, void *logger_cls,
    const struct MHD_OptionItem *options) {
  return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                          MHD_OPTION_EXTERNAL_LOGGER, logger, logger_cls,
                          MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
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

/* Formats one MHD log message (printf-style format + va_list) into buffer, truncating; returns the
   untruncated length like vsnprintf. Kept in C so Swift never handles a va_list. */
static inline int gateway_mhd_format_log(char *buffer, size_t length, const char *format, va_list args) {
  return vsnprintf(buffer, length, format, args);
}

#endif
