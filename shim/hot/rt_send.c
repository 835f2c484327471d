#include "rt_send.h"
#include "rt_real.h"
#include "rt_tally.h"

#include <errno.h>
#include <sys/socket.h>

enum rt_send_call { RT_SEND, RT_SENDTO, RT_SENDMSG, RT_SENDMMSG, RT_SEND_CALLS };

static const char *const rt_send_names[RT_SEND_CALLS] = {"send", "sendto", "sendmsg", "sendmmsg"};
static void *_Atomic rt_send_real[RT_SEND_CALLS];

/* libc's function, looked up first if need be; NULL only where libc lacks the name. */
static void *
rt_send_find(enum rt_send_call call)
{
	return rt_real_lookup_next_once(&rt_send_real[call], rt_send_names[call]);
}

void
rt_send_resolve(void)
{
	for (int call = 0; call < RT_SEND_CALLS; call++)
		rt_send_find((enum rt_send_call)call);
}

/* No lock: send is async-signal-safe (signal-safety(7)) and a handler's call must stay so. */
static void
rt_send_count(uint64_t bytes)
{
	if (bytes)
		rt_tally_count_sent(bytes);
}

static ssize_t
rt_send_missing(void)
{
	errno = ENOSYS;
	return -1;
}

RT_EXPORT ssize_t
send(int fd, const void *buf, size_t len, int flags)
{
	ssize_t (*real)(int, const void *, size_t, int);
	*(void **)&real = rt_send_find(RT_SEND);
	ssize_t n = real ? real(fd, buf, len, flags) : rt_send_missing();
	if (n > 0)
		rt_send_count((uint64_t)n);
	return n;
}

RT_EXPORT ssize_t
sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t to_len)
{
	ssize_t (*real)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	*(void **)&real = rt_send_find(RT_SENDTO);
	ssize_t n = real ? real(fd, buf, len, flags, to, to_len) : rt_send_missing();
	if (n > 0)
		rt_send_count((uint64_t)n);
	return n;
}

RT_EXPORT ssize_t
sendmsg(int fd, const struct msghdr *msg, int flags)
{
	ssize_t (*real)(int, const struct msghdr *, int);
	*(void **)&real = rt_send_find(RT_SENDMSG);
	ssize_t n = real ? real(fd, msg, flags) : rt_send_missing();
	if (n > 0)
		rt_send_count((uint64_t)n);
	return n;
}

RT_EXPORT int
sendmmsg(int fd, struct mmsghdr *msgs, unsigned int count, int flags)
{
	int (*real)(int, struct mmsghdr *, unsigned int, int);
	*(void **)&real = rt_send_find(RT_SENDMMSG);
	int sent = real ? real(fd, msgs, count, flags) : (int)rt_send_missing();
	uint64_t bytes = 0;
	for (int i = 0; i < sent; i++)
		bytes += msgs[i].msg_len;
	rt_send_count(bytes);
	return sent;
}
