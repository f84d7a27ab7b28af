/* Stand-in for the CUDA Toolkit's <cuda_runtime.h> (included by cutensor.h); see
 * cuda_runtime_api.h in this directory. */
#ifndef PYCUDNN_STUB_CUDA_RUNTIME_H
#define PYCUDNN_STUB_CUDA_RUNTIME_H
#include <cuda_runtime_api.h>
#endif
