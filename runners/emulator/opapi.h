/*
 * What the two operators of libopapi_transformer.so share: the executor a first phase records and
 * the checks both phases make. opapi.c holds these and the grad (aclnnInplacePartialRotaryMulGrad),
 * forward.c the forward (aclnnInplacePartialRotaryMul).
 */
#ifndef PRMG_EMU_OPAPI_H
#define PRMG_EMU_OPAPI_H

#include <stdint.h>

#include "emu.h"
#include "faults.h"
#include "kernel.h"

typedef enum { OP_GRAD, OP_FORWARD } op_kind;

/* A tensor as the first phase recorded it: the kernel's view (dims, dtype; host holds the device address of
 * the view, the offset applied, until the launch maps it), its element strides and offset, whether it is
 * contiguous, and
 * (forward) the byte offset in the workspace of its contiguous copy, 0 when it needs none. */
typedef struct {
    kernel_tensor tensor;
    int64_t strides[4];
    int64_t offset;
    int contiguous;
    uint64_t staging;
} op_operand;

/* An executor: which operator made it, whether its first phase refused the call (it is then kept busy,
 * as nnopbase keeps a pooled executor, until aclDestroyAclOpExecutor; a launch refuses it), whether
 * the in-place tensor has no elements (nnopbase then skips the tiling and the kernel), its three
 * tensors (dy or xRef, cos, sin), the pairing of its rotary mode, its slice [start, end), the
 * workspace size its first phase asked for, and the status its launch returns instead of running (0: none; the
 * fwd_membase_late fault's refusal of the A2/A3 tiling, deferred to the launch). */
struct aclOpExecutor {
    op_kind kind;
    int refused;
    int empty_output;
    op_operand operand[3];
    int pairing_mode;
    int64_t start;
    int64_t end;
    uint64_t workspace_size;
    int32_t deferred_status;
};

/* 1 for the dtypes both operators know: float32 0, float16 1, bfloat16 27. */
int is_operator_dtype(int32_t data_type);

/* 1 for the formats nnopbase treats as ND: NCHW 0, NHWC 1, ND 2. */
int is_operator_format(int32_t format);

/* 1 when stride[i] = prod(view_dims[i+1:]) for every axis of length > 1, whatever the storage offset; an
 * empty tensor (a dim of 0) is contiguous with any strides (CANN's op::IsContiguous). */
int is_contiguous(const aclTensor *tensor);

/* ACL_SUCCESS when $ASCEND_OPP_PATH names an existing directory (nnopbase reads it at every call),
 * else 561107 with a message naming the variable. */
int check_opp_path(const char *op);

/* The rotary mode as upstream's tiling reads the int64 attribute: its low 32 bits, *mode32. Returns
 * 561000 when PRMG_EMU_MODES is malformed, 561002 (with a message) when *mode32 is outside 0..3,
 * else ACL_SUCCESS with *implemented = 1 when PRMG_EMU_MODES lists it. */
int read_rotary_mode(const char *op, int64_t mode, int32_t *mode32, int *implemented);

/* An operator as its first phase's shared steps know it: its name in messages, its kind, its tensors' names (dy or
 * xRef, cos, sin) and its op definition's (in-place dtype, cos dtype) pairs: pair_ok (NULL: every pair of
 * is_operator_dtype dtypes) and the rule in words, for a refusal. */
typedef struct {
    const char *op;
    op_kind kind;
    const char *const *names;
    int (*pair_ok)(int32_t in_place_type, int32_t cos_type);
    const char *pair_rule;
} op_definition;

/* The first phase's steps before the tiling, one home for both GetWorkspaceSize calls, in the real stack's order:
 * the generated layer's checks (no NULL tensor -> 161001; check_opp_path; no NULL executor pointer -> 161001; an
 * executor of the op's kind taken, *job, also stored in *executorOut, refused until fill_executor, so that every
 * refusal from here on leaves it set, busy until aclDestroyAclOpExecutor; the workspace size pointer -> 161001; a
 * partialSlice that is no live aclIntArray -> 161002, one of no value -> 561103, nnopbase refusing the NULL data of
 * an empty aclIntArray, NULL fine: the op definition's default {0, 0}); nnopbase's kernel lookup for the chip
 * (PRMG_EMU_SOC: 561003 when the op definition lists no config for it: the grad ascend950 and ascend960dt, the
 * forward those, ascend350 and the A2/A3 chips); its match against the op definition (161002: live descriptors,
 * dtypes, sin dtype == cos dtype, the op's dtype pairs, ND-class formats; not strides); then an empty in-place
 * tensor (a dim of 0, nnopbase's aclTensor::IsEmpty) skips the tiling and the kernel: the phase succeeds with a
 * 0-byte workspace and *job NULL (nothing left to do); otherwise the op's faults in force (faults.h) go to *faults
 * (561000 when PRMG_EMU_FAULT is malformed) and *job waits for the tiling. Starts the record of the faults that act. */
int begin_first_phase(const op_definition *op, const aclTensor *const tensors[3], const aclIntArray *partialSlice,
                      uint64_t *workspaceSize, aclOpExecutor **executorOut, aclOpExecutor **job, fault_set *faults);

/* The 950 tiling's slice read: NULL is the op definition's default {0, 0}; otherwise values[0] and values[1]
 * with no size check (a longer array's first two are used; a shorter one is read on past its end, into the ref
 * output's AnchorInstanceInfo nnopbase lays there, PAST_THE_LIST: one value v as [v, 2^32)). With the
 * slice_list_read fault a list of another length than 2 is read by its length: NULL or none as [0, d), one value
 * v as [v, d), more than two by their last two values. */
void read_slice(const aclIntArray *partialSlice, int64_t d, fault_set faults, int64_t *start, int64_t *end);

/* The tiling's CheckShape common to both operators: x (dy or xRef), cos, sin 4-D (named by `names`
 * in the message) and cos shape == sin shape; ACLNN_ERR_INNER_TILING_ERROR (561002) otherwise. */
int check_4d_cos_like_sin(const char *op, const char *const names[3], const aclTensor *const tensors[3]);

/* The tiling's CheckShapeAllPositive and JudgeLayoutByShape common to both operators (561002): every dim of x (dy or
 * xRef), cos and sin (named by `names`) > 0; each cos/sin B, S, N either 1 or x's (all eight such layouts have a
 * template). */
int check_positive_and_layout(const char *op, const char *const names[3], const aclTensor *const tensors[3]);

/* Completes the executor of a first phase that succeeds: tensors[0..3) (operand views, strides and
 * contiguity copied), the pairing mode, the slice, the workspace size; no longer refused. */
void fill_executor(aclOpExecutor *job, const aclTensor *const tensors[3], int pairing_mode, int64_t start,
                   int64_t end, uint64_t workspace_size);

/* The second phase's steps before the kernel, one home for both launches: the executor taken (*job set to NULL and
 * 161002 when it is unknown, destroyed or already used: an executor serves one launch), then nnopbase's checks and the
 * emulator's own: 161002 unless it was made by `kind`'s first phase and that phase succeeded; workspace NULL with
 * workspaceSize > 0 -> 161001; workspaceSize below the size asked for -> 161002; workspace not that much device memory
 * or stream not live -> 161002; the device must be usable (507899 after a kernel fault); then, for a non-empty
 * in-place output, the op's faults in force go to *faults (561000 when PRMG_EMU_FAULT is malformed).
 * *workspace_host is the host view of the workspace (NULL for a 0-byte one). The caller frees *job (a taken executor
 * is consumed, whatever the status). */
int begin_launch(const char *op, op_kind kind, aclOpExecutor **job, void *workspace, uint64_t workspaceSize,
                 void *stream, void **workspace_host, fault_set *faults);

/* Replaces tensor->host (a device address) with its host view covering `elements` elements: 1; or 0
 * when that range is not inside one device allocation, after raising an asynchronous AI Core
 * exception (prmg_emu_raise_fault, 507015) naming the tensor: the kernel must then stop. */
int map_tensor(const char *op, kernel_tensor *tensor, const char *name, int64_t elements);

/* The ignore_offset faults: each operand from `first` on (0 dy or x, 1 cos, 2 sin) moved back by its storage offset, to
 * its storage's start (table_offset_ignored: cos and sin alone). */
void ignore_offsets(aclOpExecutor *job, int first);

/* The offset_block_aligned fault: each operand's data address rounded down to the 32-byte block its storage offset
 * falls in, as a kernel taking GM addresses to be 32-byte aligned would: a view whose offset in bytes is off a
 * block is read and written from up to 31 bytes before its first element (never before its storage's start). */
void align_offsets(aclOpExecutor *job);

/* The offset_cos_size fault: each operand's storage offset applied in elements of cos's dtype, as a layer working out
 * the three addresses with one element size (the tables') would: right where the dtypes agree, a bfloat16 or float16
 * dy (x) at an offset over float32 tables read and written twice as far into its storage. */
void offsets_in_cos_size(aclOpExecutor *job);

/* Replaces every bit of element `index` of tensor by its complement (the write_past_end faults). */
void invert_element(kernel_tensor *tensor, int64_t index);

#endif
