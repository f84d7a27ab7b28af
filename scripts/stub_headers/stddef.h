/* Minimal <stddef.h> for parsing the cuDNN/cuTENSOR headers with -nostdinc.
 * The type definitions come from the compiler's own predefined macros. */
#ifndef PYCUDNN_STUB_STDDEF_H
#define PYCUDNN_STUB_STDDEF_H
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
#define NULL ((void *)0)
#endif
