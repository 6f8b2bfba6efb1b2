#ifndef GATEWAY_MHD_SHIM_H
#define GATEWAY_MHD_SHIM_H
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

#endif
