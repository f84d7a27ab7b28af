/* Minimal <stdio.h> for parsing the cuTENSOR headers with -nostdinc: only FILE is used
 * (cutensorLoggerSetFile), and only through a pointer, so an incomplete type suffices. */
#ifndef PYCUDNN_STUB_STDIO_H
#define PYCUDNN_STUB_STDIO_H
#include <stddef.h>
typedef struct _IO_FILE FILE;
#endif
