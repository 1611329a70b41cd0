/* The emulated InplacePartialRotaryMul(Grad) kernels: float32 arithmetic on host views of device data. */
#ifndef PRMG_EMU_KERNEL_H
#define PRMG_EMU_KERNEL_H

#include <stdint.h>

#include "faults.h"

/* Vector cores the rows are split over, and the lanes of a row's slice processed together. */
#define EMU_CORES 40
#define EMU_TILE 64
/* A vector core's unified buffer on the 950 (253952 bytes: upstream's tiling tests give the 950 248 KiB). */
#define EMU_UB_BYTES 253952

/* The kernel workspace every GetWorkspaceSize asks for (16 MiB, as upstream's tiling). */
#define KERNEL_WORKSPACE_SIZE ((uint64_t)16 << 20)

/* A 4-D contiguous tensor: dims (B, S, N, last axis), aclDataType code, host view of its data. */
typedef struct {
    int64_t dims[4];
    int32_t data_type;
    void *host;
} kernel_tensor;

/* What to compute: which operator's formula, the pairing of the rotary mode (0 half, 1 interleave,
 * 2 quarter, 3 interleave-half), the slice [start, end) of the last axis, the faults (faults.h) that
 * act inside the kernel, the host view of the kernel workspace (KERNEL_WORKSPACE_SIZE bytes), and
 * whether this launch sums each pair with a fused multiply-add (the nondeterministic fault). */
typedef struct {
    int forward;
    int pairing_mode;
    int64_t start;
    int64_t end;
    fault_set faults;
    const float *workspace;
    int fused;
} kernel_job;

/* Rewrites x[..., start:end] in place, cos/sin broadcast over B, S, N; the result is rounded to x's
 * dtype (round to nearest even). The grad (job->forward == 0) computes dx from dy = x, the forward y
 * from x (operator.md "The formulas" and "The sibling forward op"). Rows are split over EMU_CORES
 * cores, each row's slice is processed in tiles of EMU_TILE lanes. */
void rotary_kernel(const kernel_tensor *x, const kernel_tensor *cos, const kernel_tensor *sin,
                   const kernel_job *job);

/* Element `index` of a float32/float16/bfloat16 buffer, as float32. */
float load_element(int32_t data_type, const void *data, int64_t index);

/* Stores value rounded (RNE) to data_type as element `index`. */
void store_element(int32_t data_type, void *data, int64_t index, float value);

/* The rows one UB pass of a core holds for a slice of `length` lanes of x's dtype with cos/sin of cos_type: upstream's
 * BAB tiling's budget with one cos/sin row per dy row, rows = floor(floor32(UB / 4) / dy_row / (1 + table_rows)),
 * dy_row the slice's bytes rounded up to 32, table_rows = max(1, ceil(cos_row / dy_row)); at least 1. */
int64_t ub_pass_rows(int32_t x_type, int32_t cos_type, int64_t length);

/* Bytes per element of data_type (4 for float32, 2 for float16 and bfloat16). */
int element_size(int32_t data_type);

/* The number of elements of a 4-D kernel tensor. */
int64_t element_count(const kernel_tensor *tensor);

#endif
