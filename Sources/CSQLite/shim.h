#ifndef GATEWAY_SQLITE_SHIM_H
#define GATEWAY_SQLITE_SHIM_H
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast of -1 to a function pointer: it does not import. */
static inline sqlite3_destructor_type gateway_sqlite_transient(void) { return SQLITE_TRANSIENT; }

#endif
