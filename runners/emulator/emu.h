/*
 * Internal contract shared by the emulator libraries (libascendcl, libnnopbase, libopapi_transformer and the
 * graph-mode twin libprmg_geir). Only the names in acl-abi.md are the public ABI; the prmg_emu_* functions
 * are exported by libascendcl for its siblings, so that the device memory table and the recent error message
 * exist once per process. A sibling (built with EMU_SIBLING) reaches them through hidden definitions of its own
 * (contract.c) that forward to the libascendcl.so of its own folder, never to the first definition of the name
 * in the process: another copy of the emulator loaded with RTLD_GLOBAL before this one (in the process or the
 * parent it was forked from) took every such call, and the operator ran against that copy's uninitialised
 * devices (107002). Every library is linked -Bsymbolic-functions: its calls to its own functions stay its own.
 */
#ifndef PRMG_EMU_H
#define PRMG_EMU_H

#include <stddef.h>
#include <stdint.h>

#define EMU_API __attribute__((visibility("default")))
/* The contract's functions: exported by libascendcl, hidden forwarders in a sibling (contract.c). */
#ifdef EMU_SIBLING
#define EMU_CONTRACT __attribute__((visibility("hidden")))
#else
#define EMU_CONTRACT EMU_API
#endif

/* Status codes (acl-abi.md). */
enum {
    ACL_SUCCESS = 0,
    ACL_ERROR_INVALID_PARAM = 100000,
    ACL_ERROR_UNINITIALIZE = 100001,
    ACL_ERROR_REPEAT_INITIALIZE = 100002,
    ACL_ERROR_REPEAT_FINALIZE = 100037,
    ACL_ERROR_RT_INVALID_DEVICEID = 107001,
    ACL_ERROR_RT_CONTEXT_NULL = 107002,
    ACL_ERROR_BAD_ALLOC = 200000,
    ACL_ERROR_RT_MEMORY_ALLOCATION = 207001,
    ACL_ERROR_RT_AICORE_EXCEPTION = 507015,
    ACL_ERROR_RT_DRV_INTERNAL_ERROR = 507899,
    ACLNN_ERR_PARAM_NULLPTR = 161001,
    ACLNN_ERR_PARAM_INVALID = 161002,
    ACLNN_ERR_INNER = 561000,
    ACLNN_ERR_INNER_TILING_ERROR = 561002,
    ACLNN_ERR_INNER_FIND_KERNEL_ERROR = 561003,
    ACLNN_ERR_INNER_NULLPTR = 561103,
    ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND = 561107,
};

/* aclDataType codes the operator accepts. */
enum { ACL_FLOAT = 0, ACL_FLOAT16 = 1, ACL_BF16 = 27 };

/* aclFormat codes the operator accepts. */
enum { ACL_FORMAT_NCHW = 0, ACL_FORMAT_NHWC = 1, ACL_FORMAT_ND = 2 };

#define EMU_MAX_DIMS 32

/* The longest error message kept (aclGetRecentErrMsg, a kernel fault's), its NUL included. */
#define EMU_MESSAGE_SIZE 1024

/* The chip aclrtGetSocName reports, and the operators follow, when PRMG_EMU_SOC is unset. */
#define DEFAULT_SOC_NAME "Ascend950PR_9589"

/* An aclTensor: every field passed to aclCreateTensor, arrays copied. */
typedef struct aclTensor {
    uint32_t magic;
    int32_t data_type;
    int32_t format;
    uint64_t view_dim_count;
    int64_t view_dims[EMU_MAX_DIMS];
    int64_t strides[EMU_MAX_DIMS];
    int64_t offset;
    uint64_t storage_dim_count;
    int64_t storage_dims[EMU_MAX_DIMS];
    void *data;
} aclTensor;

/* An aclIntArray: the values, copied. */
typedef struct aclIntArray {
    uint32_t magic;
    uint64_t size;
    int64_t *values;
} aclIntArray;

/* An aclOpExecutor (defined by libopapi_transformer's opapi.h; nnopbase only frees it). */
typedef struct aclOpExecutor aclOpExecutor;

#define EMU_TENSOR_MAGIC 0x54656e73u
#define EMU_INT_ARRAY_MAGIC 0x496e7441u

/* What an operator's tiling reads past the end of a partial_slice of fewer than two values, value by value: the
 * attribute is the last of the tiling context's attributes, and both nnopbase (opbase indv_compute_node_info.cpp,
 * NnopbaseComputeNodeInfoUpdt) and GE (hicann/ge 56f8e1bb9 bg_kernel_context_extend.cc, metadef compute_node_info.h)
 * lay the ref output's AnchorInstanceInfo {uint32 instance_start 0, uint32 instantiation_num 1, zeroed reserved bytes}
 * right after it: read as int64, 1 << 32, then 0 (prmg's grad.PAST_THE_LIST). */
static const int64_t PAST_THE_LIST[2] = {INT64_C(1) << 32, 0};

/* The calling thread's device, else the process's last set one; -1 when none (no message is recorded). */
EMU_CONTRACT int prmg_emu_current_device(void);

/* Counts `bytes` of device memory as taken for good (the leak_device_memory fault): aclrtGetMemInfo reports them
 * used, and aclrtMalloc refuses what no longer fits (PRMG_EMU_DEVICE_MEMORY). */
EMU_CONTRACT void prmg_emu_leak_device_memory(size_t bytes);

/* Records `printf`-style text as the calling thread's recent error message (aclGetRecentErrMsg). */
EMU_CONTRACT void prmg_emu_set_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* 1 after aclInit and before aclFinalize. */
EMU_CONTRACT int prmg_emu_initialized(void);

/* Host view of device bytes [address, address + length): 0 and *host set when the range lies inside
 * one live allocation; -1 when address is in no allocation; -2 when the range runs past its end. */
EMU_CONTRACT int prmg_emu_device_range(const void *address, size_t length, void **host);

/* prmg_emu_device_range for bytes the caller only reads (aclrtMemset's record of them stays valid). */
EMU_CONTRACT int prmg_emu_device_range_read(const void *address, size_t length, const void **host);

/* 1 when stream is NULL (the default stream) or a live stream from aclrtCreateStream. */
EMU_CONTRACT int prmg_emu_stream_valid(const void *stream);

/* The process's one table of live aclOpExecutors (made by either operator's GetWorkspaceSize, ended by
 * a launch or aclDestroyAclOpExecutor): add returns 0, or -1 when out of memory; take removes and
 * returns 1 when the executor was live, 0 otherwise. */
EMU_CONTRACT int prmg_emu_executor_add(const void *executor);
EMU_CONTRACT int prmg_emu_executor_take(const void *executor);

/* Test hook: the number of executors created and neither launched nor destroyed. */
EMU_CONTRACT int prmg_emu_live_executors(void);

/* A kernel fault, as a real device reports it: asynchronously. The launch that faulted still returns
 * ACL_SUCCESS; from now on the process's devices are poisoned: every aclrtSynchronizeStream and
 * aclrtSynchronizeEvent returns `status` with the `printf`-style message, and every other call that
 * needs the device (allocation, copies, streams, events, launches) returns 507899
 * ACL_ERROR_RT_DRV_INTERNAL_ERROR; only a new process recovers. The first fault is the one reported. */
EMU_CONTRACT void prmg_emu_raise_fault(int status, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* ACL_SUCCESS when no kernel fault has poisoned the process, else 507899 with a message naming
 * `function` and the fault (prmg_emu_raise_fault). */
EMU_CONTRACT int prmg_emu_device_usable(const char *function);

#endif
