/* The emulated InplacePartialRotaryMul(Grad) kernels: float32 arithmetic on host views of device data. */
#ifndef PRMG_EMU_KERNEL_H
#define PRMG_EMU_KERNEL_H

#include <stdint.h>

#include "faults.h"

/* A 4-D contiguous tensor: dims (B, S, N, last axis), aclDataType code, host view of its data. */
typedef struct {
    int64_t dims[4];
    int32_t data_type;
    void *host;
} kernel_tensor;

enum { OP_GRAD = 0, OP_FORWARD = 1 };

#define EMU_CORES 40   /* vector cores the rows are split over */
#define EMU_TILE 64    /* slice lanes one tile holds */

/* What to compute: the operator, the pairing of the rotary mode (0 half, 1 interleave, 2 quarter,
 * 3 interleave-half), the slice [start, end) of the last axis, the faults (faults.h) that change the
 * arithmetic, and the host view of the workspace (for the workspace faults; may be NULL). */
typedef struct {
    int op;
    int pairing_mode;
    int64_t start;
    int64_t end;
    fault_set faults;
    void *workspace;
    uint64_t launch_number;
} kernel_job;

/* Rewrites x[..., start:end] in place (operator.md "The formulas" for the grad, "The sibling forward
 * op" for the forward), cos/sin broadcast over B, S, N; the result rounded to x's dtype (RNE). */
void rotary_mul(const kernel_tensor *x, const kernel_tensor *cos, const kernel_tensor *sin, const kernel_job *job);

/* Element `index` of a float32/float16/bfloat16 buffer, as float32. */
float load_element(int32_t data_type, const void *data, int64_t index);

/* Stores value rounded (RNE) to data_type as element `index`. */
void store_element(int32_t data_type, void *data, int64_t index, float value);

/* Bytes per element of data_type (4 for float32, 2 for float16 and bfloat16). */
int element_size(int32_t data_type);

#endif
