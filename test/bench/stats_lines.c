/* stats_lines: the library's stats lines read with policy's reader (rt_report_read_json), in
 * columns a bench script reads without a parse of its own: one line per record,
 *   ROUND TRIGGER ACTION UNIX_US
 * (UNIX_US: the record's unix_time in microseconds). Blank lines are skipped; a line that is not
 * a stats line fails the program, naming the file and the line.
 *
 * usage: stats_lines STATS... */
#include "rt_report.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
stats_lines_file(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "stats_lines: cannot read %s\n", path);
		return 1;
	}
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	int status = 0;
	struct rt_round_read read;
	while (status == 0 && getline(&line, &cap, f) >= 0) {
		lineno++;
		if (strspn(line, " \t\r\n") == strlen(line))
			continue;
		if (rt_report_read_json(line, &read) != RT_READ_OK) {
			fprintf(stderr, "stats_lines: %s:%zu: not a stats line: %s", path, lineno,
			        line);
			status = 1;
			continue;
		}
		printf("%" PRIu64 " %s %s %" PRId64 "\n", read.rec.round, read.trigger, read.action,
		       read.rec.unix_time_us);
	}
	free(line);
	fclose(f);
	return status;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: stats_lines STATS...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++)
		if (stats_lines_file(argv[i]))
			return 1;
	return fflush(stdout) == 0 ? 0 : 1;
}
