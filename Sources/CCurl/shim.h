#ifndef GATEWAY_CURL_SHIM_H
#define GATEWAY_CURL_SHIM_H
#include <stddef.h>
#include <stdint.h>
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

/* curl_easy_setopt / curl_easy_getinfo are variadic: one typed wrapper per argument kind. */
static inline CURLcode gateway_curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode gateway_curl_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode gateway_curl_setopt_str(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode gateway_curl_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode gateway_curl_setopt_write_cb(CURL *h, CURLoption o, curl_write_callback cb) { return curl_easy_setopt(h, o, cb); }
static inline CURLcode gateway_curl_setopt_xferinfo_cb(CURL *h, CURLoption o, curl_xferinfo_callback cb) { return curl_easy_setopt(h, o, cb); }
static inline CURLcode gateway_curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }

#endif
