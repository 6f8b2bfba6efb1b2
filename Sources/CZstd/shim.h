#ifndef GATEWAY_ZSTD_SHIM_H
#define GATEWAY_ZSTD_SHIM_H
#include <stddef.h>
#include <zstd.h>
#include <zstd_errors.h>
#endif
