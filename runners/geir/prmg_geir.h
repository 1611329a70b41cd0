/*
 * The C ABI of prmg's graph-mode runner: one case of an operator of the InplacePartialRotaryMul family built
 * as a GE graph from its IR (Data nodes for the three inputs, the operator created by its type name, its
 * attributes set by name, its ref output as the graph's output), compiled and run on host tensors.
 *
 * Two libraries implement it, both loaded by prmg through ctypes as libprmg_geir.so:
 *   runners/geir/prmg_geir.cpp     over GE's public C++ API (ge/ge_api.h and the graph headers), compiled on first use
 *                                  against a CANN toolkit's headers and libraries;
 *   runners/emulator/geir.c        the host emulator's twin, which runs the emulator's own kernel.
 *
 * Every status is GE's (a ge::Status or graphStatus), 0 for success, with the phase of the call that
 * returned it: init (GEInitialize, the session), build (the graph and the operator's IR), compile
 * (Session::AddGraph and CompileGraph: op proto checks, InferShape, kernel selection, tiling) or run
 * (Session::RunGraph).
 */
#ifndef PRMG_GEIR_H
#define PRMG_GEIR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PRMG_GEIR_API __attribute__((visibility("default")))

/* prmg refuses a library of another version of this ABI. */
#define PRMG_GEIR_ABI_VERSION 2
#define PRMG_GEIR_MAX_DIMS 8
#define PRMG_GEIR_INPUTS 3
#define PRMG_GEIR_CALL_SIZE 64
#define PRMG_GEIR_MESSAGE_SIZE 4096

/* Which step returned a status (prmg_geir_report.phase): INIT GE's start, its session, and the session taking the graph
 * (AddGraph says FAILED whatever went wrong: no refusal of the graph), BUILD the graph made from the IR, COMPILE
 * CompileGraph, RUN RunGraph. */
enum {
    PRMG_GEIR_PHASE_NONE = 0,
    PRMG_GEIR_PHASE_INIT = 1,
    PRMG_GEIR_PHASE_BUILD = 2,
    PRMG_GEIR_PHASE_COMPILE = 3,
    PRMG_GEIR_PHASE_RUN = 4
};

/* One input, host bytes in C order. data NULL leaves the IR input unlinked (prmg's null tensor). */
typedef struct {
    const void *data;
    uint64_t bytes;
    int32_t data_type;   /* ge::DataType: DT_FLOAT 0, DT_FLOAT16 1, DT_BF16 27 */
    int32_t format;      /* ge::Format: FORMAT_NCHW 0, FORMAT_NHWC 1, FORMAT_ND 2 */
    uint32_t dim_count;
    int64_t dims[PRMG_GEIR_MAX_DIMS];
} prmg_geir_tensor;

/* One case. The names are the IR's: op_type "InplacePartialRotaryMulGrad", inputs "dy", "cos", "sin", the ref
 * output "dy", attributes "rotary_mode" (Int: VT_INT) and "partial_slice" (ListInt: VT_LIST_INT), each checked
 * against the IR's declared type. partial_slice holds slice_count values as the case writes them (any number);
 * NULL leaves the attribute unset, so that the IR's default ({0, 0}) applies (prmg's null partialSlice). The ref
 * output's bytes go to output (at most output_capacity of them). */
typedef struct {
    const char *op_type;
    const char *input_names[PRMG_GEIR_INPUTS];
    const char *output_name;
    prmg_geir_tensor inputs[PRMG_GEIR_INPUTS];
    const char *mode_attr;
    int64_t rotary_mode;
    const char *slice_attr;
    const int64_t *partial_slice;
    uint64_t slice_count;
    void *output;
    uint64_t output_capacity;
} prmg_geir_call;

/* What a call did: its status and phase, the GE function that returned it, GE's message (or the library's own
 * words for what it refused itself), and the output GE returned (its size, dtype and dims; its bytes were copied
 * to prmg_geir_call.output up to output_capacity); milliseconds spent compiling and running the graph. */
typedef struct {
    uint32_t status;
    int32_t phase;
    char call[PRMG_GEIR_CALL_SIZE];
    char message[PRMG_GEIR_MESSAGE_SIZE];
    uint64_t output_bytes;
    int32_t output_data_type;
    uint32_t output_dim_count;
    int64_t output_dims[PRMG_GEIR_MAX_DIMS];
    double compile_ms;
    double run_ms;
} prmg_geir_report;

/* PRMG_GEIR_ABI_VERSION of the library. */
PRMG_GEIR_API uint32_t prmg_geir_abi_version(void);

/* GEInitialize with the device id and one session, once per process (a second call with the same device is a
 * no-op; another device is refused). A failure leaves nothing started (GEFinalize follows a failed GEInitialize or
 * session), so a later call starts afresh. GE still initialised at process exit is finalised then. Returns the
 * status, also in *report. */
PRMG_GEIR_API uint32_t prmg_geir_initialize(int32_t device_id, prmg_geir_report *report);

/* Builds, compiles and runs one case's graph, then removes it. Returns the status, also in *report. */
PRMG_GEIR_API uint32_t prmg_geir_run(const prmg_geir_call *call, prmg_geir_report *report);

/* Ends the session and GEFinalize (a no-op when not initialised). Returns the status, also in *report. */
PRMG_GEIR_API uint32_t prmg_geir_finalize(prmg_geir_report *report);

#ifdef __cplusplus
}
#endif

#endif
