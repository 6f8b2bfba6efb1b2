#ifndef GATEWAY_OPENSSL_SHIM_H
#define GATEWAY_OPENSSL_SHIM_H
#include <stddef.h>
#include <stdint.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>
#include <openssl/objects.h>
#include <openssl/asn1.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/core_names.h>

/* STACK_OF(X509) helpers are function-like macros in OpenSSL 3. */
static inline STACK_OF(X509) *gateway_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int gateway_sk_X509_push(STACK_OF(X509) *sk, X509 *x) { return sk_X509_push(sk, x); }
static inline void gateway_sk_X509_free(STACK_OF(X509) *sk) { sk_X509_free(sk); }

/* OPENSSL_free is a macro. */
static inline void gateway_openssl_free(void *p) { OPENSSL_free(p); }

/* BIO_get_mem_data is a macro. */
static inline long gateway_bio_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }

/* XN_FLAG_RFC2253 is a composite macro. */
static inline unsigned long gateway_xn_flag_rfc2253(void) { return XN_FLAG_RFC2253; }

#endif
