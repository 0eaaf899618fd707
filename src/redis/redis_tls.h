/* redis_tls.h - the OpenSSL side of a rediss:// connection: the client
 * context built from the "redis_tls" options, the per-connection SSL that
 * names and verifies the server, and the words a failed handshake is
 * reported in. No sockets here: redis_link.c owns the connection. */
#ifndef SLUICE_REDIS_TLS_H
#define SLUICE_REDIS_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "config/redis_url.h"

/* A client context: TLS 1.2 or later; the system's CAs, or only ca_file's;
 * the client certificate and key if given; peer verification unless
 * no_verify. NULL with the reason (naming the file) in err. The caller
 * frees it with SSL_CTX_free. */
SSL_CTX *sl_redis_tls_ctx_new(const sl_redis_tls_options *o, char *err, size_t err_size);

/* An SSL for one connection to host (the URL's): SNI and the verified
 * name are o->server_name or else host (an IP address is verified as one
 * and sent without SNI). NULL with the reason in err; caller owns it. */
SSL *sl_redis_tls_ssl_new(SSL_CTX *ctx, const sl_redis_tls_options *o, const char *host,
                          char *err, size_t err_size);

/* Why a TLS connection failed, from the handshake's verify result
 * (SSL_get_verify_result) and the first OpenSSL error code (0: none), e.g.
 * "certificate verify failed: unable to get local issuer certificate",
 * "certificate verify failed: host name mismatch" or "TLS error: tlsv13
 * alert certificate required". No I/O. */
void sl_redis_tls_describe(long verify_result, unsigned long ssl_error, char *out, size_t size);

#endif
