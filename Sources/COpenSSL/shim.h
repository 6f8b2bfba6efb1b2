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
#include <openssl/cms.h>
#include <openssl/rsa.h>

/* STACK_OF(X509) helpers are function-like macros in OpenSSL 3. */
static inline STACK_OF(X509) *gateway_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int gateway_sk_X509_push(STACK_OF(X509) *sk, X509 *x) { return sk_X509_push(sk, x); }
static inline void gateway_sk_X509_free(STACK_OF(X509) *sk) { sk_X509_free(sk); }
static inline int gateway_sk_X509_num(const STACK_OF(X509) *sk) { return sk_X509_num(sk); }
static inline X509 *gateway_sk_X509_value(const STACK_OF(X509) *sk, int i) { return sk_X509_value(sk, i); }
/* Frees the stack and drops one reference of each certificate in it (what CMS_get1_certs hands over). */
static inline void gateway_sk_X509_pop_free(STACK_OF(X509) *sk) { sk_X509_pop_free(sk, X509_free); }

/* STACK_OF(CMS_SignerInfo) helpers are macros too. */
static inline int gateway_sk_CMS_SignerInfo_num(STACK_OF(CMS_SignerInfo) *sk) { return sk_CMS_SignerInfo_num(sk); }
static inline CMS_SignerInfo *gateway_sk_CMS_SignerInfo_value(STACK_OF(CMS_SignerInfo) *sk, int i) {
    return sk_CMS_SignerInfo_value(sk, i);
}

/* A SignerInfo's digest and signature algorithms as NIDs (NID_undef when absent or unknown), its public key and
   certificate (NULL until CMS_set1_signers_certs found them). No X509_ALGOR crosses into Swift. */
static inline void gateway_cms_signer_info(CMS_SignerInfo *si, int *digest_nid, int *signature_nid, EVP_PKEY **key,
                                           X509 **signer) {
    X509_ALGOR *digest = NULL, *signature = NULL;
    const ASN1_OBJECT *object = NULL;
    *key = NULL;
    *signer = NULL;
    CMS_SignerInfo_get0_algs(si, key, signer, &digest, &signature);
    *digest_nid = NID_undef;
    *signature_nid = NID_undef;
    if (digest != NULL) { X509_ALGOR_get0(&object, NULL, NULL, digest); *digest_nid = OBJ_obj2nid(object); }
    object = NULL;
    if (signature != NULL) { X509_ALGOR_get0(&object, NULL, NULL, signature); *signature_nid = OBJ_obj2nid(object); }
}

/* OPENSSL_free is a macro. */
static inline void gateway_openssl_free(void *p) { OPENSSL_free(p); }

/* BIO_get_mem_data is a macro. */
static inline long gateway_bio_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }

/* XN_FLAG_RFC2253 is a composite macro. */
static inline unsigned long gateway_xn_flag_rfc2253(void) { return XN_FLAG_RFC2253; }

#endif
