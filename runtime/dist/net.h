/**
 * @file net.h
 * @brief TCP helpers with deadlines for the distributed layer, IPv4 and IPv6:
 *        resolve, listen, connect with retries, accept, send and receive
 *        exactly n bytes, and interface lookup.
 *
 * Every socket made here is non-blocking; every wait is a poll() bounded by an
 * absolute deadline on the monotonic clock (seconds, see dist_now()). No call
 * blocks past its deadline. Sends use MSG_NOSIGNAL, so a closed peer gives an
 * error, never SIGPIPE. Addresses are dist_addr (IPv6, IPv4 mapped into it).
 */
#ifndef MANTA_DIST_NET_H
#define MANTA_DIST_NET_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/** A typical explicit socket buffer size (dist_config.sock_buf); 0 there keeps the kernel's autotuning. */
#define DIST_SOCK_BUF (4 << 20)

/** Monotonic clock in seconds (the time base of every deadline). */
double dist_now(void);

/**
 * An IP address: IPv6, or IPv4 as an IPv4-mapped IPv6 address (::ffff:a.b.c.d), 16 bytes in
 * network order. Sockets are made in the family the address belongs to (AF_INET for a mapped
 * IPv4 address, AF_INET6 otherwise).
 */
typedef struct dist_addr {
    uint8_t b[16];
} dist_addr;

/** Longest text of an address with its port ("[ffff:...:ffff]:65535"), terminator included. */
#define DIST_ADDR_STR 56

/** The IPv4 address @p be (network order) as a dist_addr. */
dist_addr dist_addr_v4(uint32_t be);
/** Non-zero when @p a is an IPv4(-mapped) address. */
int dist_addr_is_v4(const dist_addr *a);
/** Non-zero for 127.0.0.0/8 and ::1. */
int dist_addr_is_loopback(const dist_addr *a);
/** Non-zero for 0.0.0.0 and ::. */
int dist_addr_is_any(const dist_addr *a);
/** Text of @p a: dotted IPv4 or RFC 5952 IPv6 ("10.0.0.1", "::1"). */
void dist_addr_str(const dist_addr *a, char out[DIST_ADDR_STR]);
/** Text of @p a with @p port: "10.0.0.1:29500", "[::1]:29500". */
void dist_addr_port_str(const dist_addr *a, uint16_t port, char out[DIST_ADDR_STR]);

/**
 * Resolve a host to one address: an IPv4 or IPv6 literal ("10.0.0.1", "::1", "[::1]"), else
 * a name through getaddrinfo(AF_UNSPEC), taking the first answer (the system's preference,
 * RFC 6724: a name resolving to IPv6 and IPv4 gives the IPv6 address when the host has a
 * route for it).
 * @param host  name or address (not NULL, not empty).
 * @param err   record for the failure (names the host); may be NULL.
 */
manta_status dist_resolve(const char *host, dist_addr *addr, manta_err *err);

/**
 * Parse an IPv4 or IPv6 literal (brackets allowed) into @p addr.
 * @return MANTA_ERR_INVALID_ARG when @p text is neither.
 */
manta_status dist_addr_parse(const char *text, dist_addr *addr, manta_err *err);

/**
 * Address of a network interface (getifaddrs), e.g. "eth0", of the family of @p like (IPv4
 * when it is IPv4, else IPv6 other than link-local fe80::/10).
 * @param err   names the interface and lists the ones that have an address of that family.
 */
manta_status dist_iface_addr(const char *name, const dist_addr *like, dist_addr *addr,
                             manta_err *err);

/** A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice, for a
 *  rendezvous port), or 0 when none could be had. */
int dist_free_port(void);

/** Non-zero when this host can listen on the IPv6 loopback ::1. */
int dist_have_ipv6_loopback(void);

/**
 * Create a non-blocking listening socket bound to addr:port (port 0: ephemeral),
 * with SO_REUSEADDR and dist_tune(@p sock_buf) (inherited by accepted sockets). An IPv6
 * socket bound to :: also accepts IPv4 connections (dual stack, IPV6_V6ONLY off); bound to
 * any other IPv6 address it is IPv6 only.
 * @param bound  out: the port actually bound (host order); may be NULL.
 */
manta_status dist_listen(const dist_addr *addr, uint16_t port, int sock_buf, int *fd,
                         uint16_t *bound, manta_err *err);

/**
 * Connect to addr:port, retrying refused or unreachable attempts with a short
 * back-off until @p deadline. @p what names the peer in the message
 * ("master 10.0.0.1:29500"). On success *fd is a non-blocking socket tuned with
 * dist_tune(@p sock_buf) before the connection (so window scaling matches).
 */
manta_status dist_connect(const dist_addr *addr, uint16_t port, int sock_buf, double deadline,
                          const char *what, int *fd, manta_err *err);

/**
 * Accept one connection on a listening socket before @p deadline.
 * @param peer_addr out: the peer's address (IPv4 peers of a dual-stack socket come out as
 *                  IPv4); may be NULL.
 * @param peer_port out: the peer's port (host order); may be NULL.
 */
manta_status dist_accept(int lfd, double deadline, int *fd, dist_addr *peer_addr,
                         uint16_t *peer_port, manta_err *err);

/** The local address of a connected socket (the interface that routes to its peer). */
manta_status dist_local_addr(int fd, dist_addr *addr, manta_err *err);

/** Send exactly @p n bytes before @p deadline; @p what names the peer in errors. */
manta_status dist_send_all(int fd, const void *p, size_t n, double deadline, const char *what,
                           manta_err *err);

/** Receive exactly @p n bytes before @p deadline; EOF is an error naming @p what. */
manta_status dist_recv_all(int fd, void *p, size_t n, double deadline, const char *what,
                           manta_err *err);

/**
 * Make @p fd non-blocking, set TCP_NODELAY and, when @p sock_buf > 0, SO_SNDBUF and SO_RCVBUF
 * to that many bytes. With 0 the kernel's autotuning sizes the buffers (on Linux up to
 * net.ipv4.tcp_wmem / tcp_rmem's maximum; setting a size disables autotuning and is capped by
 * net.core.wmem_max / rmem_max).
 */
void dist_tune(int fd, int sock_buf);

/** Close @p *fd if open (>= 0) and set it to -1. */
void dist_close(int *fd);

#endif
