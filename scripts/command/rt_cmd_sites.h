/* rt_cmd_sites: `roundtrim report --sites`, the growth table of the sites files.
 * Owns reading them, naming frames with addr2line, the table, call paths and plot. */
#ifndef RT_CMD_SITES_H
#define RT_CMD_SITES_H

#include <stddef.h>

/* Reads the sites files of files (stats files or sites files) and prints the report; with out,
 * also the plot. Returns the exit status or does not return. */
int rt_cmd_sites_report(char **files, size_t nfiles, const char *out);

#endif
