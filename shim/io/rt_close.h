/* rt_close: close(2) of a number that the other descriptor table (the worker's or the program's)
 * may hold too, for another file: the one call at the bottom of io/ that rt_out, rt_io and rt_fd
 * share. */
#ifndef RT_CLOSE_H
#define RT_CLOSE_H

void rt_close_in_this_table(int fd);

#endif
