/*
 * libopapi_transformer.so of the host emulator: the two phases of aclnnInplacePartialRotaryMulGrad and of
 * its forward sibling aclnnInplacePartialRotaryMul.
 *
 * Phase one validates the operator's constraints (operator.md) in the real stack's order and records a
 * message for aclGetRecentErrMsg on failure; on success it asks for a 16 MiB workspace and returns a fresh
 * executor holding what the launch needs. As on a real host:
 *   - ASCEND_OPP_PATH is read at every call (nnopbase): unset or not a folder -> 561107;
 *   - rotary_mode is read as int32 (the tiling reads the int64 attribute's low 32 bits);
 *   - a non-contiguous tensor passes phase one and is refused by the launch with 561000 (the ops declare
 *     neither AutoContiguous nor IgnoreContiguous), the tensor untouched.
 * The grad reports mode/shape/slice errors as 561002 (tiling), the forward as 161002 (its hand-written
 * aclnn layer). Phase two consumes the executor (one launch each), runs the kernel and frees it; an
 * executor never launched is freed by aclDestroyAclOpExecutor (libnnopbase).
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu.h"
#include "faults.h"
#include "kernel.h"

#define WORKSPACE_SIZE (16u << 20)
#define MAX_D 1024

static const char *const OP_NAMES[2] = {"InplacePartialRotaryMulGrad", "InplacePartialRotaryMul"};
static const char *const TENSOR_NAMES[2][3] = {{"dy", "cos", "sin"}, {"xRef", "cos", "sin"}};

typedef struct aclOpExecutor {
    emu_executor_header header;
    int op;
    kernel_tensor x, cos, sin;   /* host pointers hold the device addresses until the launch */
    int pairing_mode;
    int64_t start, end;
    int contiguous;              /* 0: the launch refuses a non-contiguous input */
    const char *non_contiguous;  /* which tensor */
} aclOpExecutor;

static uint64_t launches[2];     /* per operator, launches so far in this process (the nondeterministic fault) */

static void destroy_executor(void *executor)
{
    free(executor);
}

static int is_operator_dtype(int32_t data_type)
{
    return data_type == ACL_FLOAT || data_type == ACL_FLOAT16 || data_type == ACL_BF16;
}

/* 1 when offset is 0 and stride[i] = prod(view_dims[i+1:]) for every axis of length > 1; an empty
 * tensor (a dim of 0) is contiguous with any strides. As CANN's op::IsContiguous, which skips
 * length-1 axes (their stride never moves to another element) and accepts empty views. */
static int is_contiguous(const aclTensor *tensor)
{
    if (tensor->offset != 0)
        return 0;
    for (uint64_t i = 0; i < tensor->view_dim_count; i++)
        if (tensor->view_dims[i] == 0)
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

/* 561107 unless ASCEND_OPP_PATH names an existing folder (nnopbase reads it at call time). */
static int check_opp_path(int op)
{
    const char *path = getenv("ASCEND_OPP_PATH");
    struct stat info;
    if (path != NULL && *path != '\0' && stat(path, &info) == 0 && S_ISDIR(info.st_mode))
        return ACL_SUCCESS;
    prmg_emu_set_error("%s: ASCEND_OPP_PATH %s%s: the operator package cannot be found", OP_NAMES[op],
                       path != NULL && *path != '\0' ? path : "is not set",
                       path != NULL && *path != '\0' ? " is not a folder" : "");
    return ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND;
}

/* 161002 checks: descriptors, dtypes (the forward's cos: x's dtype or float32), sin dtype == cos dtype,
 * formats (the grad: NCHW, NHWC, ND; the forward: ND), the slice array's size. */
static int check_parameters(int op, const aclTensor *const tensors[3], const aclIntArray *partialSlice)
{
    for (int t = 0; t < 3; t++) {
        const aclTensor *tensor = tensors[t];
        if (tensor->magic != EMU_TENSOR_MAGIC) {
            prmg_emu_set_error("%s: %s is not a live aclTensor", OP_NAMES[op], TENSOR_NAMES[op][t]);
            return ACLNN_ERR_PARAM_INVALID;
        }
        if (!is_operator_dtype(tensor->data_type)) {
            prmg_emu_set_error("%s: %s dtype %d is not supported (float32 0, float16 1, bfloat16 27)", OP_NAMES[op],
                               TENSOR_NAMES[op][t], tensor->data_type);
            return ACLNN_ERR_PARAM_INVALID;
        }
    }
    if (op == OP_FORWARD && tensors[1]->data_type != tensors[0]->data_type && tensors[1]->data_type != ACL_FLOAT) {
        prmg_emu_set_error("%s: cos dtype %d is neither xRef's %d nor float32", OP_NAMES[op], tensors[1]->data_type,
                           tensors[0]->data_type);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (tensors[2]->data_type != tensors[1]->data_type) {
        prmg_emu_set_error("%s: sin dtype %d differs from cos dtype %d", OP_NAMES[op], tensors[2]->data_type,
                           tensors[1]->data_type);
        return ACLNN_ERR_PARAM_INVALID;
    }
    for (int t = 0; t < 3; t++) {
        int32_t format = tensors[t]->format;
        int supported = op == OP_FORWARD ? format == ACL_FORMAT_ND
                                         : format == ACL_FORMAT_NCHW || format == ACL_FORMAT_NHWC || format == ACL_FORMAT_ND;
        if (!supported) {
            prmg_emu_set_error("%s: %s format %d is not supported (%s)", OP_NAMES[op], TENSOR_NAMES[op][t], format,
                               op == OP_FORWARD ? "ND 2" : "NCHW 0, NHWC 1, ND 2");
            return ACLNN_ERR_PARAM_INVALID;
        }
    }
    if (partialSlice != NULL && (partialSlice->magic != EMU_INT_ARRAY_MAGIC || partialSlice->size != 2)) {
        prmg_emu_set_error("%s: partialSlice must hold 2 values [start, end), it holds %llu", OP_NAMES[op],
                           partialSlice->magic == EMU_INT_ARRAY_MAGIC ? (unsigned long long)partialSlice->size : 0ull);
        return ACLNN_ERR_PARAM_INVALID;
    }
    return ACL_SUCCESS;
}

/* `code` unless rotary_mode, read as int32, is 0..3 and implemented (PRMG_EMU_MODES, or any with the
 * accept_mode fault); *pairing_mode is the formula used: the mode itself, or interleave for a wrongly
 * accepted one. */
static int check_mode(int op, int64_t rotaryMode, fault_set faults, int code, int *pairing_mode)
{
    unsigned implemented;
    if (supported_modes(&implemented) != 0)
        return ACLNN_ERR_INNER;
    int32_t mode = (int32_t)(uint32_t)(uint64_t)rotaryMode;
    if (mode < 0 || mode > 3) {
        prmg_emu_set_error("%s: rotary_mode %lld (read as int32: %d) is not one of 0 half, 1 interleave, 2 quarter, "
                           "3 interleave-half", OP_NAMES[op], (long long)rotaryMode, mode);
        return code;
    }
    int supported = (implemented >> mode) & 1u;
    if (!supported && !(faults & FAULT_ACCEPT_MODE)) {
        prmg_emu_set_error("%s: rotary_mode %d is not supported by this kernel", OP_NAMES[op], mode);
        return code;
    }
    *pairing_mode = supported ? mode : 1;
    return ACL_SUCCESS;
}

/* `code` checks on the shapes: 4-D, cos shape == sin shape, dims > 0, D <= 1024 (the forward: D even). */
static int check_shapes(int op, const aclTensor *const tensors[3], int code)
{
    for (int t = 0; t < 3; t++) {
        if (tensors[t]->view_dim_count != 4) {
            prmg_emu_set_error("%s: %s must be 4-D (B, S, N, D), it has %llu dims", OP_NAMES[op], TENSOR_NAMES[op][t],
                               (unsigned long long)tensors[t]->view_dim_count);
            return code;
        }
    }
    for (int axis = 0; axis < 4; axis++) {
        if (tensors[1]->view_dims[axis] != tensors[2]->view_dims[axis]) {
            prmg_emu_set_error("%s: cos shape differs from sin shape at axis %d (%lld vs %lld)", OP_NAMES[op], axis,
                               (long long)tensors[1]->view_dims[axis], (long long)tensors[2]->view_dims[axis]);
            return code;
        }
    }
    for (int t = 0; t < 3; t++) {
        for (int axis = 0; axis < 4; axis++) {
            if (tensors[t]->view_dims[axis] <= 0) {
                prmg_emu_set_error("%s: %s dim %d is %lld, every dim must be > 0", OP_NAMES[op], TENSOR_NAMES[op][t],
                                   axis, (long long)tensors[t]->view_dims[axis]);
                return code;
            }
        }
    }
    if (tensors[0]->view_dims[3] > MAX_D) {
        prmg_emu_set_error("%s: D = %lld exceeds %d", OP_NAMES[op], (long long)tensors[0]->view_dims[3], MAX_D);
        return code;
    }
    return ACL_SUCCESS;
}

/* `code` checks on the slice against the shapes and the mode, then the cos/sin layout: every axis 1 or
 * x's (the grad); BSND, B1ND, B11D or 111D (the forward on 950), and the forward's D even. */
static int check_slice(int op, const aclTensor *x, const aclTensor *cos, int mode, int64_t start, int64_t end, int code)
{
    const int64_t d = x->view_dims[3], cos_d = cos->view_dims[3], length = end - start;
    if (start < 0 || end > d || start > end) {
        prmg_emu_set_error("%s: partialSlice [%lld, %lld) is not inside [0, D = %lld] with start <= end", OP_NAMES[op],
                           (long long)start, (long long)end, (long long)d);
        return code;
    }
    if (length != 0 && length != cos_d) {
        prmg_emu_set_error("%s: slice length %lld != cos last dim %lld", OP_NAMES[op], (long long)length,
                           (long long)cos_d);
        return code;
    }
    if (cos_d > d) {
        prmg_emu_set_error("%s: cos last dim %lld exceeds D = %lld", OP_NAMES[op], (long long)cos_d, (long long)d);
        return code;
    }
    int64_t multiple = mode == 2 ? 4 : 2;
    if (length % multiple != 0) {
        prmg_emu_set_error("%s: slice length %lld is not a multiple of %lld for rotary_mode %d", OP_NAMES[op],
                           (long long)length, (long long)multiple, mode);
        return code;
    }
    static const char *const AXES[3] = {"B", "S", "N"};
    for (int axis = 0; axis < 3; axis++) {
        if (cos->view_dims[axis] != 1 && cos->view_dims[axis] != x->view_dims[axis]) {
            prmg_emu_set_error("%s: cos/sin %s = %lld is neither 1 nor %s's %lld", OP_NAMES[op], AXES[axis],
                               (long long)cos->view_dims[axis], TENSOR_NAMES[op][0], (long long)x->view_dims[axis]);
            return code;
        }
    }
    if (op == OP_FORWARD) {
        if (d % 2 != 0) {
            prmg_emu_set_error("%s: D = %lld is odd", OP_NAMES[op], (long long)d);
            return code;
        }
        const int64_t b = x->view_dims[0], s = x->view_dims[1], n = x->view_dims[2];
        const int64_t layouts[4][3] = {{b, s, n}, {b, 1, n}, {b, 1, 1}, {1, 1, 1}};   /* BSND B1ND B11D 111D */
        int allowed = 0;
        for (int layout = 0; layout < 4; layout++)
            allowed |= cos->view_dims[0] == layouts[layout][0] && cos->view_dims[1] == layouts[layout][1]
                       && cos->view_dims[2] == layouts[layout][2];
        if (!allowed) {
            prmg_emu_set_error("%s: cos/sin layout (%lld, %lld, %lld) is not BSND, B1ND, B11D or 111D", OP_NAMES[op],
                               (long long)cos->view_dims[0], (long long)cos->view_dims[1], (long long)cos->view_dims[2]);
            return code;
        }
    }
    return ACL_SUCCESS;
}

static kernel_tensor describe(const aclTensor *tensor)
{
    kernel_tensor described;
    for (int axis = 0; axis < 4; axis++)
        described.dims[axis] = tensor->view_dims[axis];
    described.data_type = tensor->data_type;
    described.host = tensor->data;
    return described;
}

/* The faults of `op` among those PRMG_EMU_FAULT names for a tensor of x's shape; -1 on a bad variable. */
static int op_faults(int op, const aclTensor *x, fault_set *faults)
{
    if (active_faults(x->view_dims, x->view_dim_count, faults) != 0)
        return -1;
    *faults &= op == OP_FORWARD ? FORWARD_FAULTS : ~(fault_set)FORWARD_FAULTS;
    return 0;
}

/* Phase one of either operator (the file's comment). */
static int32_t get_workspace_size(int op, aclTensor *x, const aclTensor *cos, const aclTensor *sin, int64_t rotaryMode,
                                  const aclIntArray *partialSlice, uint64_t *workspaceSize, aclOpExecutor **executorOut)
{
    const aclTensor *const tensors[3] = {x, cos, sin};
    for (int t = 0; t < 3; t++) {
        if (tensors[t] == NULL) {
            prmg_emu_set_error("%s: %s is a null pointer", OP_NAMES[op], TENSOR_NAMES[op][t]);
            return ACLNN_ERR_PARAM_NULLPTR;
        }
    }
    if (workspaceSize == NULL || executorOut == NULL) {
        prmg_emu_set_error("%s: %s is a null pointer", OP_NAMES[op], workspaceSize == NULL ? "workspaceSize" : "executor");
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    int status = check_opp_path(op);
    if (status == ACL_SUCCESS)
        status = check_parameters(op, tensors, partialSlice);
    if (status != ACL_SUCCESS)
        return status;
    fault_set faults;
    if (op_faults(op, x, &faults) != 0)
        return ACLNN_ERR_INNER;
    const int code = op == OP_FORWARD ? ACLNN_ERR_PARAM_INVALID : ACLNN_ERR_INNER_TILING_ERROR;
    int pairing_mode = 1;
    status = check_mode(op, rotaryMode, faults, code, &pairing_mode);
    if (status == ACL_SUCCESS)
        status = check_shapes(op, tensors, code);
    int64_t start = partialSlice != NULL ? partialSlice->values[0] : 0;
    int64_t end = partialSlice != NULL ? partialSlice->values[1] : op == OP_FORWARD && x->view_dim_count == 4 ? x->view_dims[3] : 0;
    if (status == ACL_SUCCESS)
        status = check_slice(op, x, cos, (int32_t)(uint32_t)(uint64_t)rotaryMode, start, end, code);
    if (status != ACL_SUCCESS)
        return status;
    aclOpExecutor *created = calloc(1, sizeof *created);
    if (created == NULL || prmg_emu_executor_add(created) != 0) {
        free(created);
        prmg_emu_set_error("%s: out of host memory", OP_NAMES[op]);
        return ACLNN_ERR_INNER;
    }
    created->header.destroy = destroy_executor;
    created->op = op;
    created->x = describe(x);
    created->cos = describe(cos);
    created->sin = describe(sin);
    created->pairing_mode = pairing_mode;
    created->start = start;
    created->end = end;
    created->contiguous = 1;
    for (int t = 0; t < 3 && created->contiguous; t++) {
        if (!is_contiguous(tensors[t])) {
            created->contiguous = 0;
            created->non_contiguous = TENSOR_NAMES[op][t];
        }
    }
    *workspaceSize = WORKSPACE_SIZE;
    *executorOut = created;
    return ACL_SUCCESS;
}

EMU_API int32_t aclnnInplacePartialRotaryMulGradGetWorkspaceSize(aclTensor *dyRef, const aclTensor *cos,
                                                                  const aclTensor *sin, int64_t rotaryMode,
                                                                  const aclIntArray *partialSlice,
                                                                  uint64_t *workspaceSize, aclOpExecutor **executorOut)
{
    return get_workspace_size(OP_GRAD, dyRef, cos, sin, rotaryMode, partialSlice, workspaceSize, executorOut);
}

EMU_API int32_t aclnnInplacePartialRotaryMulGetWorkspaceSize(aclTensor *xRef, const aclTensor *cos,
                                                              const aclTensor *sin, int64_t rotary_mode,
                                                              const aclIntArray *partialSlice, uint64_t *workspaceSize,
                                                              aclOpExecutor **executorOut)
{
    return get_workspace_size(OP_FORWARD, xRef, cos, sin, rotary_mode, partialSlice, workspaceSize, executorOut);
}

/* Replaces tensor->host (a device address) with its host view covering `elements` elements;
 * 507015 with a message when that range is not inside one device allocation. */
static int map_tensor(int op, kernel_tensor *tensor, const char *name, int64_t elements)
{
    size_t bytes = (size_t)elements * (size_t)element_size(tensor->data_type);
    void *device = tensor->host;
    if (prmg_emu_device_range(device, bytes, &tensor->host) == 0)
        return ACL_SUCCESS;
    prmg_emu_set_error("%s: AI core exception: %s data [%p, +%zu bytes) is not inside one device allocation",
                       OP_NAMES[op], name, device, bytes);
    return ACL_ERROR_RT_AICORE_EXCEPTION;
}

static int64_t element_count(const kernel_tensor *tensor)
{
    return tensor->dims[0] * tensor->dims[1] * tensor->dims[2] * tensor->dims[3];
}

/* Replaces every bit of element `index` by its complement: a change whatever the value was. */
static void invert_element(kernel_tensor *tensor, int64_t index)
{
    if (element_size(tensor->data_type) == 4)
        ((uint32_t *)tensor->host)[index] = ~((uint32_t *)tensor->host)[index];
    else
        ((uint16_t *)tensor->host)[index] = (uint16_t)~((uint16_t *)tensor->host)[index];
}

/* The faults that act after the kernel: clobber_passthrough, passthrough_add_zero, nan, write_past_end,
 * modify_cos. */
static void apply_output_faults(aclOpExecutor *job, fault_set faults)
{
    kernel_tensor *x = &job->x;
    const int64_t d = x->dims[3], rows = element_count(x) / (d > 0 ? d : 1);
    if (faults & FAULT_CLOBBER_PASSTHROUGH) {
        int64_t outside = job->start > 0 ? 0 : job->end < d ? job->end : -1;
        if (outside >= 0)
            store_element(x->data_type, x->host, outside,
                          load_element(x->data_type, x->host, outside) != 0.0f ? 0.0f : 1.0f);
    }
    if (faults & FAULT_PASSTHROUGH_ADD_ZERO) {
        for (int64_t row = 0; row < rows; row++) {
            for (int64_t j = 0; j < d; j++) {
                if (j >= job->start && j < job->end)
                    continue;
                int64_t index = row * d + j;
                store_element(x->data_type, x->host, index, load_element(x->data_type, x->host, index) + 0.0f);
            }
        }
    }
    if ((faults & FAULT_NAN) && job->end > job->start)
        store_element(x->data_type, x->host, job->start, __builtin_nanf(""));
    if (faults & FAULT_WRITE_PAST_END)
        invert_element(x, element_count(x));
    if (faults & FAULT_MODIFY_COS)
        invert_element(&job->cos, 0);
}

/* Runs one consumed executor with its workspace (host view, may be NULL); the status of the launch. */
static int launch(aclOpExecutor *job, fault_set faults, void *workspace, void *workspace_device)
{
    if (!job->contiguous) {
        prmg_emu_set_error("%s: %s is not contiguous: the operator declares neither AutoContiguous nor "
                           "IgnoreContiguous, so the launch refuses it", OP_NAMES[job->op], job->non_contiguous);
        return ACLNN_ERR_INNER;
    }
    if (faults & FAULT_CRASH)
        raise(SIGSEGV);
    while (faults & FAULT_HANG)
        pause();
    if (faults & (FAULT_NOOP | FAULT_FWD_NOOP))
        return ACL_SUCCESS;
    int64_t x_elements = element_count(&job->x) + ((faults & FAULT_WRITE_PAST_END) ? 1 : 0);
    int status = map_tensor(job->op, &job->x, TENSOR_NAMES[job->op][0], x_elements);
    if (status == ACL_SUCCESS)
        status = map_tensor(job->op, &job->cos, "cos", element_count(&job->cos));
    if (status == ACL_SUCCESS)
        status = map_tensor(job->op, &job->sin, "sin", element_count(&job->sin));
    if (status != ACL_SUCCESS)
        return status;
    if (faults & FAULT_WORKSPACE_OVERRUN) {
        void *past;
        if (prmg_emu_device_range((char *)workspace_device + WORKSPACE_SIZE, 4, &past) != 0) {
            prmg_emu_set_error("%s: AI core exception: a write past the workspace left its allocation", OP_NAMES[job->op]);
            return ACL_ERROR_RT_AICORE_EXCEPTION;
        }
        *(uint32_t *)past = ~*(uint32_t *)past;
    }
    int pairing = job->pairing_mode;
    if (faults & FAULT_HALF_PAIRING)
        pairing = pairing == 0 ? 1 : 0;
    kernel_job work = {job->op, pairing, job->start, job->end, faults, workspace, launches[job->op]++};
    rotary_mul(&job->x, &job->cos, &job->sin, &work);
    apply_output_faults(job, faults);
    return ACL_SUCCESS;
}

/* Phase two of either operator. */
static int32_t run(int op, void *workspace, uint64_t workspaceSize, aclOpExecutor *job, void *stream)
{
    if (job == NULL || !prmg_emu_executor_take(job)) {
        prmg_emu_set_error("%s: executor %p is unknown or was already used by a launch (an executor serves "
                           "one launch)", OP_NAMES[op], (void *)job);
        return ACLNN_ERR_PARAM_INVALID;
    }
    void *workspace_host = NULL;
    int status = ACLNN_ERR_PARAM_INVALID;
    if (job->op != op)
        prmg_emu_set_error("%s: executor %p belongs to %s", OP_NAMES[op], (void *)job, OP_NAMES[job->op]);
    else if (workspaceSize < WORKSPACE_SIZE)
        prmg_emu_set_error("%s: workspaceSize %llu is smaller than the %u bytes asked for", OP_NAMES[op],
                           (unsigned long long)workspaceSize, WORKSPACE_SIZE);
    else if (workspace == NULL || prmg_emu_device_range(workspace, WORKSPACE_SIZE, &workspace_host) != 0)
        prmg_emu_set_error("%s: workspace %p is not %u bytes of device memory", OP_NAMES[op], workspace, WORKSPACE_SIZE);
    else if (!prmg_emu_stream_valid(stream))
        prmg_emu_set_error("%s: stream %p is not a live stream", OP_NAMES[op], stream);
    else
        status = ACL_SUCCESS;
    fault_set faults = 0;
    if (status == ACL_SUCCESS) {
        const int64_t dims[4] = {job->x.dims[0], job->x.dims[1], job->x.dims[2], job->x.dims[3]};
        if (active_faults(dims, 4, &faults) != 0)
            status = ACLNN_ERR_INNER;
        faults &= op == OP_FORWARD ? FORWARD_FAULTS : ~(fault_set)FORWARD_FAULTS;
    }
    if (status == ACL_SUCCESS)
        status = launch(job, faults, workspace_host, workspace);
    free(job);
    return status;
}

EMU_API int32_t aclnnInplacePartialRotaryMulGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *job, void *stream)
{
    return run(OP_GRAD, workspace, workspaceSize, job, stream);
}

EMU_API int32_t aclnnInplacePartialRotaryMul(void *workspace, uint64_t workspaceSize, aclOpExecutor *job, void *stream)
{
    return run(OP_FORWARD, workspace, workspaceSize, job, stream);
}
