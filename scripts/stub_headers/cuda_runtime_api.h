/* Stand-in for the CUDA Toolkit's <cuda_runtime_api.h>, which the cuDNN wheels include but do not
 * ship. The headers use only size_t, the opaque handle types below (always through pointers, so the
 * structs stay incomplete exactly as in CUDA's driver_types.h) and, via <library_types.h>,
 * libraryPropertyType and cudaDataType_t. */
#ifndef PYCUDNN_STUB_CUDA_RUNTIME_API_H
#define PYCUDNN_STUB_CUDA_RUNTIME_API_H
#include <stddef.h>
#include <library_types.h>
typedef struct CUstream_st *cudaStream_t;
typedef struct CUgraph_st *cudaGraph_t;
#endif
