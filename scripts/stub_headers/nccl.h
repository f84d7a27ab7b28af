/* Stand-in for NCCL's <nccl.h>, which cutensorMp.h includes but the cuTENSOR wheel does not ship.
 * cutensorMp.h uses only the communicator handle, always by value as an opaque pointer (NCCL's
 * own header declares it the same way: `typedef struct ncclComm* ncclComm_t;`). */
#ifndef PYCUTENSOR_STUB_NCCL_H
#define PYCUTENSOR_STUB_NCCL_H
typedef struct ncclComm *ncclComm_t;
#endif
