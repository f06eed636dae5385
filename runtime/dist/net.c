/* IPv4 TCP helpers with deadlines (see net.h). */
#define _DEFAULT_SOURCE /* getifaddrs, TCP_NODELAY */

#include "dist/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

double dist_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Milliseconds left until deadline for poll(), at least 0, rounded up. */
static int ms_left(double deadline)
{
    double left = deadline - dist_now();
    if (left <= 0)
        return 0;
    if (left > 3600.0)
        return 3600 * 1000;
    return (int)(left * 1000.0) + 1;
}

void dist_ipv4_str(uint32_t addr, char out[16])
{
    struct in_addr a;
    a.s_addr = addr;
    if (!inet_ntop(AF_INET, &a, out, 16))
        snprintf(out, 16, "?");
}

int dist_ipv4_is_loopback(uint32_t addr) { return (ntohl(addr) >> 24) == 127; }

manta_status dist_resolve_ipv4(const char *host, uint32_t *addr, manta_err *err)
{
    if (!host || !host[0])
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "empty host name");
    struct in_addr a;
    if (inet_pton(AF_INET, host, &a) == 1) {
        *addr = a.s_addr;
        return MANTA_OK;
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || !res)
        return manta_err_set(err, MANTA_ERR_IO, "cannot resolve host '%s' to an IPv4 address: %s",
                             host, gai_strerror(rc));
    *addr = ((const struct sockaddr_in *)(const void *)res->ai_addr)->sin_addr.s_addr;
    freeaddrinfo(res);
    return MANTA_OK;
}

manta_status dist_iface_ipv4(const char *name, uint32_t *addr, manta_err *err)
{
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0)
        return manta_err_set(err, MANTA_ERR_IO, "getifaddrs: %s", strerror(errno));
    char names[256] = "";
    size_t used = 0;
    manta_status st = MANTA_ERR_INVALID_ARG;
    for (struct ifaddrs *i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        if (strcmp(i->ifa_name, name) == 0) {
            *addr = ((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr.s_addr;
            st = MANTA_OK;
            break;
        }
        if (used < sizeof names) {
            int w =
                snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", i->ifa_name);
            if (w > 0)
                used += (size_t)w;
        }
    }
    freeifaddrs(list);
    if (st != MANTA_OK)
        return manta_err_set(err, st,
                             "interface '%s' has no IPv4 address (interfaces with one: %s)", name,
                             names[0] ? names : "none");
    return MANTA_OK;
}

void dist_tune(int fd, int sock_buf)
{
    int one = 1, buf = sock_buf;
    int fl = fcntl(fd, F_GETFL, 0);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (buf > 0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    }
}

void dist_close(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static void fill_sin(struct sockaddr_in *sa, uint32_t addr, uint16_t port)
{
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = addr;
    sa->sin_port = htons(port);
}

manta_status dist_listen(uint32_t addr, uint16_t port, int sock_buf, int *fd, uint16_t *bound,
                         manta_err *err)
{
    char a[16];
    dist_ipv4_str(addr, a);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return manta_err_set(err, MANTA_ERR_IO, "socket: %s", strerror(errno));
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    dist_tune(s, sock_buf);
    struct sockaddr_in sa;
    fill_sin(&sa, addr, port);
    if (bind(s, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(s, 64) != 0) {
        int e = errno;
        close(s);
        return manta_err_set(
            err, MANTA_ERR_IO, "cannot listen on %s:%u: %s%s", a, (unsigned)port, strerror(e),
            e == EADDRINUSE      ? " (another job on this port? choose another MASTER_PORT)"
            : e == EADDRNOTAVAIL ? " (not an address of this host: rank 0 must run where "
                                   "MASTER_ADDR points)"
                                 : "");
    }
    socklen_t len = sizeof sa;
    if (getsockname(s, (struct sockaddr *)&sa, &len) != 0) {
        int e = errno;
        close(s);
        return manta_err_set(err, MANTA_ERR_IO, "getsockname on %s: %s", a, strerror(e));
    }
    if (bound)
        *bound = ntohs(sa.sin_port);
    *fd = s;
    return MANTA_OK;
}

manta_status dist_connect(uint32_t addr, uint16_t port, int sock_buf, double deadline,
                          const char *what, int *fd, manta_err *err)
{
    struct sockaddr_in sa;
    fill_sin(&sa, addr, port);
    int last = ETIMEDOUT;
    double backoff = 0.01;
    for (;;) {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0)
            return manta_err_set(err, MANTA_ERR_IO, "socket: %s", strerror(errno));
        dist_tune(s, sock_buf);
        int rc = connect(s, (struct sockaddr *)&sa, sizeof sa);
        if (rc != 0 && errno == EINPROGRESS) {
            struct pollfd p = {.fd = s, .events = POLLOUT};
            int n;
            do
                n = poll(&p, 1, ms_left(deadline));
            while (n < 0 && errno == EINTR);
            if (n == 1) {
                int e = 0;
                socklen_t len = sizeof e;
                getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &len);
                rc = e ? -1 : 0;
                errno = e;
            } else {
                rc = -1;
                errno = ETIMEDOUT;
            }
        }
        if (rc == 0) {
            *fd = s;
            return MANTA_OK;
        }
        last = errno;
        close(s);
        if (last != ECONNREFUSED && last != ENETUNREACH && last != EHOSTUNREACH &&
            last != ETIMEDOUT && last != ECONNRESET && last != EAGAIN)
            break;
        double now = dist_now();
        if (now + backoff >= deadline)
            break;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(backoff * 1e9)};
        nanosleep(&ts, NULL);
        if (backoff < 0.2)
            backoff *= 2;
    }
    return manta_err_set(err, MANTA_ERR_IO, "cannot connect to %s: %s (gave up at the deadline)",
                         what, strerror(last));
}

manta_status dist_accept(int lfd, double deadline, int *fd, uint32_t *peer_addr,
                         uint16_t *peer_port, manta_err *err)
{
    for (;;) {
        struct sockaddr_in sa;
        socklen_t len = sizeof sa;
        int s = accept(lfd, (struct sockaddr *)&sa, &len);
        if (s >= 0) {
            fcntl(s, F_SETFD, FD_CLOEXEC);
            dist_tune(s, 0); /* buffer sizes are inherited from the listener */
            if (peer_addr)
                *peer_addr = sa.sin_addr.s_addr;
            if (peer_port)
                *peer_port = ntohs(sa.sin_port);
            *fd = s;
            return MANTA_OK;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
            return manta_err_set(err, MANTA_ERR_IO, "accept: %s", strerror(errno));
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        int ms = ms_left(deadline);
        if (ms == 0)
            return manta_err_set(err, MANTA_ERR_IO, "timed out waiting for a connection");
        if (poll(&p, 1, ms) < 0 && errno != EINTR)
            return manta_err_set(err, MANTA_ERR_IO, "poll: %s", strerror(errno));
    }
}

manta_status dist_send_all(int fd, const void *p, size_t n, double deadline, const char *what,
                           manta_err *err)
{
    const unsigned char *b = p;
    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w > 0) {
            b += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return manta_err_set(err, MANTA_ERR_IO, "sending to %s: %s", what, strerror(errno));
        struct pollfd q = {.fd = fd, .events = POLLOUT};
        int ms = ms_left(deadline);
        if (ms == 0 || poll(&q, 1, ms) == 0)
            return manta_err_set(err, MANTA_ERR_IO, "timed out sending to %s", what);
    }
    return MANTA_OK;
}

manta_status dist_recv_all(int fd, void *p, size_t n, double deadline, const char *what,
                           manta_err *err)
{
    unsigned char *b = p;
    while (n > 0) {
        ssize_t r = recv(fd, b, n, 0);
        if (r > 0) {
            b += r;
            n -= (size_t)r;
            continue;
        }
        if (r == 0)
            return manta_err_set(err, MANTA_ERR_IO, "%s closed the connection", what);
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return manta_err_set(err, MANTA_ERR_IO, "receiving from %s: %s", what, strerror(errno));
        struct pollfd q = {.fd = fd, .events = POLLIN};
        int ms = ms_left(deadline);
        if (ms == 0 || poll(&q, 1, ms) == 0)
            return manta_err_set(err, MANTA_ERR_IO, "timed out waiting for %s", what);
    }
    return MANTA_OK;
}

int dist_free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    int port = 0;
    if (s >= 0 && bind(s, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(s, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    if (s >= 0)
        close(s);
    return port;
}
