/* rt_cmd_table: rows of text printed in aligned columns, as `roundtrim status` shows them.
 * Owns the cells until printed and the columns' widths. */
#ifndef RT_CMD_TABLE_H
#define RT_CMD_TABLE_H

#include <stddef.h>
#include <stdio.h>

struct rt_cmd_table {
	size_t ncols, nrows;
	char **cells; /* nrows * ncols copies */
};

void rt_cmd_table_init(struct rt_cmd_table *t, size_t ncols);
/* Adds a row of ncols cells (copied). */
void rt_cmd_table_add(struct rt_cmd_table *t, const char *const cells[]);
/* Each column as wide as its widest cell, two blanks between; the last column unpadded. */
void rt_cmd_table_print(const struct rt_cmd_table *t, FILE *out);
void rt_cmd_table_free(struct rt_cmd_table *t);

#endif
