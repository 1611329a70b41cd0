/*
 * The emulated kernel. Every mode is one rule over the slice g = dy[..., start:end] (length L) with
 * c = cos, s = sin (indexed from 0 at start):
 *
 *     dx[j] = c[a]*g[a] + s[p]*g[p]     ("plus" lanes)
 *     dx[j] = c[a]*g[a] - s[p]*g[p]     ("minus" lanes)
 *
 * where (a, p) = pair_of(mode, j): a is the element the lane keeps, p its partner, whose sin is used.
 * Computed in float32: two rounded products and one rounded sum (built with -ffp-contract=off).
 */
#include "kernel.h"

#include <math.h>

#include "emu.h"
#include "faults.h"
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

/* For lane j of a slice of length L: the kept element *kept, the partner *partner, and whether the
 * lane adds (1) or subtracts (0) the partner term.
 *   half (0):            j < L/2: (j, j+L/2, +);  else (j, j-L/2, -)
 *   interleave (1):      j even: (j, j+1, +);     j odd: (j, j-1, -)
 *   quarter (2):         the half rule inside each half of the slice
 *   interleave-half (3): j = 2k: (k, k+L/2, +);   j = 2k+1: (k+L/2, k, -)                      */
static int pair_of(int mode, int64_t j, int64_t length, int64_t *kept, int64_t *partner)
{
    int64_t half = length / 2, quarter = length / 4;
    switch (mode) {
    case 0:
        *kept = j;
        *partner = j < half ? j + half : j - half;
        return j < half;
    case 2:
        *kept = j;
        *partner = j % half < quarter ? j + quarter : j - quarter;
        return j % half < quarter;
    case 3:
        *kept = j % 2 == 0 ? j / 2 : j / 2 + half;
        *partner = j % 2 == 0 ? j / 2 + half : j / 2;
        return j % 2 == 0;
    default:
        *kept = j;
        *partner = j % 2 == 0 ? j + 1 : j - 1;
        return j % 2 == 0;
    }
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

/* Index of the cos/sin row used for dy row (b, s, n): each cos/sin axis of size 1 broadcasts. */
static int64_t table_row(const kernel_tensor *table, int64_t b, int64_t s, int64_t n)
{
    int64_t tb = table->dims[0] == 1 ? 0 : b;
    int64_t ts = table->dims[1] == 1 ? 0 : s;
    int64_t tn = table->dims[2] == 1 ? 0 : n;
    return (tb * table->dims[1] + ts) * table->dims[2] + tn;
}

void rotary_mul_grad(const kernel_tensor *dy, const kernel_tensor *cos, const kernel_tensor *sin,
                     const kernel_job *job)
{
    const int64_t seq = dy->dims[1], heads = dy->dims[2], row_length = dy->dims[3];
    const int64_t rows = dy->dims[0] * seq * heads, length = job->end - job->start;
    const int in_bf16 = (job->faults & FAULT_BF16_COMPUTE) != 0;
    float g[MAX_SLICE], c[MAX_SLICE], s[MAX_SLICE];
    if (length <= 0 || length > MAX_SLICE)
        return;
    for (int64_t row = 0; row < rows; row++) {
        if ((job->faults & FAULT_SKIP_LAST_ROW) && row == rows - 1)
            break;
        int64_t b = row / (seq * heads), si = row / heads % seq, n = row % heads;
        int64_t table = (job->faults & FAULT_IGNORE_BROADCAST) ? 0 : table_row(cos, b, si, n);
        for (int64_t j = 0; j < length; j++) {
            g[j] = load_element(dy->data_type, dy->host, row * row_length + row_position(job, row_length, j));
            c[j] = load_element(cos->data_type, cos->host, table * length + j);
            s[j] = load_element(sin->data_type, sin->host, table * length + j);
            if (in_bf16) {
                g[j] = round_to_bf16(g[j]);
                c[j] = round_to_bf16(c[j]);
                s[j] = round_to_bf16(s[j]);
            }
        }
        for (int64_t j = 0; j < length; j++) {
            int64_t kept, partner;
            int plus = pair_of(job->pairing_mode, j, length, &kept, &partner);
            float sin_value = (job->faults & FAULT_OWN_SIN) ? s[kept] : s[partner];
            float kept_term = c[kept] * g[kept];
            float partner_term = sin_value * g[partner];
            if (in_bf16) {
                kept_term = round_to_bf16(kept_term);
                partner_term = round_to_bf16(partner_term);
            }
            float dx = plus || (job->faults & FAULT_SIGN) ? kept_term + partner_term : kept_term - partner_term;
            if (in_bf16)
                dx = round_to_bf16(dx);
            int64_t position = row * row_length + row_position(job, row_length, j);
            if ((job->faults & FAULT_TRUNCATE) && dy->data_type != ACL_FLOAT)
                store_toward_zero(dy->data_type, dy->host, position, dx);
            else
                store_element(dy->data_type, dy->host, position, dx);
        }
    }
}
