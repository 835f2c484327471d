/* rt_version: the project's version, one place for the library, the command and the block
 * that `roundtrim patch` writes. */
#ifndef RT_VERSION_H
#define RT_VERSION_H

#define RT_VERSION "0.1.0"

#endif
