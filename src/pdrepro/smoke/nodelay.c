/* Experiment switch of the smoke (`pdrepro smoke --tcp-nodelay`): preloaded
 * into both agents, it turns Nagle's algorithm off (TCP_NODELAY) on every TCP
 * socket the process connects or accepts, so Mooncake's TCP transport, which
 * at the pinned commit never sets the option itself, runs with it on. Comparing
 * runs with and without it shows whether the mid-size stalls are Nagle holding
 * a short last segment until the peer's delayed ACK arrives.
 * Built on the host at run time: cc -shared -fPIC -O2 -o nodelay.so nodelay.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <sys/socket.h>

static int counted;

/* The evidence that the engine's own connections were caught: Mooncake's TCP
 * transport opens one per transfer, so the count runs to about the transfers.
 * Said at 1, 10, 100, ... sockets: an exit-time line would not survive the
 * agent's stderr tap. */
static void milestone(int fd) {
    int n = ++counted;
    while (n % 10 == 0) n /= 10;
    if (n == 1)
        fprintf(stderr, "[smoke nodelay] TCP_NODELAY set on %d TCP socket(s) so far (latest fd %d)\n", counted, fd);
}

static void nodelay(int fd) {
    int type = 0, one = 1;
    socklen_t len = sizeof type;
    struct sockaddr_storage addr;
    socklen_t alen = sizeof addr;
    if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
        return;
    if (getsockname(fd, (struct sockaddr *)&addr, &alen) != 0 ||
        (addr.ss_family != AF_INET && addr.ss_family != AF_INET6))
        return;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0)
        milestone(fd);
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    static int (*real)(int, const struct sockaddr *, socklen_t);
    if (!real) real = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
    nodelay(fd); /* before connecting: a non-blocking connect returns EINPROGRESS */
    return real(fd, addr, len);
}

int accept(int fd, struct sockaddr *addr, socklen_t *len) {
    static int (*real)(int, struct sockaddr *, socklen_t *);
    if (!real) real = (int (*)(int, struct sockaddr *, socklen_t *))dlsym(RTLD_NEXT, "accept");
    int got = real(fd, addr, len);
    nodelay(got);
    return got;
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    static int (*real)(int, struct sockaddr *, socklen_t *, int);
    if (!real) real = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
    int got = real(fd, addr, len, flags);
    nodelay(got);
    return got;
}
