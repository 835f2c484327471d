/* rt_send: send, sendto, sendmsg and sendmmsg, passed through to libc's, each counting the bytes
 * the kernel took in its thread's tally: a client's update leaving, which ends its round. */
#ifndef RT_SEND_H
#define RT_SEND_H

/* Looks up libc's send family off the program's path (the worker, once), so that no call of
 * the program's waits on the loader's lock: a send in a signal handler is async-signal-safe
 * (signal-safety(7)) and must stay so. A call before then looks its function up itself. */
void rt_send_resolve(void);

#endif
