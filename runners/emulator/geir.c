/*
 * libprmg_geir.so of the host emulator: the twin of prmg's graph-mode shim (runners/geir/prmg_geir.h), GE's
 * graph mode played over the emulator's own stack, so that prmg's graph-mode runner runs everywhere.
 *
 * What GE would do with one case's graph, in its order, with GE's status codes:
 *   build    the operator's IR (as upstream's op_graph proto header registers it): an unknown op type, or an
 *            attribute or input name the IR does not declare -> GRAPH_INVALID_IR_DEF;
 *   compile  a required input left unlinked (inner ACL_ERROR_GE_PARAM_INVALID); an input dtype outside the IR's
 *            TensorType, sin's dtype != cos's, a dtype pair the op definition lacks (inner
 *            ACL_ERROR_GE_DATATYPE_INVALID); a format outside the ND class (inner ACL_ERROR_GE_FORMAT_INVALID);
 *            InferShape (the ref output has dy's shape and dtype); then the tiling of the static shape,
 *            which is the emulator's own first phase (aclnn...GetWorkspaceSize): its refusal (inner ge::FAILED)
 *            with the tiling's message; Session::CompileGraph returns each as ge::PARAM_INVALID, the inner
 *            status in its message (compile_refused);
 *   run      the inputs copied to device memory, the emulator's own kernel launched (the same kernel as the
 *            aclnn path), the stream synchronized (a kernel fault's status as it is), the ref output copied
 *            back into the caller's buffer; the caller's host inputs are never written.
 * An attribute the graph does not set takes the IR's default (rotary_mode 0, partial_slice {0, 0}): a partial_slice
 * of NULL (prmg's null partialSlice) is left unset; a list of any other length is the attribute as written (GE takes
 * a list of none as set, not as its default), which no nnopbase checks: the tiling reads a list of none itself (the
 * forward's as [0, D)); a list of fewer than two values the 950's tilings read on past its end (GetData()[0] and [1]),
 * into what GE's ComputeNodeInfo holds after the attributes, partial_slice the last: the ref output's
 * AnchorInstanceInfo {instance_start 0, instantiation_num 1, zeroed reserved bytes}, read as int64 1 << 32 then 0
 * (PAST_THE_LIST; hicann/ge 56f8e1bb9: attrs_to_buffer.h, bg_kernel_context_extend.cc, compute_node_info.h), so the
 * grad's tiling sees [2^32, 0) for a list of none and [v, 2^32) for {v}, which its slice range refuses; nnopbase lays
 * the aclnn path's attributes out alike, so {v} is passed on as written and read as the aclnn path reads it; the A2/A3
 * membase tiling refuses a list of one value for its length, in a graph too.
 *
 * Its faults (faults.h, GEIR_FAULTS) are graph-mode bugs the aclnn path cannot show: geir_slice_dropped (the
 * graph loses partial_slice: the IR default {0, 0} is used), geir_mode_dropped (rotary_mode lost: the default
 * 0), geir_input_written (the ref output is also written back into the caller's host dy), geir_output_overrun (the
 * ref output's copy into the caller's buffer runs 32 bytes past its end), geir_ref_not_aliased (GE gives the ref
 * output a buffer of its own instead of dy's: the output holds only what the kernel stores, the slice's lanes, over a
 * fresh buffer's zeros; a no-op stores nothing, so its output is all zeros where dy was meant),
 * geir_empty_list_unset (a partial_slice of no value taken as unset: the IR default {0, 0}),
 * geir_refusal_at_run (the tiling's refusal reported by RunGraph instead of CompileGraph: the same status from
 * another phase),
 * geir_fwd_sin_negated (the forward's graph feeds its kernel sin with every sign bit flipped, a Neg fused onto the
 * wrong input: the forward only, the grad's graphs untouched). They are recorded
 * with the kernel's faults (prmg_emu_applied_faults) after the first phase starts the record.
 * The kernel's own faults act as on the aclnn path: leak_device_memory takes its bytes of the runtime's device
 * memory, which aclrtGetMemInfo reports to prmg's graph-mode session as to its aclnn one.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu.h"
#include "faults.h"
#include "prmg_geir.h"

/* GE's status codes (ge/ge_error_codes.h, graph/error_codes.h, ge_api_error_codes.h). */
#define GE_SUCCESS 0u
#define GE_FAILED 0xFFFFFFFFu
#define GRAPH_INVALID_IR_DEF 50331646u
#define ACL_ERROR_GE_PARAM_INVALID 145000u
#define ACL_ERROR_GE_EXEC_NOT_INIT 145001u
#define ACL_ERROR_GE_FORMAT_INVALID 145020u
#define ACL_ERROR_GE_DATATYPE_INVALID 145022u
/* ge::PARAM_INVALID: what Session::CompileGraph returns for any failure of the compile (compile_refused) */
#define GE_PARAM_INVALID 1343225857u
#define ACL_ERROR_GE_MEMORY_ALLOCATION 245000u

/* geir_output_overrun: the bytes written past the caller's output buffer (a copy sized by a 32-byte device block) */
#define OVERRUN_BYTES 32

#define MEMCPY_HOST_TO_DEVICE 1
#define MEMCPY_DEVICE_TO_HOST 2

/* The ACL/aclnn functions the twin calls (acl-abi.md), exported by the emulator's other libraries. */
int aclInit(const char *configPath);
const char *aclGetRecentErrMsg(void);
int aclrtSetDevice(int32_t deviceId);
int aclrtResetDevice(int32_t deviceId);
int aclrtCreateStream(void **stream);
int aclrtDestroyStream(void *stream);
int aclrtSynchronizeStream(void *stream);
int aclrtMalloc(void **devPtr, size_t size, int policy);
int aclrtFree(void *devPtr);
int aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, int kind);
aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, int32_t dataType, const int64_t *stride,
                           int64_t offset, int32_t format, const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData);
int32_t aclDestroyTensor(const aclTensor *tensor);
aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);
int32_t aclDestroyIntArray(const aclIntArray *array);
int32_t aclDestroyAclOpExecutor(aclOpExecutor *executor);
typedef int32_t (*first_phase)(aclTensor *, const aclTensor *, const aclTensor *, int64_t, const aclIntArray *,
                               uint64_t *, aclOpExecutor **);
typedef int32_t (*second_phase)(void *, uint64_t, aclOpExecutor *, void *);
int32_t aclnnInplacePartialRotaryMulGradGetWorkspaceSize(aclTensor *, const aclTensor *, const aclTensor *, int64_t,
                                                          const aclIntArray *, uint64_t *, aclOpExecutor **);
int32_t aclnnInplacePartialRotaryMulGrad(void *, uint64_t, aclOpExecutor *, void *);
int32_t aclnnInplacePartialRotaryMulGetWorkspaceSize(aclTensor *, const aclTensor *, const aclTensor *, int64_t,
                                                     const aclIntArray *, uint64_t *, aclOpExecutor **);
int32_t aclnnInplacePartialRotaryMul(void *, uint64_t, aclOpExecutor *, void *);

/* The IRs the twin knows: upstream's REG_OP of both operators (inputs, ref output, attributes and their
 * defaults) and the emulator's two phases that run them. */
typedef struct {
    const char *type;
    const char *inputs[PRMG_GEIR_INPUTS];
    const char *output;
    first_phase prepare;
    second_phase launch;
    int whole_when_empty;     /* its tiling reads a partial_slice of no value as [0, D) (else past the list's end) */
} ir_def;

static const ir_def IRS[] = {
    {"InplacePartialRotaryMulGrad", {"dy", "cos", "sin"}, "dy", aclnnInplacePartialRotaryMulGradGetWorkspaceSize,
     aclnnInplacePartialRotaryMulGrad, 0},
    {"InplacePartialRotaryMul", {"x", "cos", "sin"}, "x", aclnnInplacePartialRotaryMulGetWorkspaceSize,
     aclnnInplacePartialRotaryMul, 1},
};
static const char *const MODE_ATTR = "rotary_mode";        /* .ATTR(rotary_mode, Int, 0) */
static const char *const SLICE_ATTR = "partial_slice";     /* .ATTR(partial_slice, ListInt, {0, 0}) */
static const int64_t DEFAULT_MODE = 0;
static const int64_t DEFAULT_SLICE[2] = {0, 0};

static int session_device = -1;
static void *session_stream;

/* ---- reports ---- */

static void clear(prmg_geir_report *report)
{
    memset(report, 0, sizeof *report);
}

static uint32_t record(prmg_geir_report *report, uint32_t status, int32_t phase, const char *call,
                       const char *format, ...) __attribute__((format(printf, 5, 6)));

static uint32_t record(prmg_geir_report *report, uint32_t status, int32_t phase, const char *call,
                       const char *format, ...)
{
    report->status = status;
    report->phase = phase;
    snprintf(report->call, sizeof report->call, "%s", call);
    va_list args;
    va_start(args, format);
    vsnprintf(report->message, sizeof report->message, format, args);
    va_end(args);
    return status;
}

/* The runtime's message of the last failure, "" when none. */
static const char *runtime_message(void)
{
    const char *message = aclGetRecentErrMsg();
    return message != NULL ? message : "";
}

static double milliseconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) * 1e3 + (double)(now.tv_nsec - start->tv_nsec) / 1e6;
}

/* ---- session ---- */

PRMG_GEIR_API uint32_t prmg_geir_abi_version(void)
{
    return PRMG_GEIR_ABI_VERSION;
}

/* ACL is initialised once for the process (a second aclInit, 100002, is fine) and never finalised here: the
 * process's aclnn sessions share it (prmg's binding finalises what it initialised itself). The shim's life
 * otherwise: a device the runtime refuses, or a stream (GE's session) that cannot be made, leaves the device reset,
 * so a later call starts afresh; no exit handler, as the emulated device ends with the process. */
PRMG_GEIR_API uint32_t prmg_geir_initialize(int32_t device_id, prmg_geir_report *report)
{
    clear(report);
    if (session_device >= 0)
        return device_id == session_device ? GE_SUCCESS
                                           : record(report, ACL_ERROR_GE_PARAM_INVALID, PRMG_GEIR_PHASE_INIT,
                                                    "ge::GEInitialize", "GE is initialised for device %d in this "
                                                    "process, not %d", session_device, device_id);
    int status = aclInit(NULL);
    if (status != ACL_SUCCESS && status != ACL_ERROR_REPEAT_INITIALIZE)
        return record(report, (uint32_t)status, PRMG_GEIR_PHASE_INIT, "ge::GEInitialize", "%s", runtime_message());
    status = aclrtSetDevice(device_id);
    if (status == ACL_SUCCESS) {
        status = aclrtCreateStream(&session_stream);
        if (status != ACL_SUCCESS)
            aclrtResetDevice(device_id);
    }
    if (status != ACL_SUCCESS)
        return record(report, (uint32_t)status, PRMG_GEIR_PHASE_INIT, "ge::GEInitialize", "ge.exec.deviceId %d: %s",
                      device_id, runtime_message());
    session_device = device_id;
    return GE_SUCCESS;
}

PRMG_GEIR_API uint32_t prmg_geir_finalize(prmg_geir_report *report)
{
    clear(report);
    if (session_device < 0)
        return GE_SUCCESS;
    aclrtDestroyStream(session_stream);
    aclrtResetDevice(session_device);
    session_stream = NULL;
    session_device = -1;
    return GE_SUCCESS;
}

/* ---- build: the IR ---- */

static const ir_def *find_ir(const char *type)
{
    for (size_t i = 0; i < sizeof IRS / sizeof IRS[0]; i++)
        if (type != NULL && strcmp(IRS[i].type, type) == 0)
            return &IRS[i];
    return NULL;
}

/* GRAPH_INVALID_IR_DEF unless the IR of `call` exists and declares every name the call uses. */
static uint32_t check_ir(const prmg_geir_call *call, const ir_def *ir, prmg_geir_report *report)
{
    if (ir == NULL)
        return record(report, GRAPH_INVALID_IR_DEF, PRMG_GEIR_PHASE_BUILD, "ge::OperatorFactory::IsExistOp",
                      "no IR is registered for op type %s (its op_proto library is not under $ASCEND_OPP_PATH)",
                      call->op_type ? call->op_type : "(null)");
    /* what the shim sets each as (int64_t, a list of int64_t), in GE's type names, against the IR's declared types */
    const char *const attributes[2] = {call->mode_attr, call->slice_attr};
    const char *const declared[2] = {MODE_ATTR, SLICE_ATTR}, *const types[2] = {"VT_INT", "VT_LIST_INT"};
    for (int i = 0; i < 2; i++) {
        int at = -1;
        for (int j = 0; j < 2 && attributes[i] != NULL; j++)
            at = strcmp(attributes[i], declared[j]) == 0 ? j : at;
        if (at < 0)
            return record(report, GRAPH_INVALID_IR_DEF, PRMG_GEIR_PHASE_BUILD,
                          "ge::Operator::GetAllIrAttrNamesAndTypes",
                          "the IR of %s declares no attribute %s (it declares %s:VT_INT, %s:VT_LIST_INT): set by that "
                          "name, GE would add it as an unknown attribute and the operator would use its IR default",
                          ir->type, attributes[i] ? attributes[i] : "(null)", MODE_ATTR, SLICE_ATTR);
        if (at != i)
            return record(report, GRAPH_INVALID_IR_DEF, PRMG_GEIR_PHASE_BUILD,
                          "ge::Operator::GetAllIrAttrNamesAndTypes",
                          "the IR of %s declares attribute %s as %s, not %s: set as %s, it would replace the IR's "
                          "value with one of another type, which the tiling reads as its declared type", ir->type,
                          attributes[i], types[at], types[i], types[i]);
    }
    for (int t = 0; t < PRMG_GEIR_INPUTS; t++) {
        if (call->input_names[t] == NULL || strcmp(call->input_names[t], ir->inputs[t]) != 0)
            return record(report, GRAPH_INVALID_IR_DEF, PRMG_GEIR_PHASE_BUILD, "ge::Operator::SetInput",
                          "input %d of %s is %s in its IR, not %s", t, ir->type, ir->inputs[t],
                          call->input_names[t] ? call->input_names[t] : "(null)");
    }
    if (call->output_name == NULL || strcmp(call->output_name, ir->output) != 0)
        return record(report, GRAPH_INVALID_IR_DEF, PRMG_GEIR_PHASE_BUILD, "ge::Graph::SetOutputs",
                      "the output of %s is %s in its IR, not %s", ir->type, ir->output,
                      call->output_name ? call->output_name : "(null)");
    return GE_SUCCESS;
}

/* ---- compile: graph checks, op proto, InferShape, the tiling ---- */

static int ir_dtype(int32_t data_type)
{
    return data_type == ACL_FLOAT || data_type == ACL_FLOAT16 || data_type == ACL_BF16;
}

static int nd_class(int32_t format)
{
    return format == ACL_FORMAT_NCHW || format == ACL_FORMAT_NHWC || format == ACL_FORMAT_ND;
}

/* What one graph holds on the device: its three tensors, the slice, the executor of its first phase and the
 * workspace; released by release(). */
typedef struct {
    void *device[PRMG_GEIR_INPUTS];
    aclTensor *tensor[PRMG_GEIR_INPUTS];
    aclIntArray *slice;
    aclOpExecutor *executor;
    void *workspace;
    uint64_t workspace_size;
    int tiled;                       /* the tiling ran with the graph's attributes */
} graph_state;

static void release(graph_state *state)
{
    if (state->executor != NULL)
        aclDestroyAclOpExecutor(state->executor);
    for (int t = 0; t < PRMG_GEIR_INPUTS; t++) {
        if (state->tensor[t] != NULL)
            aclDestroyTensor(state->tensor[t]);
        if (state->device[t] != NULL)
            aclrtFree(state->device[t]);
    }
    if (state->slice != NULL)
        aclDestroyIntArray(state->slice);
    if (state->workspace != NULL)
        aclrtFree(state->workspace);
    memset(state, 0, sizeof *state);
}

/* Device memory and a descriptor (C-contiguous, `format`) for each input of `call`. */
static uint32_t describe_inputs(const prmg_geir_call *call, int32_t format, graph_state *state,
                                prmg_geir_report *report)
{
    for (int t = 0; t < PRMG_GEIR_INPUTS; t++) {
        const prmg_geir_tensor *input = &call->inputs[t];
        if (input->dim_count > PRMG_GEIR_MAX_DIMS)
            return record(report, ACL_ERROR_GE_PARAM_INVALID, PRMG_GEIR_PHASE_COMPILE, "ge::Session::CompileGraph",
                          "%s has %u dims", call->input_names[t], input->dim_count);
        int64_t strides[PRMG_GEIR_MAX_DIMS], step = 1;
        for (uint32_t axis = input->dim_count; axis-- > 0;) {
            strides[axis] = step;
            step *= input->dims[axis] > 0 ? input->dims[axis] : 1;
        }
        size_t bytes = input->bytes > 0 ? (size_t)input->bytes : 1;
        int status = aclrtMalloc(&state->device[t], bytes, 0);
        if (status != ACL_SUCCESS) {
            state->device[t] = NULL;
            return record(report, ACL_ERROR_GE_MEMORY_ALLOCATION, PRMG_GEIR_PHASE_COMPILE, "ge::Session::CompileGraph",
                          "%s: %s", call->input_names[t], runtime_message());
        }
        state->tensor[t] = aclCreateTensor(input->dims, input->dim_count, input->data_type, strides, 0, format,
                                           input->dims, input->dim_count, state->device[t]);
        if (state->tensor[t] == NULL)
            return record(report, GE_FAILED, PRMG_GEIR_PHASE_COMPILE, "ge::Session::CompileGraph", "%s: %s",
                          call->input_names[t], runtime_message());
    }
    return GE_SUCCESS;
}

/* The first phase of the case with the inputs described in `format`: its status (the executor, when one was
 * taken, kept in the state). */
static int32_t prepare(const ir_def *ir, int64_t mode, graph_state *state)
{
    return ir->prepare(state->tensor[0], state->tensor[1], state->tensor[2], mode, state->slice,
                       &state->workspace_size, &state->executor);
}

/* The op definition's dtype pairs, as the kernel selection of a graph whose format is outside the ND class
 * still checks them first: 1 when the first phase, with the inputs described as ND, refuses the dtypes. */
static int dtypes_refused_as_nd(const prmg_geir_call *call, const ir_def *ir, int64_t mode)
{
    graph_state probe = {0};
    int refused = 0;
    probe.slice = aclCreateIntArray(DEFAULT_SLICE, 2);
    if (describe_inputs(call, ACL_FORMAT_ND, &probe, &(prmg_geir_report){0}) == GE_SUCCESS)
        refused = prepare(ir, mode, &probe) == ACLNN_ERR_PARAM_INVALID;
    release(&probe);
    return refused;
}

/* The checks of compiling the graph of `call`, in GE's order, then its tiling (the first phase, whose executor
 * stays in the state). */
static uint32_t compile(const prmg_geir_call *call, const ir_def *ir, int64_t mode, const int64_t *slice,
                        uint64_t slice_count, graph_state *state, prmg_geir_report *report)
{
    const char *step = "ge::Session::CompileGraph";
    for (int t = 0; t < PRMG_GEIR_INPUTS; t++) {
        if (call->inputs[t].data == NULL)
            return record(report, ACL_ERROR_GE_PARAM_INVALID, PRMG_GEIR_PHASE_COMPILE, step,
                          "[Verify][Graph] input %s of node prmg_case (%s) is not linked: it is a required input",
                          ir->inputs[t], ir->type);
    }
    for (int t = 0; t < PRMG_GEIR_INPUTS; t++) {
        if (!ir_dtype(call->inputs[t].data_type))
            return record(report, ACL_ERROR_GE_DATATYPE_INVALID, PRMG_GEIR_PHASE_COMPILE, step,
                          "[Verify][OpProto] input %s of %s has dtype %d, outside its TensorType (DT_FLOAT 0, "
                          "DT_FLOAT16 1, DT_BF16 27)", ir->inputs[t], ir->type, call->inputs[t].data_type);
    }
    if (call->inputs[2].data_type != call->inputs[1].data_type)
        return record(report, ACL_ERROR_GE_DATATYPE_INVALID, PRMG_GEIR_PHASE_COMPILE, step,
                      "[Select][Kernel] %s: sin dtype %d differs from cos dtype %d: no kernel of the op definition "
                      "matches", ir->type, call->inputs[2].data_type, call->inputs[1].data_type);
    int32_t format = call->inputs[0].format;
    if (!nd_class(format) && dtypes_refused_as_nd(call, ir, mode))
        return record(report, ACL_ERROR_GE_DATATYPE_INVALID, PRMG_GEIR_PHASE_COMPILE, step,
                      "[Select][Kernel] %s: no kernel of the op definition takes dtypes (%d, %d)", ir->type,
                      call->inputs[0].data_type, call->inputs[1].data_type);
    if (!nd_class(format))
        return record(report, ACL_ERROR_GE_FORMAT_INVALID, PRMG_GEIR_PHASE_COMPILE, step,
                      "[Select][Kernel] %s: format %d is outside the op definition's ND (NCHW 0, NHWC 1, ND 2 are "
                      "taken as ND)", ir->type, format);
    state->slice = aclCreateIntArray(slice, slice_count);
    uint32_t status = describe_inputs(call, format, state, report);
    if (status != GE_SUCCESS)
        return status;
    int32_t tiling = prepare(ir, mode, state);
    state->tiled = 1;
    if (tiling == ACLNN_ERR_PARAM_INVALID)
        return record(report, ACL_ERROR_GE_DATATYPE_INVALID, PRMG_GEIR_PHASE_COMPILE, step,
                      "[Select][Kernel] %s: no kernel of the op definition takes these inputs: %s", ir->type,
                      runtime_message());
    if (tiling != ACL_SUCCESS)
        return record(report, GE_FAILED, PRMG_GEIR_PHASE_COMPILE, step, "[Tiling] %s failed (%d): %s", ir->type,
                      tiling, runtime_message());
    return GE_SUCCESS;
}

/* What ge::Session::CompileGraph hands back for the compile's refusal recorded in `report`: GE checks its inner
 * session's status with GE_ASSERT_SUCCESS, whose `return ::ErrorResult();` converts to ge::PARAM_INVALID whatever the
 * inner status was (metadef pkg_inc/common/checker.h; hicann/ge api/session/client/ge_api.cc at ffdcbc9f7, 56f8e1bb9
 * and its 8.5.0 and 9.0.0 branches); its message keeps the inner status, as GE's does. */
static uint32_t compile_refused(prmg_geir_report *report)
{
    char inner[sizeof report->message];
    snprintf(inner, sizeof inner, "%s", report->message);
    return record(report, GE_PARAM_INVALID, report->phase, report->call,
                  "[Compile][Graph]Compile graph failed, error code:%u: %s", report->status, inner);
}

/* ---- run ---- */

/* geir_ref_not_aliased: the ref output in a buffer of its own, not dy's: the first `copied` bytes of the output keep
 * what the kernel stores, the lanes [start, end) of each row of dy's last axis, and hold zeros (a fresh buffer)
 * elsewhere; a no-op (an empty slice, or cos or sin without elements) stores nothing. */
static void unalias_output(const prmg_geir_call *call, const int64_t *slice, uint64_t slice_count, uint64_t copied)
{
    const prmg_geir_tensor *dy = &call->inputs[0];
    const int64_t lanes = dy->dim_count > 0 ? dy->dims[dy->dim_count - 1] : 0;
    const uint64_t item = dy->data_type == ACL_FLOAT ? 4 : 2, row = (uint64_t)(lanes > 0 ? lanes : 0) * item;
    const int stores = slice_count >= 2 && slice[1] > slice[0] && call->inputs[1].bytes > 0
                       && call->inputs[2].bytes > 0;
    char *output = call->output;
    if (!stores || row == 0) {
        memset(output, 0, copied);
        return;
    }
    const uint64_t first = (uint64_t)slice[0] * item, last = (uint64_t)slice[1] * item;
    for (uint64_t at = 0; at < copied; at += row) {
        uint64_t end = at + row < copied ? at + row : copied;
        memset(output + at, 0, at + first < end ? first : end - at);
        if (at + last < end)
            memset(output + at + last, 0, end - at - last);
    }
}

static uint32_t run_graph(const prmg_geir_call *call, graph_state *state, const ir_def *ir, const int64_t *slice,
                          uint64_t slice_count, fault_set faults, prmg_geir_report *report)
{
    const char *step = "ge::Session::RunGraph";
    for (int t = 0; t < PRMG_GEIR_INPUTS; t++) {
        if (call->inputs[t].bytes > 0
            && aclrtMemcpy(state->device[t], call->inputs[t].bytes, call->inputs[t].data, call->inputs[t].bytes,
                           MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS)
            return record(report, ACL_ERROR_GE_MEMORY_ALLOCATION, PRMG_GEIR_PHASE_RUN, step, "feeding %s: %s",
                          ir->inputs[t], runtime_message());
    }
    unsigned char *sin;
    if (has_fault(faults, FAULT_GEIR_FWD_SIN_NEGATED) && ir->whole_when_empty && call->inputs[2].bytes > 0
        && prmg_emu_device_range(state->device[2], call->inputs[2].bytes, (void **)&sin) == 0) {
        const uint64_t item = call->inputs[2].data_type == ACL_FLOAT ? 4 : 2;
        for (uint64_t at = item - 1; at < call->inputs[2].bytes; at += item)
            sin[at] ^= 0x80;                          /* the sign bit: the element's last byte (little-endian) */
        prmg_emu_record_faults(FAULT_BIT(FAULT_GEIR_FWD_SIN_NEGATED));
    }
    if (state->workspace_size > 0 && aclrtMalloc(&state->workspace, state->workspace_size, 0) != ACL_SUCCESS) {
        state->workspace = NULL;
        return record(report, ACL_ERROR_GE_MEMORY_ALLOCATION, PRMG_GEIR_PHASE_RUN, step, "workspace: %s",
                      runtime_message());
    }
    aclOpExecutor *executor = state->executor;
    state->executor = NULL;                                  /* a launch consumes it */
    int status = ir->launch(state->workspace, state->workspace_size, executor, session_stream);
    if (status == ACL_SUCCESS)
        status = aclrtSynchronizeStream(session_stream);
    if (status != ACL_SUCCESS)
        return record(report, (uint32_t)status, PRMG_GEIR_PHASE_RUN, step, "%s: %s", ir->type, runtime_message());
    /* InferShape: the ref output is dy with dy's shape and dtype */
    const prmg_geir_tensor *dy = &call->inputs[0];
    report->output_data_type = dy->data_type;
    report->output_dim_count = dy->dim_count;
    memcpy(report->output_dims, dy->dims, dy->dim_count * sizeof dy->dims[0]);
    report->output_bytes = dy->bytes;
    uint64_t copied = dy->bytes < call->output_capacity ? dy->bytes : call->output_capacity;
    if (copied > 0 && aclrtMemcpy(call->output, copied, state->device[0], copied, MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS)
        return record(report, ACL_ERROR_GE_MEMORY_ALLOCATION, PRMG_GEIR_PHASE_RUN, step, "fetching %s: %s",
                      ir->output, runtime_message());
    if (has_fault(faults, FAULT_GEIR_REF_NOT_ALIASED) && copied > 0) {
        unalias_output(call, slice, slice_count, copied);
        prmg_emu_record_faults(FAULT_BIT(FAULT_GEIR_REF_NOT_ALIASED));
    }
    if (has_fault(faults, FAULT_GEIR_INPUT_WRITTEN) && copied > 0) {
        memcpy((void *)dy->data, call->output, copied);
        prmg_emu_record_faults(FAULT_BIT(FAULT_GEIR_INPUT_WRITTEN));
    }
    if (has_fault(faults, FAULT_GEIR_OUTPUT_OVERRUN) && call->output != NULL) {
        memset((char *)call->output + copied, 0, OVERRUN_BYTES);      /* prmg's buffer has a guard zone there */
        prmg_emu_record_faults(FAULT_BIT(FAULT_GEIR_OUTPUT_OVERRUN));
    }
    return GE_SUCCESS;
}

PRMG_GEIR_API uint32_t prmg_geir_run(const prmg_geir_call *call, prmg_geir_report *report)
{
    clear(report);
    if (session_device < 0)
        return record(report, ACL_ERROR_GE_EXEC_NOT_INIT, PRMG_GEIR_PHASE_INIT, "prmg_geir_run",
                      "prmg_geir_initialize was not called (or failed) in this process");
    prmg_emu_begin_fault_record();
    const ir_def *ir = find_ir(call->op_type);
    uint32_t status = check_ir(call, ir, report);
    if (status != GE_SUCCESS)
        return status;
    fault_set faults = 0;
    if (prmg_emu_geir_faults(call->inputs[0].dims, call->inputs[0].dim_count, &faults) != 0)
        return record(report, GE_FAILED, PRMG_GEIR_PHASE_BUILD, "prmg_geir_run", "%s", runtime_message());
    /* an attribute the graph left unset (partial_slice NULL) or lost takes its IR default */
    int64_t mode = has_fault(faults, FAULT_GEIR_MODE_DROPPED) ? DEFAULT_MODE : call->rotary_mode;
    const fault_set emptied = call->partial_slice != NULL && call->slice_count == 0
                              ? faults & FAULT_BIT(FAULT_GEIR_EMPTY_LIST_UNSET) : 0;
    const int drop_slice = call->partial_slice == NULL || has_fault(faults, FAULT_GEIR_SLICE_DROPPED) || emptied;
    const int64_t *slice = drop_slice ? DEFAULT_SLICE : call->partial_slice;
    uint64_t slice_count = drop_slice ? 2 : call->slice_count;
    /* the forward's tilings read a partial_slice of no value as [0, D) (GetShapeAttrsInfo, ops-transformer
     * 577814407; the A2/A3 membase tiling too): the kernel then stores all of D */
    const prmg_geir_tensor *in_place = &call->inputs[0];
    const int64_t whole[2] = {0, in_place->dim_count > 0 ? in_place->dims[in_place->dim_count - 1] : 0};
    if (slice_count == 0 && ir->whole_when_empty) {
        slice = whole;
        slice_count = 2;
    }
    /* the grad's list of none: what lies past it (PAST_THE_LIST), which nnopbase's refusal keeps from the aclnn path's
     * tiling; a list of one value goes as written, read past its end by the tiling as on the aclnn path (read_slice),
     * or refused for its length by the A2/A3 membase tiling */
    if (slice_count == 0) {
        slice = PAST_THE_LIST;
        slice_count = 2;
    }
    graph_state state = {0};
    struct timespec began;
    clock_gettime(CLOCK_MONOTONIC, &began);
    status = compile(call, ir, mode, slice, slice_count, &state, report);
    report->compile_ms = milliseconds_since(&began);
    const int tiling_refused = status == GE_FAILED && state.tiled;
    if (status != GE_SUCCESS && report->phase == PRMG_GEIR_PHASE_COMPILE)
        status = compile_refused(report);
    if (tiling_refused && has_fault(faults, FAULT_GEIR_REFUSAL_AT_RUN)) {
        report->phase = PRMG_GEIR_PHASE_RUN;                /* the tiling's refusal, reported by the run */
        snprintf(report->call, sizeof report->call, "%s", "ge::Session::RunGraph");
        prmg_emu_record_faults(FAULT_BIT(FAULT_GEIR_REFUSAL_AT_RUN));
    }
    if (state.tiled)            /* recorded after the first phase started the kernel's record */
        prmg_emu_record_faults((faults & (FAULT_BIT(FAULT_GEIR_SLICE_DROPPED) | FAULT_BIT(FAULT_GEIR_MODE_DROPPED)))
                               | emptied);
    if (status == GE_SUCCESS) {
        clock_gettime(CLOCK_MONOTONIC, &began);
        status = run_graph(call, &state, ir, slice, slice_count, faults, report);
        report->run_ms = milliseconds_since(&began);
    }
    release(&state);
    return status;
}
