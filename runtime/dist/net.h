/**
 * @file net.h
 * @brief IPv4 TCP helpers with deadlines for the distributed layer: resolve,
 *        listen, connect with retries, accept, send and receive exactly n
 *        bytes, and interface lookup.
 *
 * Every socket made here is non-blocking; every wait is a poll() bounded by an
 * absolute deadline on the monotonic clock (seconds, see dist_now()). No call
 * blocks past its deadline. Sends use MSG_NOSIGNAL, so a closed peer gives an
 * error, never SIGPIPE. Addresses are IPv4 in network byte order.
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
 * Resolve a host name or dotted IPv4 address to one IPv4 address.
 * @param host  name or address (not NULL, not empty).
 * @param addr  out: the address, network byte order.
 * @param err   record for the failure (names the host); may be NULL.
 */
manta_status dist_resolve_ipv4(const char *host, uint32_t *addr, manta_err *err);

/**
 * IPv4 address of a network interface (getifaddrs), e.g. "eth0".
 * @param name  interface name.
 * @param addr  out: its first IPv4 address, network byte order.
 * @param err   names the interface and lists the ones that have IPv4 addresses.
 */
manta_status dist_iface_ipv4(const char *name, uint32_t *addr, manta_err *err);

/** Dotted form of @p addr (network byte order) into @p out (16 bytes). */
void dist_ipv4_str(uint32_t addr, char out[16]);

/** Non-zero when @p addr (network byte order) is in 127.0.0.0/8. */
int dist_ipv4_is_loopback(uint32_t addr);

/**
 * Create a non-blocking listening socket bound to addr:port (port 0: ephemeral),
 * with SO_REUSEADDR and dist_tune(@p sock_buf) (inherited by accepted sockets).
 * @param bound  out: the port actually bound (host order); may be NULL.
 */
/** A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice, for a
 *  rendezvous port), or 0 when none could be had. */
int dist_free_port(void);

manta_status dist_listen(uint32_t addr, uint16_t port, int sock_buf, int *fd, uint16_t *bound,
                         manta_err *err);

/**
 * Connect to addr:port, retrying refused or unreachable attempts with a short
 * back-off until @p deadline. @p what names the peer in the message
 * ("master 10.0.0.1:29500"). On success *fd is a non-blocking socket tuned with
 * dist_tune(@p sock_buf) before the connection (so window scaling matches).
 */
manta_status dist_connect(uint32_t addr, uint16_t port, int sock_buf, double deadline,
                          const char *what, int *fd, manta_err *err);

/**
 * Accept one connection on a listening socket before @p deadline.
 * @param peer_addr out: the peer's address (network order); may be NULL.
 * @param peer_port out: the peer's port (host order); may be NULL.
 */
manta_status dist_accept(int lfd, double deadline, int *fd, uint32_t *peer_addr,
                         uint16_t *peer_port, manta_err *err);

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
