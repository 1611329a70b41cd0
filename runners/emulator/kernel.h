/* The emulated InplacePartialRotaryMulGrad kernel: float32 arithmetic on host views of device data. */
#ifndef PRMG_EMU_KERNEL_H
#define PRMG_EMU_KERNEL_H

#include <stdint.h>

/* A 4-D contiguous tensor: dims (B, S, N, last axis), aclDataType code, host view of its data. */
typedef struct {
    int64_t dims[4];
    int32_t data_type;
    void *host;
} kernel_tensor;

/* What to compute: the pairing of the rotary mode (0 half, 1 interleave, 2 quarter,
 * 3 interleave-half), the slice [start, end) of dy's last axis, and the faults (faults.h) that
 * change the arithmetic: sign, own_sin, shift_slice, ignore_broadcast, skip_last_row, bf16_compute. */
typedef struct {
    int pairing_mode;
    int64_t start;
    int64_t end;
    unsigned faults;
} kernel_job;

/* Rewrites dy[..., start:end] in place with dx (operator.md "The formulas"), cos/sin broadcast over
 * B, S, N; the result is rounded to dy's dtype (round to nearest even). */
void rotary_mul_grad(const kernel_tensor *dy, const kernel_tensor *cos, const kernel_tensor *sin,
                     const kernel_job *job);

/* Element `index` of a float32/float16/bfloat16 buffer, as float32. */
float load_element(int32_t data_type, const void *data, int64_t index);

/* Stores value rounded (RNE) to data_type as element `index`. */
void store_element(int32_t data_type, void *data, int64_t index, float value);

/* Bytes per element of data_type (4 for float32, 2 for float16 and bfloat16). */
int element_size(int32_t data_type);

#endif
