/*
 * The two phases of aclnnInplacePartialRotaryMul (the forward op), as upstream's code does them
 * (ops-transformer posembedding/inplace_partial_rotary_mul; README.md "The forward op"):
 *
 * - its aclnn layer is a thin wrapper of the generated aclnnInner one: null tensors -> 161001,
 *   $ASCEND_OPP_PATH -> 561107, the executor pointer -> 161001; then, an executor taken (a refusal from
 *   here on leaves it in *executor, busy until aclDestroyAclOpExecutor), the workspace size pointer ->
 *   161001 and nnopbase's dtype and format match against the op definition -> 161002;
 * - an empty xRef (a dim of 0) makes nnopbase skip the tiling and the kernel: success, 0-byte workspace;
 * - a partialSlice of no value -> 561103 (nnopbase), NULL -> the op definition's default {0, 0}; a chip its op
 *   definition lacks (PRMG_EMU_SOC) -> 561003;
 * - on the A2/A3 chips the membase tiling (check_membase_tiling), else the 950 tiling
 *   (InplacePartialRopeRegBaseTilingClass::GetShapeAttrsInfo), whose every failure is 561002, in its order:
 *   mode, 4-D, cos shape == sin shape, slice range, empty slice (a no-op that skips every later check), slice
 *   length == cos D, length parity, D <= 1024, D parity, positive dims, cos/sin broadcast layout;
 * - the op definition declares AutoContiguous on x, cos and sin: a non-contiguous tensor is copied into
 *   the workspace before the kernel and xRef copied back into its view after it, so the first phase
 *   asks for 16 MiB plus room for those copies;
 * - a kernel fault is reported at the next synchronization, not by the launch (prmg_emu_raise_fault).
 */
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "faults.h"
#include "kernel.h"
#include "opapi.h"

#define OP "InplacePartialRotaryMul"
#define MAX_D 1024
#define STAGING_GRANULE 512

static const char *const TENSOR_NAMES[3] = {"xRef", "cos", "sin"};

/* 1 when (x, cos) is a dtype pair of the op definition: equal, or x float16/bfloat16 with cos float32. */
static int is_forward_dtype_pair(int32_t x_type, int32_t cos_type)
{
    return x_type == cos_type || ((x_type == ACL_FLOAT16 || x_type == ACL_BF16) && cos_type == ACL_FLOAT);
}

/* The tiling's mode check (its first): the int64 attribute read as int32 must be an implemented mode
 * (upstream: 1 only; here PRMG_EMU_MODES); *pairing_mode is that mode. */
static int check_mode(int64_t mode, int *pairing_mode, int32_t *mode32)
{
    int implemented = 0;
    int status = read_rotary_mode(OP, mode, mode32, &implemented);
    if (status != ACL_SUCCESS)
        return status;
    if (!implemented) {
        prmg_emu_set_error(OP ": rotary_mode %lld (read as int32: %d) is not supported by this kernel (upstream: "
                           "only interleave mode 1)", (long long)mode, *mode32);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    *pairing_mode = *mode32;
    return ACL_SUCCESS;
}

/* The tiling's CheckShape: x, cos, sin 4-D; cos shape == sin shape (561002). */
static int check_shapes(const aclTensor *const tensors[3])
{
    return check_4d_cos_like_sin(OP, TENSOR_NAMES, tensors);
}

/* The tiling's JudgeSliceInfo (561002): 0 <= start, 0 <= end <= D, start <= end; then *no_op when the
 * slice or cos's last axis is empty (nothing later is checked); else length == cos D and a multiple
 * of 2 (4 in quarter mode). */
static int check_slice(const aclTensor *x, const aclTensor *cos, int32_t mode, int64_t start, int64_t end, int *no_op)
{
    const int64_t d = x->view_dims[3], cos_d = cos->view_dims[3], length = end - start;
    if (start < 0 || end < 0 || length < 0 || end > d) {
        prmg_emu_set_error(OP ": partialSlice [%lld, %lld) is invalid for D = %lld: start and end must be >= 0, "
                           "start <= end and end <= D", (long long)start, (long long)end, (long long)d);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    *no_op = length == 0 || cos_d == 0;
    if (*no_op)
        return ACL_SUCCESS;
    if (cos_d != length) {
        prmg_emu_set_error(OP ": slice length %lld != cos/sin last dim %lld", (long long)length, (long long)cos_d);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    int64_t multiple = mode == 2 ? 4 : 2;
    if (length % multiple != 0) {
        prmg_emu_set_error(OP ": slice length %lld is not a multiple of %lld for rotary_mode %d", (long long)length,
                           (long long)multiple, mode);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    return ACL_SUCCESS;
}

/* The tiling's checks after a non-empty slice (561002): D <= 1024 and a multiple of 2 (4 in quarter
 * mode), every dim of x, cos, sin > 0, each cos/sin B, S, N either 1 or x's (JudgeLayoutByShape
 * accepts all eight such layouts). */
static int check_layout(const aclTensor *const tensors[3], int32_t mode)
{
    const int64_t d = tensors[0]->view_dims[3], multiple = mode == 2 ? 4 : 2;
    if (d > MAX_D) {
        prmg_emu_set_error(OP ": D = %lld exceeds %d", (long long)d, MAX_D);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    if (d % multiple != 0) {
        prmg_emu_set_error(OP ": D = %lld is not a multiple of %lld for rotary_mode %d", (long long)d,
                           (long long)multiple, mode);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    return check_positive_and_layout(OP, TENSOR_NAMES, tensors);
}

/* The whole tiling in upstream's order; *pairing_mode, *start and *end (end = start for a no-op). */
static int check_tiling(const aclTensor *const tensors[3], int64_t rotaryMode, const aclIntArray *partialSlice,
                        fault_set faults, int *pairing_mode, int64_t *start, int64_t *end)
{
    int32_t mode32 = 0;
    int no_op = 0;
    int status = check_mode(rotaryMode, pairing_mode, &mode32);
    if (status == ACL_SUCCESS)
        status = check_shapes(tensors);
    if (status == ACL_SUCCESS) {
        read_slice(partialSlice, tensors[0]->view_dims[3], faults, start, end);
        status = check_slice(tensors[0], tensors[1], mode32, *start, *end, &no_op);
    }
    if (status == ACL_SUCCESS && !no_op)
        status = check_layout(tensors, mode32);
    if (status == ACL_SUCCESS && no_op)
        *end = *start;
    return status;
}

/* The A2/A3 membase tiling (inplace_partial_rotary_mul_tiling.cpp CheckInput), each failure 561002, in its
 * order: x, cos, sin 4-D and cos shape == sin shape; rotary_mode read as int64 and implemented; a slice list
 * of two values (NULL: the default {0, 0}); an empty slice is a no-op before any other rule; L >= 0, D <= 1024,
 * D even, L even, 0 <= start, 0 <= end <= D, L == cos D, cos B == x's B, cos N == 1, cos S 1 or x's S.
 * *pairing_mode, *start and *end (end = start for a no-op). */
static int check_membase_tiling(const aclTensor *const tensors[3], int64_t rotaryMode, const aclIntArray *partialSlice,
                                int *pairing_mode, int64_t *start, int64_t *end)
{
    int status = check_shapes(tensors);
    if (status != ACL_SUCCESS)
        return status;
    unsigned modes;
    if (supported_modes(&modes) != 0)
        return ACLNN_ERR_INNER;
    if (rotaryMode < 0 || rotaryMode > 3 || !((modes >> rotaryMode) & 1u)) {
        prmg_emu_set_error(OP ": on A2/A3, rotary_mode %lld (read as int64) is not supported by this kernel",
                           (long long)rotaryMode);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    *pairing_mode = (int)rotaryMode;
    if (partialSlice != NULL && partialSlice->size != 2) {
        prmg_emu_set_error(OP ": on A2/A3, slice_attr must have exactly 2 elements, got %llu",
                           (unsigned long long)partialSlice->size);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    *start = partialSlice == NULL ? 0 : partialSlice->values[0];
    *end = partialSlice == NULL ? 0 : partialSlice->values[1];
    const int64_t d = tensors[0]->view_dims[3], length = *end - *start;
    const int64_t *x = tensors[0]->view_dims, *cos = tensors[1]->view_dims;
    if (length == 0)
        return ACL_SUCCESS;
    const struct {
        int broken;
        const char *what;
    } RULES[] = {{length < 0, "the slice ends before it starts"}, {d > MAX_D, "D exceeds 1024"},
                 {d % 2 != 0, "D is odd"}, {length % 2 != 0, "the slice length is odd"},
                 {*start < 0 || *end < 0 || *end > d, "the slice is not inside [0, D]"},
                 {length != cos[3], "the slice length differs from cos's last dim"},
                 {cos[0] != x[0], "cos's B is not x's B"}, {cos[2] != 1, "cos's N is not 1"},
                 {cos[1] != 1 && cos[1] != x[1], "cos's S is neither 1 nor x's S"}};
    for (size_t i = 0; i < sizeof RULES / sizeof RULES[0]; i++) {
        if (RULES[i].broken) {
            prmg_emu_set_error(OP ": on A2/A3, %s (slice [%lld, %lld), x D = %lld, cos [%lld, %lld, %lld, %lld])",
                               RULES[i].what, (long long)*start, (long long)*end, (long long)d, (long long)cos[0],
                               (long long)cos[1], (long long)cos[2], (long long)cos[3]);
            return ACLNN_ERR_INNER_TILING_ERROR;
        }
    }
    return ACL_SUCCESS;
}

/* Bytes of a contiguous copy of tensor, rounded up to STAGING_GRANULE; 0 for a contiguous tensor. */
static uint64_t staging_bytes(const aclTensor *tensor)
{
    if (is_contiguous(tensor))
        return 0;
    uint64_t elements = 1;
    for (uint64_t axis = 0; axis < tensor->view_dim_count; axis++)
        elements *= (uint64_t)tensor->view_dims[axis];
    uint64_t bytes = elements * (uint64_t)element_size(tensor->data_type);
    return (bytes + STAGING_GRANULE - 1) / STAGING_GRANULE * STAGING_GRANULE;
}

EMU_API int32_t aclnnInplacePartialRotaryMulGetWorkspaceSize(aclTensor *xRef, const aclTensor *cos,
                                                             const aclTensor *sin, int64_t rotaryMode,
                                                             const aclIntArray *partialSlice, uint64_t *workspaceSize,
                                                             aclOpExecutor **executorOut)
{
    static const op_definition forward = {OP, OP_FORWARD, TENSOR_NAMES, is_forward_dtype_pair,
                                           "same dtype, or xRef float16/bfloat16 with cos/sin float32"};
    const aclTensor *const tensors[3] = {xRef, cos, sin};
    aclOpExecutor *job;
    fault_set faults = 0;
    int status = begin_first_phase(&forward, tensors, partialSlice, workspaceSize, executorOut, &job, &faults);
    if (status != ACL_SUCCESS || job == NULL)
        return status;
    int pairing_mode = 1;
    int64_t start = 0, end = 0;
    const char *chip;
    if (emulated_soc(&chip) == SOC_MEMBASE) {
        status = check_membase_tiling(tensors, rotaryMode, partialSlice, &pairing_mode, &start, &end);
        if (status != ACL_SUCCESS && has_fault(faults, FAULT_FWD_MEMBASE_LATE)) {
            record_faults(FAULT_BIT(FAULT_FWD_MEMBASE_LATE));
            fill_executor(job, tensors, pairing_mode, 0, 0, KERNEL_WORKSPACE_SIZE);
            job->deferred_status = status;
            *workspaceSize = KERNEL_WORKSPACE_SIZE;
            return ACL_SUCCESS;
        }
    } else {
        status = check_tiling(tensors, rotaryMode, partialSlice, faults, &pairing_mode, &start, &end);
    }
    if (status != ACL_SUCCESS)
        return status;
    uint64_t size = KERNEL_WORKSPACE_SIZE, staging[3];
    for (int t = 0; t < 3; t++) {
        staging[t] = staging_bytes(tensors[t]) ? size : 0;
        size += staging_bytes(tensors[t]);
    }
    fill_executor(job, tensors, pairing_mode, start, end, size);
    for (int t = 0; t < 3; t++)
        job->operand[t].staging = staging[t];
    *workspaceSize = size;
    return ACL_SUCCESS;
}

/* The storage a strided view reaches: *lowest, the element offset (from the view's address, its storage
 * offset applied) of its lowest element, and the count of elements from there to its highest, inclusive. */
static void view_span(const op_operand *operand, int64_t *lowest, int64_t *count)
{
    int64_t low = 0, high = 0;
    for (int axis = 0; axis < 4; axis++) {
        int64_t reach = (operand->tensor.dims[axis] - 1) * operand->strides[axis];
        if (reach < 0)
            low += reach;
        else
            high += reach;
    }
    *lowest = low;
    *count = high - low + 1;
}

/* Copies a strided view to or from its contiguous copy `staged` (C order), element by element:
 * `view` is the host address of the view's lowest element (view_span). `once` (the fwd_expand_once fault) copies
 * in only index 0 of each stride-0 axis of length > 1 (an expanded view's storage row, copied once), the rest of
 * `staged` left as the workspace holds it. */
static void copy_view(const op_operand *operand, unsigned char *view, int64_t lowest, unsigned char *staged,
                      int to_staged, int once)
{
    const kernel_tensor *tensor = &operand->tensor;
    const size_t size = (size_t)element_size(tensor->data_type);
    int64_t linear = 0;
    for (int64_t i0 = 0; i0 < tensor->dims[0]; i0++)
        for (int64_t i1 = 0; i1 < tensor->dims[1]; i1++)
            for (int64_t i2 = 0; i2 < tensor->dims[2]; i2++)
                for (int64_t i3 = 0; i3 < tensor->dims[3]; i3++, linear++) {
                    const int64_t index[4] = {i0, i1, i2, i3};
                    int repeat = 0;
                    for (int axis = 0; axis < 4; axis++)
                        repeat |= once && operand->strides[axis] == 0 && index[axis] > 0;
                    if (repeat)
                        continue;
                    int64_t element = i0 * operand->strides[0] + i1 * operand->strides[1]
                                      + i2 * operand->strides[2] + i3 * operand->strides[3] - lowest;
                    unsigned char *at = view + element * (int64_t)size, *copy = staged + linear * (int64_t)size;
                    memcpy(to_staged ? copy : at, to_staged ? at : copy, size);
                }
}

/* Makes operand t of job readable by the kernel: a contiguous tensor is mapped in place; a
 * non-contiguous one is mapped over its view's span and copied into its staging area of the
 * workspace (AutoContiguous), *view / *lowest then locating the view for the copy back. 1; or 0 after
 * raising an asynchronous AI Core exception when the data is not inside one device allocation. */
static int stage_in(aclOpExecutor *job, int t, unsigned char *workspace_host, unsigned char **view, int64_t *lowest,
                    int64_t extra, int once)
{
    op_operand *operand = &job->operand[t];
    if (operand->contiguous)
        return map_tensor(OP, &operand->tensor, TENSOR_NAMES[t], element_count(&operand->tensor) + extra);
    int64_t count;
    view_span(operand, lowest, &count);
    const int64_t size = element_size(operand->tensor.data_type);
    void *device = (unsigned char *)operand->tensor.host + *lowest * size;
    if (prmg_emu_device_range(device, (size_t)(count * size), (void **)view) != 0) {
        prmg_emu_raise_fault(ACL_ERROR_RT_AICORE_EXCEPTION, OP ": AI core exception: %s view [%p, +%lld bytes) is "
                             "not inside one device allocation", TENSOR_NAMES[t], device, (long long)(count * size));
        return 0;
    }
    operand->tensor.host = workspace_host + operand->staging;
    copy_view(operand, *view, *lowest, operand->tensor.host, 1, once);
    return 1;
}

/* The fwd_gap_write fault: after the copy back, every element of x's storage span that its view does not reach
 * (the gaps between its rows) is zeroed, as a copy back of whole padded rows would. */
static void zero_gaps(const op_operand *operand, unsigned char *view, int64_t lowest)
{
    int64_t ignored, count;
    view_span(operand, &ignored, &count);
    const size_t size = (size_t)element_size(operand->tensor.data_type);
    unsigned char *reached = calloc((size_t)count, 1);
    if (reached == NULL)
        return;
    const int64_t *dims = operand->tensor.dims, *strides = operand->strides;
    for (int64_t i0 = 0; i0 < dims[0]; i0++)
        for (int64_t i1 = 0; i1 < dims[1]; i1++)
            for (int64_t i2 = 0; i2 < dims[2]; i2++)
                for (int64_t i3 = 0; i3 < dims[3]; i3++)
                    reached[i0 * strides[0] + i1 * strides[1] + i2 * strides[2] + i3 * strides[3] - lowest] = 1;
    for (int64_t element = 0; element < count; element++)
        if (!reached[element])
            memset(view + element * (int64_t)size, 0, size);
    free(reached);
}

/* The fwd_staged_offset fault: a non-contiguous operand's view is located from its storage's start, its storage
 * offset dropped, so that AutoContiguous copies it in (and x back) from there; a contiguous operand keeps its offset
 * (opbase's GetData applies it), as a layer applying the offset on the contiguous path only would. */
static void drop_staged_offsets(aclOpExecutor *job)
{
    for (int t = 0; t < 3; t++)
        if (!job->operand[t].contiguous)
            job->operand[t].tensor.host = (unsigned char *)job->operand[t].tensor.host
                                          - job->operand[t].offset * element_size(job->operand[t].tensor.data_type);
}

/* The fwd_dense_in_place fault: a non-contiguous operand whose view is dense (its span holds exactly its elements,
 * none repeated: a permuted view such as q.transpose(1, 2)) is mapped in place from its lowest element and read as
 * contiguous, as a layer taking "non-overlapping and dense" (torch's is_non_overlapping_and_dense) for
 * contiguous would: its elements are read, and x written back, in storage order, not in the view's. */
static void map_dense_in_place(op_operand *operand)
{
    int64_t lowest, count;
    view_span(operand, &lowest, &count);
    for (int axis = 0; axis < 4; axis++)
        if (operand->tensor.dims[axis] > 1 && operand->strides[axis] == 0)
            return;
    if (count != element_count(&operand->tensor))
        return;
    operand->contiguous = 1;
    operand->tensor.host = (unsigned char *)operand->tensor.host + lowest * element_size(operand->tensor.data_type);
}

/* The fwd_membase_repeat_u8 fault's first wrong head of each row of x, or -1 when it does not act. On an A2/A3 chip
 * the membase tiling sends a decode call (x and cos/sin of one dtype, cos [B, 1, 1, L], x's S or N 1, the slice's L,
 * not x's D, at most 64 and a whole number of 32-byte blocks: CalTilingData's xdim3_ is end - start; the rows' S*N
 * heads and their tables inside MEMBASE_UB_BYTES: ubFactor > 0)
 * to its kernel InplacePartialRotaryMulABA, which multiplies a row's S*N heads by the broadcast cos, and then by sin,
 * in one vector instruction each whose repeat count is 8 bits (uint8): from 256 heads on it wraps, and the heads from
 * S*N mod 256 on keep no product, as upstream's kernel did before 5889c853 split the repeats into 128s. */
#define MEMBASE_UB_BYTES 196608
static int64_t wrapped_head(const aclOpExecutor *job)
{
    const char *chip;
    const kernel_tensor *x = &job->operand[0].tensor, *cos = &job->operand[1].tensor;
    const int64_t heads = x->dims[1] * x->dims[2], length = job->end - job->start, floats = MEMBASE_UB_BYTES / 4;
    if (emulated_soc(&chip) != SOC_MEMBASE || job->pairing_mode != 1 || x->data_type != cos->data_type
        || cos->dims[1] != 1 || cos->dims[2] != 1 || (x->dims[1] != 1 && x->dims[2] != 1) || length > 64
        || length * element_size(x->data_type) % 32 != 0 || heads < 256
        || (floats - heads * length) / (4 * heads * length + 4 * length) <= 0)
        return -1;
    return heads % 256;
}

/* The fwd_membase_repeat_u8 fault after the kernel: each wrong head's slice (wrapped_head on) of x, whose values
 * before the kernel `before` holds, as the kernel leaves it with neither product: the interleave gather and sign on
 * x alone over the cos product's buffer as zeros (y_2j = -x_2j+1, y_2j+1 = x_2j). */
static void unmultiplied_heads(aclOpExecutor *job, const unsigned char *before, int64_t first)
{
    kernel_tensor *x = &job->operand[0].tensor;
    const int64_t heads = x->dims[1] * x->dims[2], depth = x->dims[3];
    for (int64_t row = 0; row < x->dims[0] * heads; row++)
        for (int64_t lane = job->start; row % heads >= first && lane + 1 < job->end; lane += 2) {
            const int64_t at = row * depth + lane;
            const float even = load_element(x->data_type, before, at), odd = load_element(x->data_type, before, at + 1);
            store_element(x->data_type, x->host, at, -odd);
            store_element(x->data_type, x->host, at + 1, even);
        }
}

/* Runs one consumed executor, `faults` in force (recorded as acting): stage the inputs, run the forward
 * kernel, copy xRef back into its view when it was staged. fwd_noop and an empty slice touch nothing; a
 * kernel fault is raised asynchronously and stops the kernel. fwd_write_past_end inverts the element just past
 * a contiguous x; fwd_gap_write zeroes the gaps of a staged x's storage (zero_gaps); fwd_ignore_offset works from
 * each storage's start (ignore_offsets); fwd_contiguous_tables maps a non-contiguous cos and sin in place, read
 * as contiguous (AutoContiguous skipped for them); fwd_fp16_ilv_half computes a float16 x of mode 3 with mode
 * 1's pairing; fwd_staged_offset copies a non-contiguous tensor in and back from its storage's start
 * (drop_staged_offsets); fwd_dense_in_place reads a dense non-contiguous view in place (map_dense_in_place);
 * fwd_expand_once copies an expanded view's repeated rows in once (copy_view); fwd_tables_one_plan copies a
 * non-contiguous sin along cos's strides when cos is non-contiguous too (one copy plan for both tables);
 * fwd_membase_repeat_u8 leaves the heads past an 8-bit repeat count unmultiplied (wrapped_head). */
static void launch(aclOpExecutor *job, fault_set faults, unsigned char *workspace_host)
{
    record_faults(faults);
    if (has_fault(faults, FAULT_FWD_NOOP) || job->end == job->start)
        return;
    if (has_fault(faults, FAULT_FWD_IGNORE_OFFSET))
        ignore_offsets(job, 0);
    if (has_fault(faults, FAULT_OFFSET_BLOCK_ALIGNED))
        align_offsets(job);
    if (has_fault(faults, FAULT_OFFSET_COS_SIZE))
        offsets_in_cos_size(job);
    if (has_fault(faults, FAULT_FWD_CONTIGUOUS_TABLES))
        job->operand[1].contiguous = job->operand[2].contiguous = 1;
    if (has_fault(faults, FAULT_FWD_STAGED_OFFSET))
        drop_staged_offsets(job);
    if (has_fault(faults, FAULT_FWD_TABLES_ONE_PLAN) && !job->operand[1].contiguous && !job->operand[2].contiguous)
        memcpy(job->operand[2].strides, job->operand[1].strides, sizeof job->operand[2].strides);
    for (int t = 0; t < 3 && has_fault(faults, FAULT_FWD_DENSE_IN_PLACE); t++)
        if (!job->operand[t].contiguous)
            map_dense_in_place(&job->operand[t]);
    unsigned char *views[3] = {NULL, NULL, NULL};
    int64_t lowest[3] = {0, 0, 0};
    const int past_end = has_fault(faults, FAULT_FWD_WRITE_PAST_END) && job->operand[0].contiguous;
    for (int t = 0; t < 3; t++)
        if (!stage_in(job, t, workspace_host, &views[t], &lowest[t], t == 0 && past_end,
                      has_fault(faults, FAULT_FWD_EXPAND_ONCE)))
            return;
    /* fwd_fp16_ilv_half: the float16 build of interleave-half writes y in interleave's layout */
    const int pairing = has_fault(faults, FAULT_FWD_FP16_ILV_HALF) && job->pairing_mode == 3
                        && job->operand[0].tensor.data_type == ACL_FLOAT16 ? 1 : job->pairing_mode;
    kernel_job work = {1, pairing, job->start, job->end, faults, (const float *)workspace_host, 0};
    const int64_t wrapped = has_fault(faults, FAULT_FWD_MEMBASE_REPEAT_U8) ? wrapped_head(job) : -1;
    const kernel_tensor *x = &job->operand[0].tensor;
    const size_t x_bytes = (size_t)(element_count(x) * element_size(x->data_type));
    unsigned char *before = wrapped >= 0 ? malloc(x_bytes) : NULL;
    if (before != NULL)
        memcpy(before, x->host, x_bytes);
    rotary_kernel(&job->operand[0].tensor, &job->operand[1].tensor, &job->operand[2].tensor, &work);
    if (before != NULL)
        unmultiplied_heads(job, before, wrapped);
    free(before);
    if (past_end)
        invert_element(&job->operand[0].tensor, element_count(&job->operand[0].tensor));
    if (!job->operand[0].contiguous) {
        copy_view(&job->operand[0], views[0], lowest[0], job->operand[0].tensor.host, 0, 0);
        if (has_fault(faults, FAULT_FWD_GAP_WRITE))
            zero_gaps(&job->operand[0], views[0], lowest[0]);
    }
}

EMU_API int32_t aclnnInplacePartialRotaryMul(void *workspace, uint64_t workspaceSize, aclOpExecutor *job,
                                             void *stream)
{
    void *workspace_host;
    fault_set faults = 0;
    int status = begin_launch(OP, OP_FORWARD, &job, workspace, workspaceSize, stream, &workspace_host, &faults);
    if (status == ACL_SUCCESS && job->deferred_status != ACL_SUCCESS) {
        prmg_emu_set_error(OP ": on A2/A3, the tiling refused the call at the launch (fwd_membase_late: the refusal "
                           "GetWorkspaceSize owed)");
        status = job->deferred_status;
    }
    if (status == ACL_SUCCESS && !job->empty_output)
        launch(job, faults, workspace_host);
    free(job);
    return status;
}
