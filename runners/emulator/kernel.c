/*
 * The emulated kernels. Every mode of both operators is one rule over the slice x = tensor[..., start:end]
 * (length L) with c = cos, s = sin (indexed from 0 at start):
 *
 *     out[j] = c[cl]*x[a] + sign * s[sl]*x[p]
 *
 * where lane_terms(op, mode, j) gives the kept element a, the partner p, the cos lane cl and the sin lane
 * sl: the grad uses the kept lane's cos and the partner's sin (cl = a, sl = p), the forward the output
 * lane's own (cl = sl = j). Computed in float32: two rounded products and one rounded sum (built with
 * -ffp-contract=off). Rows are split over EMU_CORES cores and each row's slice into EMU_TILE-lane tiles,
 * as a real kernel's tiling does, so that the regime faults (faults.h) act where real bugs do.
 */
#include "kernel.h"

#include <math.h>

#include "emu.h"
#include "fpconv.h"

#define MAX_SLICE 1024

int element_size(int32_t data_type)
{
    return data_type == ACL_FLOAT ? 4 : 2;
}

float load_element(int32_t data_type, const void *data, int64_t index)
{
    if (data_type == ACL_FLOAT)
        return ((const float *)data)[index];
    uint16_t half = ((const uint16_t *)data)[index];
    return data_type == ACL_BF16 ? bf16_to_float(half) : fp16_to_float(half);
}

void store_element(int32_t data_type, void *data, int64_t index, float value)
{
    if (data_type == ACL_FLOAT)
        ((float *)data)[index] = value;
    else
        ((uint16_t *)data)[index] = data_type == ACL_BF16 ? float_to_bf16(value) : float_to_fp16(value);
}

/* value rounded to data_type (RNE), kept in float32 (the mixed_cast fault). */
static float round_to(int32_t data_type, float value)
{
    if (data_type == ACL_FLOAT)
        return value;
    return data_type == ACL_BF16 ? bf16_to_float(float_to_bf16(value)) : fp16_to_float(float_to_fp16(value));
}

/* The truncate fault's store: value converted to fp16/bf16 toward zero (a CAST_TRUNC where CAST_RINT
 * belongs) instead of to nearest even. */
static void store_toward_zero(int32_t data_type, void *data, int64_t index, float value)
{
    uint16_t nearest = data_type == ACL_BF16 ? float_to_bf16(value) : float_to_fp16(value);
    float widened = data_type == ACL_BF16 ? bf16_to_float(nearest) : fp16_to_float(nearest);
    if (value == value && fabsf(widened) > fabsf(value) && (nearest & 0x7FFF) != 0)
        nearest--;                                   /* one step toward zero in sign-magnitude */
    ((uint16_t *)data)[index] = nearest;
}

/* For output lane j of a slice of length L: the kept element *kept, the partner *partner, the cos
 * and sin lanes, and whether the partner term is added (1) or subtracted (0).
 * Grad:    half (0):            j < L/2: (j, j+L/2, +);  else (j, j-L/2, -)
 *          interleave (1):      j even: (j, j+1, +);     j odd: (j, j-1, -)
 *          quarter (2):         the half rule inside each half of the slice
 *          interleave-half (3): j = 2k: (k, k+L/2, +);   j = 2k+1: (k+L/2, k, -)
 *          cos lane = kept, sin lane = partner.
 * Forward: y = c*z + R(z)*s: the same pairs with the signs swapped (first element minus, second plus),
 *          but interleave-half reads x interleaved and writes half: j < L/2: (2j, 2j+1, -), else
 *          (2(j-L/2)+1, 2(j-L/2), +); cos lane = sin lane = j.                                      */
static int lane_terms(int op, int mode, int64_t j, int64_t length, int64_t *kept, int64_t *partner,
                      int64_t *cos_lane, int64_t *sin_lane)
{
    int64_t half = length / 2, quarter = length / 4;
    int first;
    if (op == OP_FORWARD && mode == 3) {
        first = j < half;
        int64_t k = first ? j : j - half;
        *kept = first ? 2 * k : 2 * k + 1;
        *partner = first ? 2 * k + 1 : 2 * k;
        *cos_lane = *sin_lane = j;
        return !first;
    }
    switch (mode) {
    case 0:
        *kept = j;
        *partner = j < half ? j + half : j - half;
        first = j < half;
        break;
    case 2:
        *kept = j;
        *partner = j % half < quarter ? j + quarter : j - quarter;
        first = j % half < quarter;
        break;
    case 3:
        *kept = j % 2 == 0 ? j / 2 : j / 2 + half;
        *partner = j % 2 == 0 ? j / 2 + half : j / 2;
        first = j % 2 == 0;
        break;
    default:
        *kept = j;
        *partner = j % 2 == 0 ? j + 1 : j - 1;
        first = j % 2 == 0;
    }
    if (op == OP_FORWARD) {
        *cos_lane = *sin_lane = j;
        return !first;
    }
    *cos_lane = *kept;
    *sin_lane = *partner;
    return first;
}

/* Position in the row of slice lane j: start + j, or with the shift_slice fault one pair (2) to the
 * right, to the left when the slice ends at D, wrapping around the row when neither fits. */
static int64_t row_position(const kernel_job *job, int64_t row_length, int64_t j)
{
    if (!(job->faults & FAULT_SHIFT_SLICE))
        return job->start + j;
    int64_t shift = job->end + 2 <= row_length ? 2 : job->start >= 2 ? -2 : 2;
    return (job->start + shift + j) % row_length;
}

/* Index of the cos/sin row used for row (b, s, n): each cos/sin axis of size 1 broadcasts; the
 * broadcast_b/s/n faults use index 0 along a full axis, ignore_broadcast along every axis. */
static int64_t table_row(const kernel_tensor *table, const kernel_tensor *x, fault_set faults, int64_t b,
                         int64_t s, int64_t n)
{
    if (faults & FAULT_IGNORE_BROADCAST)
        return 0;
    const fault_set axis_faults[3] = {FAULT_BROADCAST_B, FAULT_BROADCAST_S, FAULT_BROADCAST_N};
    int64_t index[3] = {b, s, n};
    for (int axis = 0; axis < 3; axis++) {
        int full = table->dims[axis] == x->dims[axis] && x->dims[axis] > 1;
        if (table->dims[axis] == 1 || (full && (faults & axis_faults[axis])))
            index[axis] = 0;
    }
    return (index[0] * table->dims[1] + index[1]) * table->dims[2] + index[2];
}

/* The rows core `core` of EMU_CORES processes: [*first, *last). The core_tail fault drops the
 * remainder rows (the last rows % EMU_CORES) when rows >= EMU_CORES. */
static void core_rows(int64_t rows, int core, fault_set faults, int64_t *first, int64_t *last)
{
    int64_t base = rows / EMU_CORES, extra = rows % EMU_CORES;
    *first = core * base + (core < extra ? core : extra);
    *last = *first + base + (core < extra ? 1 : 0);
    if ((faults & FAULT_CORE_TAIL) && base > 0 && extra > 0 && *last > rows - extra)
        *last = *first < rows - extra ? rows - extra : *first;
}

/* Computes one row of the slice into out[0..L). */
static void compute_row(const kernel_tensor *x, const kernel_tensor *cos, const kernel_tensor *sin,
                        const kernel_job *job, int64_t row_base, int64_t table, int64_t row_length, float *out)
{
    const int64_t length = job->end - job->start;
    const int in_bf16 = (job->faults & FAULT_BF16_COMPUTE) != 0;
    const int cast = (job->faults & FAULT_MIXED_CAST) && cos->data_type != x->data_type;
    const int fused = (job->faults & FAULT_NONDETERMINISTIC) && (job->launch_number % 2 == 1);
    float g[MAX_SLICE], c[MAX_SLICE], s[MAX_SLICE];
    const int64_t tiled = (length / EMU_TILE) * EMU_TILE;
    for (int64_t j = 0; j < length; j++) {
        int64_t lane = j;
        if ((job->faults & FAULT_TILE_TAIL) && length > EMU_TILE && length % EMU_TILE != 0 && j >= tiled)
            lane = j - EMU_TILE;                  /* the last partial tile reads the previous tile's table */
        g[j] = load_element(x->data_type, x->host, row_base + row_position(job, row_length, j));
        c[j] = load_element(cos->data_type, cos->host, table * length + lane);
        s[j] = load_element(sin->data_type, sin->host, table * length + lane);
        if (cast) {
            c[j] = round_to(x->data_type, c[j]);
            s[j] = round_to(x->data_type, s[j]);
        }
        if (in_bf16) {
            g[j] = round_to_bf16(g[j]);
            c[j] = round_to_bf16(c[j]);
            s[j] = round_to_bf16(s[j]);
        }
    }
    const float *workspace = job->workspace;
    for (int64_t j = 0; j < length; j++) {
        int64_t kept, partner, cos_lane, sin_lane;
        int plus = lane_terms(job->op, job->pairing_mode, j, length, &kept, &partner, &cos_lane, &sin_lane);
        if (job->op == OP_GRAD && (job->faults & FAULT_OWN_SIN))
            sin_lane = kept;
        if (job->op == OP_FORWARD && (job->faults & FAULT_FWD_PARTNER_SIN))
            sin_lane = partner;
        if ((job->op == OP_GRAD && (job->faults & FAULT_SIGN)) || (job->op == OP_FORWARD && (job->faults & FAULT_FWD_SIGN)))
            plus = job->op == OP_GRAD ? 1 : 0;
        float kept_term = c[cos_lane] * g[kept];
        float partner_term = s[sin_lane] * g[partner];
        if (in_bf16) {
            kept_term = round_to_bf16(kept_term);
            partner_term = round_to_bf16(partner_term);
        }
        float result;
        if (fused)
            result = fmaf(c[cos_lane], g[kept], plus ? partner_term : -partner_term);
        else
            result = plus ? kept_term + partner_term : kept_term - partner_term;
        if (in_bf16)
            result = round_to_bf16(result);
        if ((job->faults & FAULT_WORKSPACE_UNINIT_READ) && workspace != NULL)
            result += workspace[j];                 /* an accumulator staged in workspace, never zeroed */
        out[j] = result;
    }
}

void rotary_mul(const kernel_tensor *x, const kernel_tensor *cos, const kernel_tensor *sin, const kernel_job *job)
{
    const int64_t seq = x->dims[1], heads = x->dims[2], row_length = x->dims[3];
    const int64_t rows = x->dims[0] * seq * heads, length = job->end - job->start;
    const int64_t elements = rows * row_length;
    const int itemsize = element_size(x->data_type);
    const int64_t pad = 32 / itemsize;
    const int64_t stride = (job->faults & FAULT_ROW_PAD) && row_length % pad != 0
                               ? (row_length + pad - 1) / pad * pad : row_length;
    const int unaligned = (job->faults & FAULT_UNALIGNED_START) && (job->start * itemsize) % 32 != 0;
    float out[MAX_SLICE];
    if (length <= 0 || length > MAX_SLICE)
        return;
    for (int core = 0; core < EMU_CORES; core++) {
        int64_t first, last;
        core_rows(rows, core, job->faults, &first, &last);
        for (int64_t row = first; row < last; row++) {
            if ((job->faults & FAULT_SKIP_LAST_ROW) && row == rows - 1)
                continue;
            int64_t addressed = (job->faults & FAULT_ROW_INDEX_U16) ? row % 65536 : row;
            int64_t row_base = addressed * stride;
            if (row_base + row_length > elements)
                continue;                           /* row_pad: a padded row past the buffer is dropped */
            int64_t b = row / (seq * heads), si = row / heads % seq, n = row % heads;
            compute_row(x, cos, sin, job, row_base, table_row(cos, x, job->faults, b, si, n), row_length, out);
            for (int64_t j = unaligned ? 2 : 0; j < length; j++) {
                float value = out[j];
                if ((job->faults & FAULT_SQUASH_NAN) && value != value)
                    value = 0.0f;
                int64_t position = row_base + row_position(job, row_length, j);
                if ((job->faults & FAULT_TRUNCATE) && x->data_type != ACL_FLOAT)
                    store_toward_zero(x->data_type, x->host, position, value);
                else
                    store_element(x->data_type, x->host, position, value);
            }
        }
    }
}
