/* Experiment switch of the smoke (`pdrepro smoke --tcp-nodelay`): preloaded
 * into both agents, it turns Nagle's algorithm off (TCP_NODELAY) on every TCP
 * socket the process connects or accepts, so Mooncake's TCP transport, which
 * at the pinned commit never sets the option itself, runs with it on. Comparing
 * runs with and without it shows whether the mid-size stalls are Nagle holding
 * a short last segment until the peer's delayed ACK arrives.
 * Built on the host at run time: cc -shared -fPIC -O2 -o nodelay.so nodelay.c -ldl
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <sys/socket.h>

static int counted;
/* Lines past this many would only repeat; the connection pool keeps the count small. */
#define MAX_LINES 64

/* The evidence of which connections it caught: each socket's side (connect or
 * accept) and the peer's port, e.g. Mooncake's RPC port (15000-17000) next to
 * the smoke's own control (18080) and data (18081) ports. */
static void say(int fd, const char *how) {
    struct sockaddr_storage peer;
    socklen_t len = sizeof peer;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (++counted > MAX_LINES) return;
    if (getpeername(fd, (struct sockaddr *)&peer, &len) == 0) {
        if (peer.ss_family == AF_INET) {
            struct sockaddr_in *v4 = (struct sockaddr_in *)&peer;
            inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
            port = ntohs(v4->sin_port);
        } else if (peer.ss_family == AF_INET6) {
            struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&peer;
            inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
            port = ntohs(v6->sin6_port);
        }
    }
    fprintf(stderr, "[smoke nodelay] TCP_NODELAY on socket %d (%s, peer %s:%d)\n", counted, how, host, port);
}

static int nodelay(int fd) {
    int type = 0, one = 1;
    socklen_t len = sizeof type;
    struct sockaddr_storage addr;
    socklen_t alen = sizeof addr;
    if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
        return 0;
    if (getsockname(fd, (struct sockaddr *)&addr, &alen) != 0 ||
        (addr.ss_family != AF_INET && addr.ss_family != AF_INET6))
        return 0;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    static int (*real)(int, const struct sockaddr *, socklen_t);
    if (!real) real = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
    int on = nodelay(fd); /* before connecting: a non-blocking connect returns EINPROGRESS */
    int rc = real(fd, addr, len);
    if (on) {
        const struct sockaddr_in *to = (const struct sockaddr_in *)addr;
        char host[INET6_ADDRSTRLEN] = "?";
        if (addr->sa_family == AF_INET) inet_ntop(AF_INET, &to->sin_addr, host, sizeof host);
        if (++counted <= MAX_LINES)
            fprintf(stderr, "[smoke nodelay] TCP_NODELAY on socket %d (connect, peer %s:%d)\n", counted, host,
                    addr->sa_family == AF_INET ? ntohs(to->sin_port) : 0);
    }
    return rc;
}

int accept(int fd, struct sockaddr *addr, socklen_t *len) {
    static int (*real)(int, struct sockaddr *, socklen_t *);
    if (!real) real = (int (*)(int, struct sockaddr *, socklen_t *))dlsym(RTLD_NEXT, "accept");
    int got = real(fd, addr, len);
    if (nodelay(got)) say(got, "accept");
    return got;
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    static int (*real)(int, struct sockaddr *, socklen_t *, int);
    if (!real) real = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
    int got = real(fd, addr, len, flags);
    if (nodelay(got)) say(got, "accept");
    return got;
}
