/*
 * libopapi_transformer.so of the host emulator: what both operators share (opapi.h), and the two
 * phases of aclnnInplacePartialRotaryMulGrad.
 *
 * The grad's phase one is upstream's generated aclnn layer, nnopbase and the 950 tiling
 * (op_host/inplace_partial_rotary_mul_grad_tiling_base_arch35.cpp), in their order: null tensors
 * (161001), $ASCEND_OPP_PATH (561107), the executor pointer (161001), then with an executor taken (a
 * refusal from here on leaves it in *executor, busy until aclDestroyAclOpExecutor) the workspace size
 * pointer (161001), dtype / format (161002); then an empty dy skips everything else (nnopbase: no
 * tiling, 0-byte workspace, no kernel); then the tiling, each failure 561002 with a message
 * (check_tiling). It does not look at strides: on success it asks for a 16 MiB workspace and records
 * each tensor and whether it is contiguous in the executor. Phase two consumes the executor (one
 * launch each); a non-contiguous tensor is refused there with 561000, as nnopbase refuses it for an
 * operator that declares neither AutoContiguous nor IgnoreContiguous; otherwise the kernel runs to
 * completion, and a kernel fault is reported at the next synchronization, not by the launch.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu.h"
#include "faults.h"
#include "kernel.h"
#include "opapi.h"

#define OP "InplacePartialRotaryMulGrad"
#define MAX_D 1024
#define INVALID_DIM INT64_MIN            /* gert::Shape::GetDim of a missing axis (kInvalidDimValue) */

static const char *const TENSOR_NAMES[3] = {"dy", "cos", "sin"};

/* ---- shared by both operators (opapi.h) ---- */

int is_operator_dtype(int32_t data_type)
{
    return data_type == ACL_FLOAT || data_type == ACL_FLOAT16 || data_type == ACL_BF16;
}

int is_operator_format(int32_t format)
{
    return format == ACL_FORMAT_NCHW || format == ACL_FORMAT_NHWC || format == ACL_FORMAT_ND;
}

/* 1 when the tensor has a dim of 0 (nnopbase's aclTensor::IsEmpty): an empty in-place output makes nnopbase skip
 * the tiling (no checks) and the kernel, with a 0-byte workspace. */
static int output_is_empty(const aclTensor *tensor)
{
    for (uint64_t i = 0; i < tensor->view_dim_count; i++)
        if (tensor->view_dims[i] == 0)
            return 1;
    return 0;
}

/* As CANN's op::IsContiguous, which skips length-1 axes (their stride never moves to another element)
 * and accepts empty views; it reads view shape and strides only: a view at a storage offset is contiguous. */
int is_contiguous(const aclTensor *tensor)
{
    if (output_is_empty(tensor))
        return 1;
    int64_t expected = 1;
    for (uint64_t i = tensor->view_dim_count; i-- > 0;) {
        if (tensor->view_dims[i] == 1)
            continue;
        if (tensor->strides[i] != expected)
            return 0;
        expected *= tensor->view_dims[i];
    }
    return 1;
}

int check_opp_path(const char *op)
{
    const char *path = getenv("ASCEND_OPP_PATH");
    struct stat info;
    if (path != NULL && *path != '\0' && stat(path, &info) == 0 && S_ISDIR(info.st_mode))
        return ACL_SUCCESS;
    char what[600];
    if (path == NULL || *path == '\0')
        snprintf(what, sizeof what, "is %s", path == NULL ? "not set" : "empty");
    else
        snprintf(what, sizeof what, "'%.500s' is not an existing directory", path);
    prmg_emu_set_error("%s: ASCEND_OPP_PATH %s (nnopbase finds the operator's kernels under it; source the "
                       "toolkit's set_env.sh)", op, what);
    return ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND;
}

int read_rotary_mode(const char *op, int64_t mode, int32_t *mode32, int *implemented)
{
    unsigned modes;
    if (supported_modes(&modes) != 0)
        return ACLNN_ERR_INNER;
    *mode32 = (int32_t)(uint32_t)(uint64_t)mode;
    if (*mode32 < 0 || *mode32 > 3) {
        prmg_emu_set_error("%s: rotary_mode %lld (read as int32: %d) is not one of 0 half, 1 interleave, "
                           "2 quarter, 3 interleave-half", op, (long long)mode, *mode32);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    *implemented = (modes >> *mode32) & 1u;
    return ACL_SUCCESS;
}

/* The operand record of tensor: its 4-D view (missing axes 1), strides, offset and contiguity. The kernel's
 * address is the data address plus the offset in bytes, applied once (opbase's aclTensor::GetData()). */
static op_operand describe(const aclTensor *tensor)
{
    unsigned char *view = (unsigned char *)tensor->data + tensor->offset * (int64_t)element_size(tensor->data_type);
    op_operand described = {{{1, 1, 1, 1}, tensor->data_type, view}, {0, 0, 0, 0}, tensor->offset,
                            is_contiguous(tensor), 0};
    for (uint64_t axis = 0; axis < 4 && axis < tensor->view_dim_count; axis++) {
        described.tensor.dims[axis] = tensor->view_dims[axis];
        described.strides[axis] = tensor->strides[axis];
    }
    return described;
}

/* The generated layer's first steps (begin_first_phase): null tensors, $ASCEND_OPP_PATH, the executor pointer, an
 * executor taken, the workspace size pointer. */
static int begin_call(const char *op, op_kind kind, const char *const names[3], const aclTensor *const tensors[3],
                      const uint64_t *workspaceSize, aclOpExecutor **executorOut, aclOpExecutor **job)
{
    *job = NULL;
    begin_fault_record();
    for (int t = 0; t < 3; t++) {
        if (tensors[t] == NULL) {
            prmg_emu_set_error("%s: %s is a null pointer", op, names[t]);
            return ACLNN_ERR_PARAM_NULLPTR;
        }
    }
    int status = check_opp_path(op);
    if (status != ACL_SUCCESS)
        return status;
    if (executorOut == NULL) {
        prmg_emu_set_error("%s: executor is a null pointer", op);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    aclOpExecutor *taken = calloc(1, sizeof *taken);
    if (taken == NULL || prmg_emu_executor_add(taken) != 0) {
        free(taken);
        prmg_emu_set_error("%s: out of host memory", op);
        return ACLNN_ERR_INNER;
    }
    taken->kind = kind;
    taken->refused = 1;
    *executorOut = *job = taken;
    if (workspaceSize == NULL) {
        prmg_emu_set_error("%s: workspaceSize is a null pointer", op);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    return ACL_SUCCESS;
}

/* The generated layer's attribute step (begin_first_phase): partialSlice live, and of some value when not NULL
 * (the slice_list_read fault lets a list of none through, to be read as read_slice reads it). */
static int check_slice_array(const char *op, const aclIntArray *partialSlice, fault_set faults)
{
    if (partialSlice != NULL && partialSlice->magic != EMU_INT_ARRAY_MAGIC) {
        prmg_emu_set_error("%s: partialSlice is not a live aclIntArray", op);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (partialSlice != NULL && partialSlice->size == 0 && has_fault(faults, FAULT_SLICE_LIST_READ))
        record_faults(FAULT_BIT(FAULT_SLICE_LIST_READ));
    else if (partialSlice != NULL && partialSlice->size == 0) {
        prmg_emu_set_error("%s: partialSlice holds no value: nnopbase refuses the NULL data of an empty aclIntArray "
                           "when the generated layer adds the attribute", op);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    return ACL_SUCCESS;
}

/* nnopbase's kernel lookup for the chip (begin_first_phase). */
static int check_chip(const char *op, op_kind kind)
{
    const char *name;
    soc_kind chip = emulated_soc(&name);
    int listed = kind == OP_GRAD ? chip == SOC_950 || chip == SOC_960 : chip != SOC_OTHER;
    if (listed)
        return ACL_SUCCESS;
    prmg_emu_set_error("%s: no kernel for SoC %s: the op definition lists %s", op, name,
                       kind == OP_GRAD ? "ascend950, ascend960dt" :
                                         "ascend910b, ascend910_93, ascend950, ascend960dt, ascend350");
    return ACLNN_ERR_INNER_FIND_KERNEL_ERROR;
}

void fill_executor(aclOpExecutor *job, const aclTensor *const tensors[3], int pairing_mode, int64_t start,
                   int64_t end, uint64_t workspace_size)
{
    for (int t = 0; t < 3; t++)
        job->operand[t] = describe(tensors[t]);
    job->refused = 0;
    job->pairing_mode = pairing_mode;
    job->start = start;
    job->end = end;
    job->workspace_size = workspace_size;
}

/* The faults operator `kind` obeys (faults.h). */
static fault_set faults_of(op_kind kind)
{
    return kind == OP_GRAD ? GRAD_FAULTS : FORWARD_FAULTS;
}

/* The first phase's success for an empty in-place output (output_is_empty): job launches nothing and needs no
 * workspace (*workspaceSize = 0). */
static void accept_empty_output(aclOpExecutor *job, const aclTensor *const tensors[3], uint64_t *workspaceSize)
{
    job->empty_output = 1;
    fill_executor(job, tensors, 1, 0, 0, 0);
    *workspaceSize = 0;
}

/* nnopbase's match against the op definition (begin_first_phase), 161002: live descriptors, dtypes, sin dtype ==
 * cos dtype, the op's dtype pairs, formats (not strides). */
static int check_operands(const op_definition *op, const aclTensor *const tensors[3])
{
    for (int t = 0; t < 3; t++) {
        if (tensors[t]->magic != EMU_TENSOR_MAGIC) {
            prmg_emu_set_error("%s: %s is not a live aclTensor", op->op, op->names[t]);
            return ACLNN_ERR_PARAM_INVALID;
        }
        if (!is_operator_dtype(tensors[t]->data_type)) {
            prmg_emu_set_error("%s: %s dtype %d is not supported (float32 0, float16 1, bfloat16 27)", op->op,
                               op->names[t], tensors[t]->data_type);
            return ACLNN_ERR_PARAM_INVALID;
        }
    }
    const int32_t in_place_type = tensors[0]->data_type, cos_type = tensors[1]->data_type;
    if (tensors[2]->data_type != cos_type) {
        prmg_emu_set_error("%s: sin dtype %d differs from cos dtype %d", op->op, tensors[2]->data_type, cos_type);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (op->pair_ok != NULL && !op->pair_ok(in_place_type, cos_type)) {
        prmg_emu_set_error("%s: %s dtype %d with cos/sin dtype %d is not a combination of the op (%s)", op->op,
                           op->names[0], in_place_type, cos_type, op->pair_rule);
        return ACLNN_ERR_PARAM_INVALID;
    }
    for (int t = 0; t < 3; t++) {
        if (!is_operator_format(tensors[t]->format)) {
            prmg_emu_set_error("%s: %s format %d is not supported (NCHW 0, NHWC 1, ND 2)", op->op, op->names[t],
                               tensors[t]->format);
            return ACLNN_ERR_PARAM_INVALID;
        }
    }
    return ACL_SUCCESS;
}

int begin_first_phase(const op_definition *op, const aclTensor *const tensors[3], const aclIntArray *partialSlice,
                      uint64_t *workspaceSize, aclOpExecutor **executorOut, aclOpExecutor **job, fault_set *faults)
{
    int status = begin_call(op->op, op->kind, op->names, tensors, workspaceSize, executorOut, job);
    fault_set early = 0;                     /* the faults in force, for the slice-array step (errors: below) */
    if (status == ACL_SUCCESS
        && active_faults(tensors[0]->view_dims, tensors[0]->view_dim_count, faults_of(op->kind), &early) != 0)
        early = 0;
    if (status == ACL_SUCCESS)
        status = check_slice_array(op->op, partialSlice, early);
    if (status == ACL_SUCCESS)
        status = check_chip(op->op, op->kind);
    if (status == ACL_SUCCESS)
        status = check_operands(op, tensors);
    if (status != ACL_SUCCESS)
        return status;
    if (output_is_empty(tensors[0])) {
        accept_empty_output(*job, tensors, workspaceSize);
        *job = NULL;
        return ACL_SUCCESS;
    }
    if (active_faults(tensors[0]->view_dims, tensors[0]->view_dim_count, faults_of(op->kind), faults) != 0)
        return ACLNN_ERR_INNER;
    return ACL_SUCCESS;
}

/* begin_launch's checks of a taken executor, before the faults. */
static int check_launch(const char *op, op_kind kind, const aclOpExecutor *job, void *workspace,
                        uint64_t workspaceSize, void *stream, void **workspace_host)
{
    if (job->kind != kind) {
        prmg_emu_set_error("%s: executor %p was made by %s's first phase", op, (const void *)job,
                           job->kind == OP_GRAD ? "aclnnInplacePartialRotaryMulGrad" : "aclnnInplacePartialRotaryMul");
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (job->refused) {
        prmg_emu_set_error("%s: executor %p comes from a first phase that failed (release it with "
                           "aclDestroyAclOpExecutor)", op, (const void *)job);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (workspaceSize > 0 && workspace == NULL) {
        prmg_emu_set_error("%s: workspace is a null pointer with workspaceSize %llu", op,
                           (unsigned long long)workspaceSize);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    if (workspaceSize < job->workspace_size) {
        prmg_emu_set_error("%s: workspaceSize %llu is smaller than the %llu bytes asked for", op,
                           (unsigned long long)workspaceSize, (unsigned long long)job->workspace_size);
        return ACLNN_ERR_PARAM_INVALID;
    }
    *workspace_host = NULL;
    /* the grad kernel only reads its workspace (kernel_job.workspace is const); the forward stages tensors in it */
    if (job->workspace_size > 0
        && (kind == OP_GRAD ? prmg_emu_device_range_read(workspace, job->workspace_size, (const void **)workspace_host)
                            : prmg_emu_device_range(workspace, job->workspace_size, workspace_host)) != 0) {
        prmg_emu_set_error("%s: workspace %p is not %llu bytes of device memory", op, workspace,
                           (unsigned long long)job->workspace_size);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (!prmg_emu_stream_valid(stream)) {
        prmg_emu_set_error("%s: stream %p is not a live stream", op, stream);
        return ACLNN_ERR_PARAM_INVALID;
    }
    return prmg_emu_device_usable(op);
}

int begin_launch(const char *op, op_kind kind, aclOpExecutor **job, void *workspace, uint64_t workspaceSize,
                 void *stream, void **workspace_host, fault_set *faults)
{
    *workspace_host = NULL;
    if (!prmg_emu_executor_take(*job)) {
        prmg_emu_set_error("%s: executor %p is unknown, was destroyed or was already used by a launch (an executor "
                           "serves one launch)", op, (void *)*job);
        *job = NULL;
        return ACLNN_ERR_PARAM_INVALID;
    }
    int status = check_launch(op, kind, *job, workspace, workspaceSize, stream, workspace_host);
    if (status == ACL_SUCCESS && !(*job)->empty_output
        && active_faults((*job)->operand[0].tensor.dims, 4, faults_of(kind), faults) != 0)
        status = ACLNN_ERR_INNER;
    return status;
}

int map_tensor(const char *op, kernel_tensor *tensor, const char *name, int64_t elements)
{
    size_t bytes = (size_t)elements * (size_t)element_size(tensor->data_type);
    void *device = tensor->host;
    if (prmg_emu_device_range(device, bytes, &tensor->host) == 0)
        return 1;
    prmg_emu_raise_fault(ACL_ERROR_RT_AICORE_EXCEPTION, "%s: AI core exception: %s data [%p, +%zu bytes) is not "
                         "inside one device allocation", op, name, device, bytes);
    return 0;
}

/* ---- aclnnInplacePartialRotaryMulGrad ---- */

/* CheckAttr's mode: 561002 unless the low 32 bits are 0..3 and implemented (PRMG_EMU_MODES, or any with
 * the accept_mode fault, which is then recorded as acting); *pairing_mode is the formula used: the mode
 * itself, or interleave for a wrongly accepted one. */
static int check_mode(int64_t mode, fault_set faults, int *pairing_mode, int32_t *mode32)
{
    int implemented = 0;
    int status = read_rotary_mode(OP, mode, mode32, &implemented);
    if (status != ACL_SUCCESS)
        return status;
    if (!implemented && !has_fault(faults, FAULT_ACCEPT_MODE)) {
        prmg_emu_set_error(OP ": rotary_mode %lld (read as int32: %d) is not supported by this kernel",
                           (long long)mode, *mode32);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    if (!implemented)
        record_faults(FAULT_BIT(FAULT_ACCEPT_MODE));
    *pairing_mode = implemented ? *mode32 : 1;
    return ACL_SUCCESS;
}

void read_slice(const aclIntArray *partialSlice, int64_t d, fault_set faults, int64_t *start, int64_t *end)
{
    if (has_fault(faults, FAULT_SLICE_LIST_READ) && (partialSlice == NULL || partialSlice->size != 2)) {
        const uint64_t size = partialSlice == NULL ? 0 : partialSlice->size;
        *start = size == 0 ? 0 : partialSlice->values[size == 1 ? 0 : size - 2];
        *end = size < 2 ? d : partialSlice->values[size - 1];
        record_faults(FAULT_BIT(FAULT_SLICE_LIST_READ));
    } else if (partialSlice == NULL) {
        *start = *end = 0;
    } else if (partialSlice->size == 1 && has_fault(faults, FAULT_SLICE_OF_1_AS_END)) {
        *start = 0;                                  /* the lone value taken as the end, as Python's x[:v] */
        *end = partialSlice->values[0];
        record_faults(FAULT_BIT(FAULT_SLICE_OF_1_AS_END));
    } else {
        /* the values past a list of `size` < 2: PAST_THE_LIST from its start (one value: [v, 2^32)) */
        *start = partialSlice->size > 0 ? partialSlice->values[0] : PAST_THE_LIST[0];
        *end = partialSlice->size > 1 ? partialSlice->values[1] : PAST_THE_LIST[1 - partialSlice->size];
    }
}

/* Axis `axis` of tensor as gert::Shape::GetDim reads it: INVALID_DIM when the tensor has no such axis. */
static int64_t dim_of(const aclTensor *tensor, uint64_t axis)
{
    return axis < tensor->view_dim_count ? tensor->view_dims[axis] : INVALID_DIM;
}

/* The product of the dims (GetShapeSize): 0 for an empty tensor. */
static int64_t size_of(const aclTensor *tensor)
{
    int64_t size = 1;
    for (uint64_t axis = 0; axis < tensor->view_dim_count; axis++)
        size *= tensor->view_dims[axis];
    return size;
}

/* The rest of CheckAttr (561002) as `build` (emulated_build) has it: 0 <= start <= end <= D (D = dy's axis 3),
 * checked even for an empty slice (2b888cdb); then *no_op when the slice or any tensor is empty (CheckAttr
 * returns there, skipping the later checks; e9f0541c checks this first); else L == cos D, D <= 1024, L a multiple
 * of 2 (4 in quarter mode). "base" returns nowhere early: an empty slice skips only L == cos D and the multiple
 * (both guarded by L != 0) and meets every other check before the kernel's empty tiling key does nothing. */
static int check_attr(const aclTensor *const tensors[3], int32_t mode, int64_t start, int64_t end, int build,
                      int *no_op)
{
    const int64_t d = dim_of(tensors[0], 3), cos_d = dim_of(tensors[1], 3), length = end - start;
    *no_op = build > 0 && (length == 0 || size_of(tensors[0]) == 0 || size_of(tensors[1]) == 0
                           || size_of(tensors[2]) == 0);
    if (*no_op && build == 1)
        return ACL_SUCCESS;
    if (start < 0 || start > end || end > d) {
        if (d == INVALID_DIM)
            prmg_emu_set_error(OP ": partialSlice [%lld, %lld) is out of range: dy has %llu dims, no axis 3 to "
                               "read D from", (long long)start, (long long)end,
                               (unsigned long long)tensors[0]->view_dim_count);
        else
            prmg_emu_set_error(OP ": partialSlice [%lld, %lld) is not inside [0, D = %lld] with start <= end",
                               (long long)start, (long long)end, (long long)d);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    if (*no_op)
        return ACL_SUCCESS;
    if (length != 0 && length != cos_d) {
        prmg_emu_set_error(OP ": slice length %lld != cos last dim %lld", (long long)length, (long long)cos_d);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    if (d > MAX_D) {
        prmg_emu_set_error(OP ": D = %lld exceeds %d", (long long)d, MAX_D);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    int64_t multiple = mode == 2 ? 4 : 2;
    if (length % multiple != 0) {
        prmg_emu_set_error(OP ": slice length %lld is not a multiple of %lld for rotary_mode %d",
                           (long long)length, (long long)multiple, mode);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    return ACL_SUCCESS;
}

int check_positive_and_layout(const char *op, const char *const names[3], const aclTensor *const tensors[3])
{
    for (int t = 0; t < 3; t++) {
        for (int axis = 0; axis < 4; axis++) {
            if (tensors[t]->view_dims[axis] <= 0) {
                prmg_emu_set_error("%s: %s dim %d is %lld, every dim must be > 0", op, names[t], axis,
                                   (long long)tensors[t]->view_dims[axis]);
                return ACLNN_ERR_INNER_TILING_ERROR;
            }
        }
    }
    static const char *const AXES[3] = {"B", "S", "N"};
    for (int axis = 0; axis < 3; axis++) {
        const int64_t table = tensors[1]->view_dims[axis], own = tensors[0]->view_dims[axis];
        if (table != 1 && table != own) {
            prmg_emu_set_error("%s: cos/sin %s = %lld is neither 1 nor %s's %lld (no layout template of "
                               "JudgeLayoutByShape takes it)", op, AXES[axis], (long long)table, names[0],
                               (long long)own);
            return ACLNN_ERR_INNER_TILING_ERROR;
        }
    }
    return ACL_SUCCESS;
}

int check_4d_cos_like_sin(const char *op, const char *const names[3], const aclTensor *const tensors[3])
{
    for (int t = 0; t < 3; t++) {
        if (tensors[t]->view_dim_count != 4) {
            prmg_emu_set_error("%s: %s must be 4-D (B, S, N, D), it has %llu dims", op, names[t],
                               (unsigned long long)tensors[t]->view_dim_count);
            return ACLNN_ERR_INNER_TILING_ERROR;
        }
    }
    for (int axis = 0; axis < 4; axis++) {
        if (tensors[1]->view_dims[axis] != tensors[2]->view_dims[axis]) {
            prmg_emu_set_error("%s: cos shape differs from sin shape at axis %d (%lld vs %lld)", op, axis,
                               (long long)tensors[1]->view_dims[axis], (long long)tensors[2]->view_dims[axis]);
            return ACLNN_ERR_INNER_TILING_ERROR;
        }
    }
    return ACL_SUCCESS;
}

/* CheckShape, which runs for a no-op too (561002): dy, cos, sin 4-D; cos shape == sin shape; cos D <= dy D. */
static int check_shape(const aclTensor *const tensors[3])
{
    int status = check_4d_cos_like_sin(OP, TENSOR_NAMES, tensors);
    if (status != ACL_SUCCESS)
        return status;
    const int64_t d = tensors[0]->view_dims[3], cos_d = tensors[1]->view_dims[3];
    if (cos_d > d) {
        prmg_emu_set_error(OP ": cos last dim %lld exceeds dy D = %lld", (long long)cos_d, (long long)d);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    return ACL_SUCCESS;
}

/* The tiling_cache fault: a cache of the tilings of this thread's earlier calls, keyed by the tensors' shapes and
 * dtypes alone: a call that matches one (a non-empty slice of the same length) runs with that call's pairing mode and
 * slice instead of its own rotary_mode and partialSlice. */
static void cached_tiling(const aclTensor *const tensors[3], int *pairing_mode, int64_t *start, int64_t *end)
{
    enum { ENTRIES = 64 };
    static __thread struct {
        int64_t dims[8];
        int32_t types[2];
        int pairing_mode;
        int64_t start, end;
    } cache[ENTRIES];
    static __thread int used;
    if (*end == *start)
        return;
    int64_t dims[8];
    for (int axis = 0; axis < 4; axis++) {
        dims[axis] = tensors[0]->view_dims[axis];
        dims[4 + axis] = tensors[1]->view_dims[axis];
    }
    for (int i = 0; i < used; i++)
        if (memcmp(cache[i].dims, dims, sizeof dims) == 0 && cache[i].types[0] == tensors[0]->data_type
            && cache[i].types[1] == tensors[1]->data_type) {
            *pairing_mode = cache[i].pairing_mode;
            *start = cache[i].start;
            *end = cache[i].end;
            return;
        }
    int slot = used < ENTRIES ? used++ : used % ENTRIES;
    memcpy(cache[slot].dims, dims, sizeof dims);
    cache[slot].types[0] = tensors[0]->data_type;
    cache[slot].types[1] = tensors[1]->data_type;
    cache[slot].pairing_mode = *pairing_mode;
    cache[slot].start = *start;
    cache[slot].end = *end;
}

/* The whole tiling in upstream's order (CheckAttr, CheckShape, CheckShapeAllPositive,
 * JudgeLayoutByShape); *pairing_mode, *start and *end (end = start for a no-op). */
static int check_tiling(const aclTensor *const tensors[3], int64_t rotaryMode, const aclIntArray *partialSlice,
                        fault_set faults, int *pairing_mode, int64_t *start, int64_t *end)
{
    int32_t mode32 = 0;
    int no_op = 0;
    int build = emulated_build();
    if (build < 0)
        return ACLNN_ERR_INNER;
    int status = check_mode(rotaryMode, faults, pairing_mode, &mode32);
    if (status == ACL_SUCCESS) {
        read_slice(partialSlice, tensors[0]->view_dim_count == 4 ? tensors[0]->view_dims[3] : 0, faults, start, end);
        status = check_attr(tensors, mode32, *start, *end, build, &no_op);
    }
    if (status == ACL_SUCCESS)
        status = check_shape(tensors);
    if (status == ACL_SUCCESS && !no_op)
        status = check_positive_and_layout(OP, TENSOR_NAMES, tensors);
    if (status == ACL_SUCCESS && no_op)
        *end = *start;
    return status;
}

EMU_API int32_t aclnnInplacePartialRotaryMulGradGetWorkspaceSize(aclTensor *dyRef, const aclTensor *cos,
                                                                  const aclTensor *sin, int64_t rotaryMode,
                                                                  const aclIntArray *partialSlice,
                                                                  uint64_t *workspaceSize, aclOpExecutor **executorOut)
{
    static const op_definition grad = {OP, OP_GRAD, TENSOR_NAMES, NULL, NULL};     /* every dtype pair */
    const aclTensor *const tensors[3] = {dyRef, cos, sin};
    aclOpExecutor *job;
    fault_set faults = 0;
    int status = begin_first_phase(&grad, tensors, partialSlice, workspaceSize, executorOut, &job, &faults);
    if (status != ACL_SUCCESS || job == NULL)
        return status;
    int pairing_mode = 1;
    int64_t start = 0, end = 0;
    status = check_tiling(tensors, rotaryMode, partialSlice, faults, &pairing_mode, &start, &end);
    if (status != ACL_SUCCESS)
        return status;
    if (has_fault(faults, FAULT_TILING_CACHE))
        cached_tiling(tensors, &pairing_mode, &start, &end);
    fill_executor(job, tensors, pairing_mode, start, end, KERNEL_WORKSPACE_SIZE);
    *workspaceSize = KERNEL_WORKSPACE_SIZE;
    return ACL_SUCCESS;
}

/* Replaces every bit of element `index` by its complement: a change whatever the value was. */
void invert_element(kernel_tensor *tensor, int64_t index)
{
    if (element_size(tensor->data_type) == 4)
        ((uint32_t *)tensor->host)[index] = ~((uint32_t *)tensor->host)[index];
    else
        ((uint16_t *)tensor->host)[index] = (uint16_t)~((uint16_t *)tensor->host)[index];
}

/* The faults that act after the kernel: clobber_passthrough, clobber_row_end, nan, write_past_end, modify_cos. */
static void apply_output_faults(aclOpExecutor *job, fault_set faults)
{
    kernel_tensor *dy = &job->operand[0].tensor;
    const int64_t d = dy->dims[3];
    if (has_fault(faults, FAULT_CLOBBER_PASSTHROUGH)) {
        int64_t outside = job->start > 0 ? 0 : job->end < d ? job->end : -1;
        if (outside >= 0)
            store_element(dy->data_type, dy->host, outside,
                          load_element(dy->data_type, dy->host, outside) != 0.0f ? 0.0f : 1.0f);
    }
    if (has_fault(faults, FAULT_CLOBBER_ROW_END)) {     /* the sign bit only: the element's last byte */
        const int64_t last = job->end < d ? d - 1 : job->start - 1;
        if (last >= 0) {
            const int64_t index = (element_count(dy) / d - 1) * d + last;
            if (element_size(dy->data_type) == 4)
                ((uint32_t *)dy->host)[index] ^= UINT32_C(0x80000000);
            else
                ((uint16_t *)dy->host)[index] ^= UINT16_C(0x8000);
        }
    }
    if (has_fault(faults, FAULT_NAN) && job->end > job->start)
        store_element(dy->data_type, dy->host, job->start, __builtin_nanf(""));
    if (has_fault(faults, FAULT_WRITE_PAST_END))
        invert_element(dy, element_count(dy));
    if (has_fault(faults, FAULT_MODIFY_COS))
        invert_element(&job->operand[1].tensor, 0);
}

/* The length_one_strides fault's contiguity: 1 when each axis of `operand`, those of length 1 too, has its C-order
 * stride (a tensor of no element aside), where op::IsContiguous skips an axis of length 1. */
static int c_order_strides(const op_operand *operand)
{
    int64_t expected = 1;
    for (int axis = 4; axis-- > 0;) {
        if (operand->tensor.dims[axis] == 0)
            return 1;
        if (operand->strides[axis] != expected)
            return 0;
        expected *= operand->tensor.dims[axis];
    }
    return 1;
}

/* 561000 with a message naming the first non-contiguous tensor of job: nnopbase refuses it at the
 * launch, before the kernel runs (the grad declares neither AutoContiguous nor IgnoreContiguous). The
 * contiguous_tables fault lets a non-contiguous cos or sin through (the kernel then reads it as contiguous);
 * length_one_strides refuses a contiguous view whose stride on an axis of length 1 is not the C-order one (a decode
 * step's q.transpose(1, 2) of a BNSD q at S = 1), as a check comparing every stride would. */
static int refuse_non_contiguous(const aclOpExecutor *job, fault_set faults)
{
    for (int t = 0; t < 3; t++) {
        const op_operand *operand = &job->operand[t];
        const int strict = has_fault(faults, FAULT_LENGTH_ONE_STRIDES) && !c_order_strides(operand);
        if (strict && operand->contiguous)
            record_faults(FAULT_BIT(FAULT_LENGTH_ONE_STRIDES));
        if ((operand->contiguous && !strict) || (t > 0 && has_fault(faults, FAULT_CONTIGUOUS_TABLES)))
            continue;
        prmg_emu_set_error(OP ": %s is not contiguous (offset %lld, strides [%lld, %lld, %lld, %lld]); nnopbase "
                           "refuses a non-contiguous input of an operator that declares neither AutoContiguous nor "
                           "IgnoreContiguous", TENSOR_NAMES[t], (long long)operand->offset,
                           (long long)operand->strides[0], (long long)operand->strides[1],
                           (long long)operand->strides[2], (long long)operand->strides[3]);
        return ACLNN_ERR_INNER;
    }
    return ACL_SUCCESS;
}

/* The workspace_overrun fault: the 4 bytes just past the KERNEL_WORKSPACE_SIZE bytes asked for get
 * every bit inverted: 1; or 0 after raising an asynchronous AI Core exception when they are outside the
 * workspace's device allocation. */
static int overrun_workspace(void *workspace)
{
    unsigned char *past;
    void *device = (unsigned char *)workspace + KERNEL_WORKSPACE_SIZE;
    if (prmg_emu_device_range(device, 4, (void **)&past) != 0) {
        prmg_emu_raise_fault(ACL_ERROR_RT_AICORE_EXCEPTION, OP ": AI core exception: the kernel wrote 4 bytes at "
                             "workspace + %llu (%p), outside the workspace's device allocation",
                             (unsigned long long)KERNEL_WORKSPACE_SIZE, device);
        return 0;
    }
    for (int i = 0; i < 4; i++)
        past[i] = (unsigned char)~past[i];
    return 1;
}

/* The device_fault fault: every element of dy gets every bit inverted (garbage), then the kernel
 * faults (507015, reported at the next synchronization). */
static void fault_on_purpose(kernel_tensor *dy)
{
    for (int64_t i = 0; i < element_count(dy); i++)
        invert_element(dy, i);
    prmg_emu_raise_fault(ACL_ERROR_RT_AICORE_EXCEPTION, OP ": AI core exception: the kernel faulted on purpose "
                         "(PRMG_EMU_FAULT=device_fault) after scribbling over dy");
}

/* 1 when this launch of the nondeterministic fault is odd-numbered (1st, 3rd, ...) in the process:
 * it then sums each pair with a fused multiply-add. */
static int odd_launch(void)
{
    static uint64_t launches;
    return __atomic_add_fetch(&launches, 1, __ATOMIC_SEQ_CST) % 2 == 1;
}

/* What each launch of the leak_device_memory fault takes of the device for good: 256 MiB. */
#define LEAKED_PER_LAUNCH ((size_t)256 << 20)

/* The write_beyond_guard fault: 4 bytes get every bit inverted when they are inside a device allocation; outside
 * every allocation the write is dropped, as on a device where it lands in memory no one watches. Where:
 * PRMG_EMU_BEYOND_GUARD=TENSOR:BYTES, TENSOR one of dy, cos, sin, workspace, BYTES >= 0 past the end of its data (the
 * workspace's: the KERNEL_WORKSPACE_SIZE bytes asked for), < 0 before its first byte; unset, dy:576 (64 bytes beyond
 * a 512-byte guard zone). Another text raises an AI core exception naming it. `starts` and `ends` are the device
 * addresses of dy's, cos's, sin's and the workspace's first byte and of the byte past their last. */
static void write_beyond_guard(unsigned char *const starts[4], unsigned char *const ends[4])
{
    static const char *const NAMES[4] = {"dy", "cos", "sin", "workspace"};
    const char *text = getenv("PRMG_EMU_BEYOND_GUARD");
    text = text && *text ? text : "dy:576";
    const char *colon = strchr(text, ':');
    char *rest = NULL;
    long long bytes = colon ? strtoll(colon + 1, &rest, 10) : 0;
    int which = -1;
    for (int t = 0; colon && t < 4; t++)
        if ((size_t)(colon - text) == strlen(NAMES[t]) && strncmp(text, NAMES[t], strlen(NAMES[t])) == 0)
            which = t;
    if (which < 0 || rest == colon + 1 || *rest != '\0') {
        prmg_emu_raise_fault(ACL_ERROR_RT_AICORE_EXCEPTION, OP ": PRMG_EMU_BEYOND_GUARD must be TENSOR:BYTES (TENSOR "
                             "dy, cos, sin or workspace), got '%s'", text);
        return;
    }
    unsigned char *past;
    unsigned char *target = bytes >= 0 ? ends[which] + bytes : starts[which] + bytes;
    if (prmg_emu_device_range(target, 4, (void **)&past) != 0)
        return;
    for (int i = 0; i < 4; i++)
        past[i] = (unsigned char)~past[i];
}

/* The device address of the byte past `tensor`'s data, before map_tensor moves it to the host. */
static unsigned char *data_end(const kernel_tensor *tensor)
{
    return (unsigned char *)tensor->host + element_count(tensor) * element_size(tensor->data_type);
}

void ignore_offsets(aclOpExecutor *job, int first)
{
    for (int t = first; t < 3; t++)
        job->operand[t].tensor.host = (unsigned char *)job->operand[t].tensor.host
                                      - job->operand[t].offset * element_size(job->operand[t].tensor.data_type);
}

void align_offsets(aclOpExecutor *job)
{
    for (int t = 0; t < 3; t++)
        job->operand[t].tensor.host = (unsigned char *)job->operand[t].tensor.host
                                      - job->operand[t].offset * element_size(job->operand[t].tensor.data_type) % 32;
}

void offsets_in_cos_size(aclOpExecutor *job)
{
    const int64_t size = element_size(job->operand[1].tensor.data_type);
    for (int t = 0; t < 3; t++) {
        kernel_tensor *tensor = &job->operand[t].tensor;
        const int64_t more = size - element_size(tensor->data_type);
        tensor->host = (unsigned char *)tensor->host + job->operand[t].offset * more;
    }
}

/* 1 when the first and the last CACHE_CHECK_BYTES of `bytes` bytes at a and b are equal (all of them when fewer). */
#define CACHE_CHECK_BYTES 32
static int ends_equal(const unsigned char *a, const unsigned char *b, size_t bytes)
{
    const size_t head = bytes < CACHE_CHECK_BYTES ? bytes : CACHE_CHECK_BYTES;
    return memcmp(a, b, head) == 0 && memcmp(a + bytes - head, b + bytes - head, head) == 0;
}

/* The table_address_cache fault: the grad keeps a copy of the cos/sin it last read, keyed by their device addresses
 * (cos_device, sin_device) and sizes; a call whose cos and sin are at the same addresses with the same sizes reads
 * that copy (what they held then), as a kernel caching its converted tables by address would. table_block_cache
 * (`checked`): the same cache, a hit also needing each table's first and last 32 bytes to equal the copy's, as a
 * kernel checking its cache cheaply would (tables alike at both ends, differing between, still hit). */
static void cached_tables(kernel_tensor *cos, kernel_tensor *sin, void *cos_device, void *sin_device, int checked)
{
    static __thread void *keys[2];
    static __thread size_t sizes[2];
    static __thread unsigned char *copies[2];
    kernel_tensor *const tables[2] = {cos, sin};
    void *const addresses[2] = {cos_device, sin_device};
    int hit = 1;
    for (int t = 0; t < 2; t++) {
        const size_t bytes = (size_t)element_count(tables[t]) * (size_t)element_size(tables[t]->data_type);
        hit = hit && keys[t] == addresses[t] && sizes[t] == bytes
              && (!checked || ends_equal(copies[t], tables[t]->host, bytes));
    }
    for (int t = 0; t < 2; t++) {
        const size_t bytes = (size_t)element_count(tables[t]) * (size_t)element_size(tables[t]->data_type);
        if (!hit) {
            unsigned char *copy = realloc(copies[t], bytes ? bytes : 1);
            if (copy == NULL)
                return;
            memcpy(copy, tables[t]->host, bytes);
            copies[t] = copy;
            keys[t] = addresses[t];
            sizes[t] = bytes;
        }
        tables[t]->host = copies[t];
    }
}

/* FNV-1a of `bytes` bytes at `data`, on from `hash`. */
static uint64_t fnv1a(uint64_t hash, const void *data, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        hash = (hash ^ ((const unsigned char *)data)[i]) * 0x100000001b3ULL;
    return hash;
}

/* The repeat_launch_sign fault: 1 when this launch repeats the process's launch before it (the same executor's
 * shapes, dtypes, pairing mode and slice over the same dy, cos and sin bytes: the same case launched again, as a
 * determinism check or a rerun does), as a kernel keeping state between calls (a direction flag cached for a
 * case it has seen) would; the first launch of every case is right. */
static int repeated_launch(const aclOpExecutor *job)
{
    static uint64_t previous;
    uint64_t hash = fnv1a(0xcbf29ce484222325ULL, &job->pairing_mode, sizeof job->pairing_mode);
    hash = fnv1a(fnv1a(hash, &job->start, sizeof job->start), &job->end, sizeof job->end);
    for (int t = 0; t < 3; t++) {
        const kernel_tensor *tensor = &job->operand[t].tensor;
        hash = fnv1a(fnv1a(hash, tensor->dims, sizeof tensor->dims), &tensor->data_type, sizeof tensor->data_type);
        hash = fnv1a(hash, tensor->host, (size_t)element_count(tensor) * element_size(tensor->data_type));
    }
    const int repeated = hash == previous;
    previous = hash;
    return repeated;
}

/* The offset_read_base fault: a dy at a non-zero storage offset is read from its storage's start (the offset dropped
 * from the read address alone) and written at its view: each row's slice lanes take the values of the storage's
 * first elements in their place before the kernel runs, the elements outside the slice left alone. */
static void read_dy_at_base(const aclOpExecutor *job)
{
    const kernel_tensor *dy = &job->operand[0].tensor;
    const int64_t size = element_size(dy->data_type), count = element_count(dy), depth = dy->dims[3];
    if (job->operand[0].offset == 0 || count == 0)
        return;
    unsigned char *const base = (unsigned char *)dy->host - job->operand[0].offset * size;
    unsigned char *const copy = malloc((size_t)(count * size));
    if (copy == NULL)
        return;
    memcpy(copy, base, (size_t)(count * size));                 /* the storage's start, before the view changes */
    for (int64_t row = 0; row < count / depth; row++)
        memcpy((unsigned char *)dy->host + (row * depth + job->start) * size, copy + (row * depth + job->start) * size,
               (size_t)((job->end - job->start) * size));
    free(copy);
}

/* The workspace_table_cache fault: the grad stages cos and sin in its workspace behind a header (a magic word and
 * both tables' byte sizes) and, when the workspace already holds a header of the same sizes, reads the tables staged
 * there instead of cos and sin, as a kernel caching its converted tables in the workspace from one launch to the next
 * would: right on a fresh or poisoned workspace, wrong on one that the launch before, of other tables of those
 * sizes, left (a caching allocator hands the same block back with what it held). */
static void workspace_tables(kernel_tensor *cos, kernel_tensor *sin, void *workspace)
{
    const uint64_t header[3] = {0x50524d4757534331ULL, (uint64_t)element_count(cos) * element_size(cos->data_type),
                                (uint64_t)element_count(sin) * element_size(sin->data_type)};
    unsigned char *host;
    if (workspace == NULL || sizeof header + header[1] + header[2] > KERNEL_WORKSPACE_SIZE
        || prmg_emu_device_range(workspace, KERNEL_WORKSPACE_SIZE, (void **)&host) != 0)
        return;
    if (memcmp(host, header, sizeof header) != 0) {          /* nothing staged of these sizes: stage them */
        memcpy(host, header, sizeof header);
        memcpy(host + sizeof header, cos->host, (size_t)header[1]);
        memcpy(host + sizeof header + header[1], sin->host, (size_t)header[2]);
    }
    cos->host = host + sizeof header;
    sin->host = host + sizeof header + header[1];
}

/* Runs one consumed executor's kernel, `faults` in force (recorded as acting). A kernel fault is
 * raised asynchronously (prmg_emu_raise_fault) and stops the kernel; the launch still succeeds. */
static void launch(aclOpExecutor *job, fault_set faults, void *workspace, const float *workspace_host)
{
    record_faults(faults & ~FAULT_BIT(FAULT_ACCEPT_MODE));          /* accept_mode acts in the first phase */
    if (has_fault(faults, FAULT_CRASH))
        raise(SIGSEGV);
    while (has_fault(faults, FAULT_HANG))
        pause();
    if (has_fault(faults, FAULT_LEAK_DEVICE_MEMORY))
        prmg_emu_leak_device_memory(LEAKED_PER_LAUNCH);
    if (has_fault(faults, FAULT_NOOP))
        return;
    kernel_tensor *dy = &job->operand[0].tensor, *cos = &job->operand[1].tensor, *sin = &job->operand[2].tensor;
    if (has_fault(faults, FAULT_IGNORE_OFFSET))
        ignore_offsets(job, 0);
    else if (has_fault(faults, FAULT_TABLE_OFFSET_IGNORED))        /* cos and sin alone from their storage's start */
        ignore_offsets(job, 1);
    if (has_fault(faults, FAULT_OFFSET_BLOCK_ALIGNED))
        align_offsets(job);
    if (has_fault(faults, FAULT_OFFSET_COS_SIZE))
        offsets_in_cos_size(job);
    int64_t dy_elements = element_count(dy) + (has_fault(faults, FAULT_WRITE_PAST_END) ? 1 : 0);
    unsigned char *const starts[4] = {dy->host, cos->host, sin->host, workspace};
    unsigned char *const ends[4] = {data_end(dy), data_end(cos), data_end(sin),
                                    workspace ? starts[3] + KERNEL_WORKSPACE_SIZE : NULL};
    if (!map_tensor(OP, dy, "dy", dy_elements) || !map_tensor(OP, cos, "cos", element_count(cos))
        || !map_tensor(OP, sin, "sin", element_count(sin)))
        return;
    if (has_fault(faults, FAULT_DEVICE_FAULT)) {
        fault_on_purpose(dy);
        return;
    }
    if (has_fault(faults, FAULT_WORKSPACE_OVERRUN) && !overrun_workspace(workspace))
        return;
    if (has_fault(faults, FAULT_TABLE_ADDRESS_CACHE) || has_fault(faults, FAULT_TABLE_BLOCK_CACHE))
        cached_tables(cos, sin, starts[1], starts[2], !has_fault(faults, FAULT_TABLE_ADDRESS_CACHE));
    if (has_fault(faults, FAULT_WORKSPACE_TABLE_CACHE))
        workspace_tables(cos, sin, workspace);
    if (has_fault(faults, FAULT_REPEAT_LAUNCH_SIGN) && repeated_launch(job))
        faults |= FAULT_BIT(FAULT_SIGN);                            /* the case seen before: its partner sign flipped */
    if (has_fault(faults, FAULT_OFFSET_READ_BASE))
        read_dy_at_base(job);
    int pairing = has_fault(faults, FAULT_HALF_PAIRING) ? (job->pairing_mode == 0 ? 1 : 0) : job->pairing_mode;
    kernel_job work = {0, pairing, job->start, job->end, faults, workspace_host,
                       has_fault(faults, FAULT_NONDETERMINISTIC) && odd_launch()};
    rotary_kernel(dy, cos, sin, &work);
    apply_output_faults(job, faults);
    if (has_fault(faults, FAULT_WRITE_BEYOND_GUARD))
        write_beyond_guard(starts, ends);
}

EMU_API int32_t aclnnInplacePartialRotaryMulGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *job,
                                                 void *stream)
{
    void *workspace_host;
    fault_set faults = 0;
    int status = begin_launch(OP, OP_GRAD, &job, workspace, workspaceSize, stream, &workspace_host, &faults);
    if (status == ACL_SUCCESS)
        status = refuse_non_contiguous(job, faults);
    if (status == ACL_SUCCESS && !job->empty_output && job->start == job->end
        && has_fault(faults, FAULT_NOOP_LAUNCH_REFUSED)) {
        record_faults(FAULT_BIT(FAULT_NOOP_LAUNCH_REFUSED));
        prmg_emu_set_error(OP ": the executor of a no-op (an empty slice, or cos or sin without elements) holds no "
                           "tiling key: its tiling returned before setting one");
        status = ACLNN_ERR_INNER;
    }
    if (status == ACL_SUCCESS && !job->empty_output)
        launch(job, faults, workspace, workspace_host);
    free(job);
    return status;
}
