/* c-epoll's TLS on OpenSSL 3.0 (see tls.h). */
#include "tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <openssl/err.h>

static void die_openssl(const char *what, const char *path, const char *fix) {
    unsigned long e = ERR_peek_last_error(); /* the outermost reason names the problem best */
    fprintf(stderr, "c-epoll: cannot load %s %s: %s; %s\n", what, path,
            e ? ERR_reason_error_string(e) : "unknown error", fix);
    exit(1);
}

SSL_CTX *tls_setup(void) {
    const char *cert = getenv("TLS_CERT"), *key = getenv("TLS_KEY");
    int have_cert = cert && *cert, have_key = key && *key;
    if (!have_cert && !have_key) return NULL;
    if (!have_cert || !have_key) {
        fprintf(stderr, "c-epoll: %s is set but %s is not; set both (PEM certificate and PKCS#8 key) or neither\n",
                have_cert ? "TLS_CERT" : "TLS_KEY", have_cert ? "TLS_KEY" : "TLS_CERT");
        exit(1);
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) die_openssl("an OpenSSL", "context", "check the OpenSSL installation");
    /* OpenSSL's built-in minimum is none (only its security level keeps TLS 1.0/1.1 out);
     * SPEC asks for 1.2 at least, said the documented way. */
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* flush_out may append to the output buffer (which can move) between a WANT_WRITE and the
     * retry, and takes partial progress like send's. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* A client that shuts its sending side without close_notify still gets its answers, as a
     * half-closed plaintext client does (read_in's end of data). */
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
        die_openssl("TLS_CERT", cert, "point TLS_CERT at a PEM certificate");
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)
        die_openssl("TLS_KEY", key, "point TLS_KEY at a PEM private key");
    if (SSL_CTX_check_private_key(ctx) != 1)
        die_openssl("TLS_KEY", key, "TLS_KEY must be the private key of TLS_CERT");
    return ctx;
}

SSL *tls_new(SSL_CTX *ctx, int fd) {
    SSL *ssl = SSL_new(ctx);
    if (ssl && SSL_set_fd(ssl, fd) == 1) return ssl;
    fprintf(stderr, "c-epoll: SSL_new: %s\n", ERR_reason_error_string(ERR_get_error()));
    ERR_clear_error();
    SSL_free(ssl);
    return NULL;
}

/* Maps an OpenSSL result <= 0 to recv/send's: 0 at close_notify (or a bare end of data),
 * -1/EAGAIN while OpenSSL waits for the socket, -1/EIO when the connection failed. */
static ssize_t result(SSL *ssl, int r) {
    switch (SSL_get_error(ssl, r)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL:
        if (errno == EINTR) return -1;
        /* fall through */
    default:
        /* OpenSSL sent its alert if it had one; no close_notify after a fatal error, and the
         * thread's error queue must be empty before the next connection's calls */
        SSL_set_quiet_shutdown(ssl, 1);
        ERR_clear_error();
        errno = EIO;
        return -1;
    }
}

ssize_t tls_recv(SSL *ssl, void *buf, size_t n) {
    if (!SSL_is_init_finished(ssl)) {
        int r = SSL_accept(ssl);
        if (r <= 0) return result(ssl, r);
    }
    int r = SSL_read(ssl, buf, n > 0x7fffffff ? 0x7fffffff : (int)n);
    return r > 0 ? r : result(ssl, r);
}

ssize_t tls_send(SSL *ssl, const void *buf, size_t n) {
    int r = SSL_write(ssl, buf, n > 0x7fffffff ? 0x7fffffff : (int)n);
    if (r > 0) return r;
    ssize_t x = result(ssl, r);
    /* after the peer's close_notify a failed write reports SSL_ERROR_ZERO_RETURN: for a writer that
     * is a closed connection, never "0 bytes written", which flush_out would retry forever (a client
     * gone after Connection: close: tls-handshake spun one CPU at 100 % answering nothing) */
    if (x == 0) {
        errno = EPIPE;
        return -1;
    }
    return x;
}

void tls_close(SSL *ssl) {
    /* one non-blocking try: close_notify goes out if the socket takes it, no wait for the peer's */
    if (SSL_is_init_finished(ssl)) SSL_shutdown(ssl);
    ERR_clear_error();
    SSL_free(ssl);
}
