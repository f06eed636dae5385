/* TCP helpers with deadlines, IPv4 and IPv6 (see net.h). */
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

static const uint8_t V4_PREFIX[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

dist_addr dist_addr_v4(uint32_t be)
{
    dist_addr a;
    memcpy(a.b, V4_PREFIX, 12);
    memcpy(a.b + 12, &be, 4);
    return a;
}

int dist_addr_is_v4(const dist_addr *a) { return memcmp(a->b, V4_PREFIX, 12) == 0; }

int dist_addr_is_loopback(const dist_addr *a)
{
    if (dist_addr_is_v4(a))
        return a->b[12] == 127;
    static const uint8_t one[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return memcmp(a->b, one, 16) == 0;
}

int dist_addr_is_any(const dist_addr *a)
{
    static const uint8_t zero[16] = {0};
    if (dist_addr_is_v4(a))
        return memcmp(a->b + 12, zero, 4) == 0;
    return memcmp(a->b, zero, 16) == 0;
}

void dist_addr_str(const dist_addr *a, char out[DIST_ADDR_STR])
{
    const char *ok = dist_addr_is_v4(a) ? inet_ntop(AF_INET, a->b + 12, out, DIST_ADDR_STR)
                                        : inet_ntop(AF_INET6, a->b, out, DIST_ADDR_STR);
    if (!ok)
        snprintf(out, DIST_ADDR_STR, "?");
}

void dist_addr_port_str(const dist_addr *a, uint16_t port, char out[DIST_ADDR_STR])
{
    char s[DIST_ADDR_STR];
    dist_addr_str(a, s);
    snprintf(out, DIST_ADDR_STR, dist_addr_is_v4(a) ? "%.46s:%u" : "[%.46s]:%u", s, (unsigned)port);
}

/* A literal into @p a: 1 when it is one (brackets around IPv6 allowed). */
static int literal(const char *text, dist_addr *a)
{
    struct in_addr v4;
    if (inet_pton(AF_INET, text, &v4) == 1) {
        *a = dist_addr_v4(v4.s_addr);
        return 1;
    }
    char buf[64];
    size_t n = strlen(text);
    if (n >= 2 && text[0] == '[' && text[n - 1] == ']' && n - 2 < sizeof buf) {
        memcpy(buf, text + 1, n - 2);
        buf[n - 2] = '\0';
        text = buf;
    }
    return inet_pton(AF_INET6, text, a->b) == 1;
}

manta_status dist_addr_parse(const char *text, dist_addr *addr, manta_err *err)
{
    if (text && literal(text, addr))
        return MANTA_OK;
    return manta_err_set(err, MANTA_ERR_INVALID_ARG, "'%s' is not an IPv4 or IPv6 address",
                         text ? text : "");
}

static dist_addr from_sockaddr(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return dist_addr_v4(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr);
    dist_addr a;
    memcpy(a.b, ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr, 16);
    return a;
}

manta_status dist_resolve(const char *host, dist_addr *addr, manta_err *err)
{
    if (!host || !host[0])
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "empty host name");
    if (literal(host, addr))
        return MANTA_OK;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || !res)
        return manta_err_set(err, MANTA_ERR_IO, "cannot resolve host '%s': %s", host,
                             gai_strerror(rc));
    manta_status st = MANTA_ERR_IO;
    for (struct addrinfo *i = res; i; i = i->ai_next)
        if (i->ai_family == AF_INET || i->ai_family == AF_INET6) {
            *addr = from_sockaddr(i->ai_addr);
            st = MANTA_OK;
            break;
        }
    freeaddrinfo(res);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "host '%s' has no IPv4 or IPv6 address", host);
    return MANTA_OK;
}

manta_status dist_iface_addr(const char *name, const dist_addr *like, dist_addr *addr,
                             manta_err *err)
{
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0)
        return manta_err_set(err, MANTA_ERR_IO, "getifaddrs: %s", strerror(errno));
    const int fam = dist_addr_is_v4(like) ? AF_INET : AF_INET6;
    char names[256] = "";
    size_t used = 0;
    manta_status st = MANTA_ERR_INVALID_ARG;
    for (struct ifaddrs *i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != fam)
            continue;
        dist_addr a = from_sockaddr(i->ifa_addr);
        if (fam == AF_INET6 && a.b[0] == 0xfe && (a.b[1] & 0xc0) == 0x80)
            continue; /* link-local: needs a scope, not routable */
        if (strcmp(i->ifa_name, name) == 0) {
            *addr = a;
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
        return manta_err_set(err, st, "interface '%s' has no %s address (interfaces with one: %s)",
                             name, fam == AF_INET ? "IPv4" : "IPv6 (non-link-local)",
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

/* The socket address of addr:port in its family; its length. */
static socklen_t fill_sa(struct sockaddr_storage *ss, const dist_addr *a, uint16_t port)
{
    memset(ss, 0, sizeof *ss);
    if (dist_addr_is_v4(a)) {
        struct sockaddr_in *sa = (struct sockaddr_in *)(void *)ss;
        sa->sin_family = AF_INET;
        memcpy(&sa->sin_addr.s_addr, a->b + 12, 4);
        sa->sin_port = htons(port);
        return sizeof *sa;
    }
    struct sockaddr_in6 *sa = (struct sockaddr_in6 *)(void *)ss;
    sa->sin6_family = AF_INET6;
    memcpy(sa->sin6_addr.s6_addr, a->b, 16);
    sa->sin6_port = htons(port);
    return sizeof *sa;
}

manta_status dist_listen(const dist_addr *addr, uint16_t port, int sock_buf, int *fd,
                         uint16_t *bound, manta_err *err)
{
    char a[DIST_ADDR_STR];
    dist_addr_port_str(addr, port, a);
    const int v4 = dist_addr_is_v4(addr);
    int s = socket(v4 ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return manta_err_set(err, MANTA_ERR_IO, "socket (%s): %s", v4 ? "IPv4" : "IPv6",
                             strerror(errno));
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (!v4) {
        int only = dist_addr_is_any(addr) ? 0 : 1; /* :: is dual stack */
        setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &only, sizeof only);
    }
    dist_tune(s, sock_buf);
    struct sockaddr_storage ss;
    socklen_t len = fill_sa(&ss, addr, port);
    if (bind(s, (struct sockaddr *)&ss, len) != 0 || listen(s, 64) != 0) {
        int e = errno;
        close(s);
        return manta_err_set(
            err, MANTA_ERR_IO, "cannot listen on %s: %s%s", a, strerror(e),
            e == EADDRINUSE      ? " (another job on this port? choose another MASTER_PORT)"
            : e == EADDRNOTAVAIL ? " (not an address of this host: rank 0 must run where "
                                   "MASTER_ADDR points)"
                                 : "");
    }
    len = sizeof ss;
    if (getsockname(s, (struct sockaddr *)&ss, &len) != 0) {
        int e = errno;
        close(s);
        return manta_err_set(err, MANTA_ERR_IO, "getsockname on %s: %s", a, strerror(e));
    }
    if (bound)
        *bound = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)(void *)&ss)->sin_port
                                               : ((struct sockaddr_in6 *)(void *)&ss)->sin6_port);
    *fd = s;
    return MANTA_OK;
}

manta_status dist_local_addr(int fd, dist_addr *addr, manta_err *err)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return manta_err_set(err, MANTA_ERR_IO, "getsockname: %s", strerror(errno));
    *addr = from_sockaddr((const struct sockaddr *)&ss);
    return MANTA_OK;
}

manta_status dist_connect(const dist_addr *addr, uint16_t port, int sock_buf, double deadline,
                          const char *what, int *fd, manta_err *err)
{
    struct sockaddr_storage sa;
    const socklen_t salen = fill_sa(&sa, addr, port);
    int last = ETIMEDOUT;
    double backoff = 0.01;
    for (;;) {
        int s = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0)
            return manta_err_set(err, MANTA_ERR_IO, "socket: %s", strerror(errno));
        dist_tune(s, sock_buf);
        int rc = connect(s, (struct sockaddr *)&sa, salen);
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

manta_status dist_accept(int lfd, double deadline, int *fd, dist_addr *peer_addr,
                         uint16_t *peer_port, manta_err *err)
{
    for (;;) {
        struct sockaddr_storage sa;
        socklen_t len = sizeof sa;
        int s = accept(lfd, (struct sockaddr *)&sa, &len);
        if (s >= 0) {
            fcntl(s, F_SETFD, FD_CLOEXEC);
            dist_tune(s, 0); /* buffer sizes are inherited from the listener */
            if (peer_addr)
                *peer_addr = from_sockaddr((const struct sockaddr *)&sa);
            if (peer_port)
                *peer_port = ntohs(sa.ss_family == AF_INET
                                       ? ((struct sockaddr_in *)(void *)&sa)->sin_port
                                       : ((struct sockaddr_in6 *)(void *)&sa)->sin6_port);
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

int dist_have_ipv6_loopback(void)
{
    int s = socket(AF_INET6, SOCK_STREAM, 0);
    if (s < 0)
        return 0;
    struct sockaddr_in6 sa;
    memset(&sa, 0, sizeof sa);
    sa.sin6_family = AF_INET6;
    sa.sin6_addr = in6addr_loopback;
    int ok = bind(s, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(s);
    return ok;
}
