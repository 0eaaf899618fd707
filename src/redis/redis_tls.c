/* redis_tls.c - see redis_tls.h. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "redis/redis_tls.h"

/* The first queued OpenSSL error as text, or `fallback`; the queue is
 * emptied so that the next failure starts clean. */
static const char *openssl_reason(char *buf, size_t size, const char *fallback)
{
    unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (e == 0)
        return fallback;
    const char *reason = ERR_reason_error_string(e);
    if (reason)
        snprintf(buf, size, "%s", reason);
    else
        ERR_error_string_n(e, buf, size);
    return buf;
}

SSL_CTX *sl_redis_tls_ctx_new(const sl_redis_tls_options *o, char *err, size_t err_size)
{
    char why[256];
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        snprintf(err, err_size, "TLS: cannot create a context: %s",
                 openssl_reason(why, sizeof why, "out of memory"));
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
    /* A private CA replaces the system's: trusting both would let any
     * public CA vouch for a name meant for the private one. */
    int ok = o->ca_file ? SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL)
                        : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
        snprintf(err, err_size, "TLS: cannot load the CA certificates%s%s: %s",
                 o->ca_file ? " from " : "", o->ca_file ? o->ca_file : "",
                 openssl_reason(why, sizeof why, "unknown error"));
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (o->cert_file && SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1) {
        snprintf(err, err_size, "TLS: cannot load the client certificate %s: %s", o->cert_file,
                 openssl_reason(why, sizeof why, "unknown error"));
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (o->key_file && (SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1 ||
                        SSL_CTX_check_private_key(ctx) != 1)) {
        snprintf(err, err_size, "TLS: cannot use the client key %s: %s", o->key_file,
                 openssl_reason(why, sizeof why, "unknown error"));
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_verify(ctx, o->no_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    return ctx;
}

static bool is_ip_address(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

SSL *sl_redis_tls_ssl_new(SSL_CTX *ctx, const sl_redis_tls_options *o, const char *host,
                          char *err, size_t err_size)
{
    char why[256];
    const char *name = o->server_name ? o->server_name : host;
    ERR_clear_error();
    SSL *ssl = SSL_new(ctx);
    if (!ssl) {
        snprintf(err, err_size, "TLS: %s", openssl_reason(why, sizeof why, "out of memory"));
        return NULL;
    }
    bool ip = is_ip_address(name);
    /* SNI carries names only (RFC 6066). */
    if (!ip && SSL_set_tlsext_host_name(ssl, name) != 1) {
        snprintf(err, err_size, "TLS: cannot set the server name: %s",
                 openssl_reason(why, sizeof why, "invalid name"));
        SSL_free(ssl);
        return NULL;
    }
    if (!o->no_verify) {
        X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name)
                     : X509_VERIFY_PARAM_set1_host(param, name, 0);
        if (set != 1) {
            snprintf(err, err_size, "TLS: cannot verify the name: %s",
                     openssl_reason(why, sizeof why, "invalid name"));
            SSL_free(ssl);
            return NULL;
        }
    }
    return ssl;
}

void sl_redis_tls_describe(long verify_result, unsigned long ssl_error, char *out, size_t size)
{
    if (verify_result != X509_V_OK) {
        /* OpenSSL's words are "hostname mismatch" and "IP address
         * mismatch"; one phrase for both tells an operator what to fix. */
        bool name = verify_result == X509_V_ERR_HOSTNAME_MISMATCH ||
                    verify_result == X509_V_ERR_IP_ADDRESS_MISMATCH;
        snprintf(out, size, "certificate verify failed: %s",
                 name ? "host name mismatch" : X509_verify_cert_error_string(verify_result));
        return;
    }
    if (ssl_error == 0) {
        snprintf(out, size, "connection closed during TLS");
        return;
    }
    /* The words of SSL's reasons are loaded with the library; a caller
     * that has not made a context yet would see "reason(1116)". */
    OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS, NULL);
    const char *reason = ERR_reason_error_string(ssl_error);
    if (reason) {
        snprintf(out, size, "TLS error: %s", reason);
        return;
    }
    char buf[256];
    ERR_error_string_n(ssl_error, buf, sizeof buf);
    snprintf(out, size, "TLS error: %s", buf);
}
