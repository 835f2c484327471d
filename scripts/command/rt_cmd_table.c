#include "rt_cmd_table.h"

#include "rt_cmd.h"

#include <stdlib.h>
#include <string.h>

void
rt_cmd_table_init(struct rt_cmd_table *t, size_t ncols)
{
	t->ncols = ncols;
	t->nrows = 0;
	t->cells = NULL;
}

void
rt_cmd_table_add(struct rt_cmd_table *t, const char *const cells[])
{
	t->cells = rt_cmd_realloc(t->cells, (t->nrows + 1) * t->ncols * sizeof(*t->cells));
	for (size_t c = 0; c < t->ncols; c++) {
		size_t len = strlen(cells[c]) + 1;
		char *copy = rt_cmd_alloc(len);
		memcpy(copy, cells[c], len);
		t->cells[t->nrows * t->ncols + c] = copy;
	}
	t->nrows++;
}

void
rt_cmd_table_print(const struct rt_cmd_table *t, FILE *out)
{
	size_t *width = rt_cmd_alloc(t->ncols * sizeof(*width));
	for (size_t c = 0; c < t->ncols; c++) {
		width[c] = 0;
		for (size_t r = 0; r < t->nrows; r++) {
			size_t len = strlen(t->cells[r * t->ncols + c]);
			width[c] = len > width[c] ? len : width[c];
		}
	}
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *cell = t->cells[r * t->ncols + c];
			if (c + 1 < t->ncols)
				fprintf(out, "%-*s  ", (int)width[c], cell);
			else
				fprintf(out, "%s\n", cell);
		}
	}
	free(width);
}

void
rt_cmd_table_free(struct rt_cmd_table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = 0;
}
