/* c-epoll's TLS (the `tls` feature) on OpenSSL 3.0: one SSL_CTX for the process, one SSL per
 * connection, driven non-blocking inside the epoll loops. The calls mirror recv/send so that
 * server.c's read and write loops keep their shape: > 0 bytes, 0 at the peer's end of data,
 * -1 with errno EAGAIN (OpenSSL wants the socket readable or writable) or EIO (fatal). */
#ifndef C_EPOLL_TLS_H
#define C_EPOLL_TLS_H

#include <stddef.h>
#include <sys/types.h>
#include <openssl/ssl.h>

/* With $TLS_CERT and $TLS_KEY set: the server context; with neither: NULL (plaintext). One of
 * them alone, or a file OpenSSL cannot load, exits with one line naming it. */
SSL_CTX *tls_setup(void);

/* A server-side SSL on the accepted socket `fd`; NULL (with a message) if OpenSSL has none. */
SSL *tls_new(SSL_CTX *ctx, int fd);

/* Finishes the handshake if needed (SSL_accept), then reads decrypted bytes. */
ssize_t tls_recv(SSL *ssl, void *buf, size_t n);

ssize_t tls_send(SSL *ssl, const void *buf, size_t n);

/* Sends close_notify unless the connection failed, then frees the SSL (the caller closes fd). */
void tls_close(SSL *ssl);

#endif
