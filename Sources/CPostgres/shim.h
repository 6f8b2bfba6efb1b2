#ifndef GATEWAY_POSTGRES_SHIM_H
#define GATEWAY_POSTGRES_SHIM_H
/* libc first (a shim never defines feature macros). libpq-fe.h lives in /usr/include/postgresql, which SwiftPM learns
   from `pkg-config --cflags libpq`. The PG_DIAG_* field codes are character macros that do not import: Postgres
   spells them out. */
#include <stddef.h>
#include <stdint.h>
#include <libpq-fe.h>

#endif
