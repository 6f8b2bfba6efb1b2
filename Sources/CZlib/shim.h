#ifndef GATEWAY_ZLIB_SHIM_H
#define GATEWAY_ZLIB_SHIM_H
#include <stddef.h>
#include <zlib.h>

/* inflateInit is a macro (it passes ZLIB_VERSION and sizeof(z_stream)): it does not import. */
static inline int gateway_inflate_init(z_streamp stream) { return inflateInit(stream); }
/* deflateInit is a macro too. */
static inline int gateway_deflate_init(z_streamp stream, int level) { return deflateInit(stream, level); }

#endif
