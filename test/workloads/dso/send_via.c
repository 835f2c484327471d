/* send_via: a second preload, after the library, that interposes send and passes it on through
 * sendto, as musl's libc and some wrappers implement it: called the ordinary way, through the
 * PLT, which binds to the first sendto in the global scope, the library's. */
#include <stddef.h>
#include <sys/socket.h>

__attribute__((visibility("default"))) ssize_t
send(int fd, const void *buf, size_t len, int flags)
{
	return sendto(fd, buf, len, flags, NULL, 0);
}
