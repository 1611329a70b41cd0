/*
 * libopapi_transformer.so of the host emulator: the two phases of aclnnInplacePartialRotaryMulGrad.
 *
 * Phase one validates exactly the constraints table of operator.md, in this order: null pointers
 * (161001), then dtype / format / contiguity / partialSlice size (161002), then mode, shape and
 * slice checks (561002); each failure records a message for aclGetRecentErrMsg. On success it asks
 * for a 16 MiB workspace and returns a fresh executor holding a copy of what the launch needs.
 * Phase two consumes the executor (one launch each), runs the kernel to completion and frees it.
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "emu.h"
#include "faults.h"
#include "kernel.h"
#include "registry.h"

#define OP "InplacePartialRotaryMulGrad"
#define WORKSPACE_SIZE (16u << 20)
#define MAX_D 1024

typedef struct aclOpExecutor {
    kernel_tensor dy, cos, sin;   /* host pointers hold the device addresses until the launch */
    int64_t rotary_mode;
    int pairing_mode;
    int64_t start, end;
} aclOpExecutor;

static handle_registry live_executors = HANDLE_REGISTRY_INIT;

static const char *const TENSOR_NAMES[3] = {"dy", "cos", "sin"};

static int is_operator_dtype(int32_t data_type)
{
    return data_type == ACL_FLOAT || data_type == ACL_FLOAT16 || data_type == ACL_BF16;
}

static int is_operator_format(int32_t format)
{
    return format == ACL_FORMAT_NCHW || format == ACL_FORMAT_NHWC || format == ACL_FORMAT_ND;
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

/* 161002 checks: descriptors, dtypes, sin dtype == cos dtype, formats, contiguity, slice size. */
static int check_parameters(const aclTensor *const tensors[3], const aclIntArray *partialSlice)
{
    for (int t = 0; t < 3; t++) {
        const aclTensor *tensor = tensors[t];
        if (tensor->magic != EMU_TENSOR_MAGIC) {
            prmg_emu_set_error(OP ": %s is not a live aclTensor", TENSOR_NAMES[t]);
            return ACLNN_ERR_PARAM_INVALID;
        }
        if (!is_operator_dtype(tensor->data_type)) {
            prmg_emu_set_error(OP ": %s dtype %d is not supported (float32 0, float16 1, bfloat16 27)",
                               TENSOR_NAMES[t], tensor->data_type);
            return ACLNN_ERR_PARAM_INVALID;
        }
    }
    if (tensors[2]->data_type != tensors[1]->data_type) {
        prmg_emu_set_error(OP ": sin dtype %d differs from cos dtype %d", tensors[2]->data_type,
                           tensors[1]->data_type);
        return ACLNN_ERR_PARAM_INVALID;
    }
    for (int t = 0; t < 3; t++) {
        if (!is_operator_format(tensors[t]->format)) {
            prmg_emu_set_error(OP ": %s format %d is not supported (NCHW 0, NHWC 1, ND 2)", TENSOR_NAMES[t],
                               tensors[t]->format);
            return ACLNN_ERR_PARAM_INVALID;
        }
        if (!is_contiguous(tensors[t])) {
            prmg_emu_set_error(OP ": %s is not contiguous (offset %lld, strides must be C-contiguous)",
                               TENSOR_NAMES[t], (long long)tensors[t]->offset);
            return ACLNN_ERR_PARAM_INVALID;
        }
    }
    if (partialSlice != NULL && (partialSlice->magic != EMU_INT_ARRAY_MAGIC || partialSlice->size != 2)) {
        prmg_emu_set_error(OP ": partialSlice must hold 2 values [start, end), it holds %llu",
                           partialSlice->magic == EMU_INT_ARRAY_MAGIC ? (unsigned long long)partialSlice->size
                                                                      : 0ull);
        return ACLNN_ERR_PARAM_INVALID;
    }
    return ACL_SUCCESS;
}

/* 561002 checks on the shapes. */
static int check_shapes(const aclTensor *const tensors[3])
{
    for (int t = 0; t < 3; t++) {
        if (tensors[t]->view_dim_count != 4) {
            prmg_emu_set_error(OP ": %s must be 4-D (B, S, N, D), it has %llu dims", TENSOR_NAMES[t],
                               (unsigned long long)tensors[t]->view_dim_count);
            return ACLNN_ERR_INNER_TILING_ERROR;
        }
    }
    for (int axis = 0; axis < 4; axis++) {
        if (tensors[1]->view_dims[axis] != tensors[2]->view_dims[axis]) {
            prmg_emu_set_error(OP ": cos shape differs from sin shape at axis %d (%lld vs %lld)", axis,
                               (long long)tensors[1]->view_dims[axis], (long long)tensors[2]->view_dims[axis]);
            return ACLNN_ERR_INNER_TILING_ERROR;
        }
    }
    for (int t = 0; t < 3; t++) {
        for (int axis = 0; axis < 4; axis++) {
            if (tensors[t]->view_dims[axis] <= 0) {
                prmg_emu_set_error(OP ": %s dim %d is %lld, every dim must be > 0", TENSOR_NAMES[t], axis,
                                   (long long)tensors[t]->view_dims[axis]);
                return ACLNN_ERR_INNER_TILING_ERROR;
            }
        }
    }
    if (tensors[0]->view_dims[3] > MAX_D) {
        prmg_emu_set_error(OP ": D = %lld exceeds %d", (long long)tensors[0]->view_dims[3], MAX_D);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    return ACL_SUCCESS;
}

/* 561002 checks on the slice against the shapes and the mode, then cos/sin broadcast axes. */
static int check_slice(const aclTensor *dy, const aclTensor *cos, int64_t mode, int64_t start, int64_t end)
{
    const int64_t d = dy->view_dims[3], cos_d = cos->view_dims[3], length = end - start;
    if (start < 0 || end > d || start > end) {
        prmg_emu_set_error(OP ": partialSlice [%lld, %lld) is not inside [0, D = %lld] with start <= end",
                           (long long)start, (long long)end, (long long)d);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    if (length != 0 && length != cos_d) {
        prmg_emu_set_error(OP ": slice length %lld != cos last dim %lld", (long long)length, (long long)cos_d);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    if (cos_d > d) {
        prmg_emu_set_error(OP ": cos last dim %lld exceeds dy D = %lld", (long long)cos_d, (long long)d);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    int64_t multiple = mode == 2 ? 4 : 2;
    if (length % multiple != 0) {
        prmg_emu_set_error(OP ": slice length %lld is not a multiple of %lld for rotary_mode %lld",
                           (long long)length, (long long)multiple, (long long)mode);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    static const char *const AXES[3] = {"B", "S", "N"};
    for (int axis = 0; axis < 3; axis++) {
        if (cos->view_dims[axis] != 1 && cos->view_dims[axis] != dy->view_dims[axis]) {
            prmg_emu_set_error(OP ": cos/sin %s = %lld is neither 1 nor dy's %lld", AXES[axis],
                               (long long)cos->view_dims[axis], (long long)dy->view_dims[axis]);
            return ACLNN_ERR_INNER_TILING_ERROR;
        }
    }
    return ACL_SUCCESS;
}

/* 561002 unless mode is 0..3 and implemented (PRMG_EMU_MODES, or any with the accept_mode fault);
 * *pairing_mode is the formula used: the mode itself, or interleave for a wrongly accepted one. */
static int check_mode(int64_t mode, unsigned faults, int *pairing_mode)
{
    unsigned implemented;
    if (supported_modes(&implemented) != 0)
        return ACLNN_ERR_INNER;
    if (mode < 0 || mode > 3) {
        prmg_emu_set_error(OP ": rotary_mode %lld is not one of 0 half, 1 interleave, 2 quarter, "
                           "3 interleave-half", (long long)mode);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    int supported = (implemented >> mode) & 1u;
    if (!supported && !(faults & FAULT_ACCEPT_MODE)) {
        prmg_emu_set_error(OP ": rotary_mode %lld is not supported by this kernel", (long long)mode);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    *pairing_mode = supported ? (int)mode : 1;
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

EMU_API int32_t aclnnInplacePartialRotaryMulGradGetWorkspaceSize(aclTensor *dyRef, const aclTensor *cos,
                                                                  const aclTensor *sin, int64_t rotaryMode,
                                                                  const aclIntArray *partialSlice,
                                                                  uint64_t *workspaceSize, aclOpExecutor **executorOut)
{
    const aclTensor *const tensors[3] = {dyRef, cos, sin};
    for (int t = 0; t < 3; t++) {
        if (tensors[t] == NULL) {
            prmg_emu_set_error(OP ": %s is a null pointer", TENSOR_NAMES[t]);
            return ACLNN_ERR_PARAM_NULLPTR;
        }
    }
    if (workspaceSize == NULL || executorOut == NULL) {
        prmg_emu_set_error(OP ": %s is a null pointer", workspaceSize == NULL ? "workspaceSize" : "executor");
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    int status = check_parameters(tensors, partialSlice);
    if (status != ACL_SUCCESS)
        return status;
    unsigned faults;
    if (active_faults(dyRef->view_dims, dyRef->view_dim_count, &faults) != 0)
        return ACLNN_ERR_INNER;
    int pairing_mode = 1;
    status = check_mode(rotaryMode, faults, &pairing_mode);
    if (status == ACL_SUCCESS)
        status = check_shapes(tensors);
    int64_t start = partialSlice != NULL ? partialSlice->values[0] : 0;
    int64_t end = partialSlice != NULL ? partialSlice->values[1] : 0;
    if (status == ACL_SUCCESS)
        status = check_slice(dyRef, cos, rotaryMode, start, end);
    if (status != ACL_SUCCESS)
        return status;
    aclOpExecutor *created = malloc(sizeof *created);
    if (created == NULL || registry_add(&live_executors, created) != 0) {
        free(created);
        prmg_emu_set_error(OP ": out of host memory");
        return ACLNN_ERR_INNER;
    }
    created->dy = describe(dyRef);
    created->cos = describe(cos);
    created->sin = describe(sin);
    created->rotary_mode = rotaryMode;
    created->pairing_mode = pairing_mode;
    created->start = start;
    created->end = end;
    *workspaceSize = WORKSPACE_SIZE;
    *executorOut = created;
    return ACL_SUCCESS;
}

/* Replaces tensor->host (a device address) with its host view covering `elements` elements;
 * 507015 with a message when that range is not inside one device allocation. */
static int map_tensor(kernel_tensor *tensor, const char *name, int64_t elements)
{
    size_t bytes = (size_t)elements * (size_t)element_size(tensor->data_type);
    void *device = tensor->host;
    if (prmg_emu_device_range(device, bytes, &tensor->host) == 0)
        return ACL_SUCCESS;
    prmg_emu_set_error(OP ": AI core exception: %s data [%p, +%zu bytes) is not inside one device allocation",
                       name, device, bytes);
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

/* The faults that act after the kernel: clobber_passthrough, nan, write_past_end, modify_cos. */
static void apply_output_faults(aclOpExecutor *job, unsigned faults)
{
    kernel_tensor *dy = &job->dy;
    const int64_t d = dy->dims[3];
    if (faults & FAULT_CLOBBER_PASSTHROUGH) {
        int64_t outside = job->start > 0 ? 0 : job->end < d ? job->end : -1;
        if (outside >= 0)
            store_element(dy->data_type, dy->host, outside,
                          load_element(dy->data_type, dy->host, outside) != 0.0f ? 0.0f : 1.0f);
    }
    if ((faults & FAULT_NAN) && job->end > job->start)
        store_element(dy->data_type, dy->host, job->start, __builtin_nanf(""));
    if (faults & FAULT_WRITE_PAST_END)
        invert_element(dy, element_count(dy));
    if (faults & FAULT_MODIFY_COS)
        invert_element(&job->cos, 0);
}

/* Runs one consumed executor; the status of the launch. */
static int launch(aclOpExecutor *job, unsigned faults)
{
    if (faults & FAULT_CRASH)
        raise(SIGSEGV);
    while (faults & FAULT_HANG)
        pause();
    if (faults & FAULT_NOOP)
        return ACL_SUCCESS;
    int64_t dy_elements = element_count(&job->dy) + ((faults & FAULT_WRITE_PAST_END) ? 1 : 0);
    int status = map_tensor(&job->dy, "dy", dy_elements);
    if (status == ACL_SUCCESS)
        status = map_tensor(&job->cos, "cos", element_count(&job->cos));
    if (status == ACL_SUCCESS)
        status = map_tensor(&job->sin, "sin", element_count(&job->sin));
    if (status != ACL_SUCCESS)
        return status;
    kernel_job work = {(faults & FAULT_HALF_PAIRING) ? (job->pairing_mode == 0 ? 1 : 0) : job->pairing_mode,
                       job->start, job->end, faults};
    rotary_mul_grad(&job->dy, &job->cos, &job->sin, &work);
    apply_output_faults(job, faults);
    return ACL_SUCCESS;
}

EMU_API int32_t aclnnInplacePartialRotaryMulGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *job,
                                                 void *stream)
{
    if (job == NULL || !registry_remove(&live_executors, job)) {
        prmg_emu_set_error(OP ": executor %p is unknown or was already used by a launch (an executor serves "
                           "one launch)", (void *)job);
        return ACLNN_ERR_PARAM_INVALID;
    }
    void *workspace_host;
    int status = ACLNN_ERR_PARAM_INVALID;
    if (workspaceSize < WORKSPACE_SIZE)
        prmg_emu_set_error(OP ": workspaceSize %llu is smaller than the %u bytes asked for",
                           (unsigned long long)workspaceSize, WORKSPACE_SIZE);
    else if (workspace == NULL || prmg_emu_device_range(workspace, WORKSPACE_SIZE, &workspace_host) != 0)
        prmg_emu_set_error(OP ": workspace %p is not %u bytes of device memory", workspace, WORKSPACE_SIZE);
    else if (!prmg_emu_stream_valid(stream))
        prmg_emu_set_error(OP ": stream %p is not a live stream", stream);
    else
        status = ACL_SUCCESS;
    unsigned faults = 0;
    if (status == ACL_SUCCESS && active_faults(job->dy.dims, 4, &faults) != 0)
        status = ACLNN_ERR_INNER;
    if (status == ACL_SUCCESS)
        status = launch(job, faults);
    free(job);
    return status;
}
