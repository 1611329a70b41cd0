/*
 * The emulated kernels. Every mode of both operators is one rule over the slice of a row,
 * x = row[start:end] (length L), with c = cos, s = sin (indexed from 0 at start). Output lane j is
 *
 *     out[j] = c[ci]*x[a] + s[si]*x[p]     ("plus" lanes)
 *     out[j] = c[ci]*x[a] - s[si]*x[p]     ("minus" lanes)
 *
 * where a is the element the lane keeps and p its partner:
 *   grad (grad_lane):       ci = a, si = p (each lane uses its partner's sin); a pair's first lane adds
 *   forward (forward_lane): ci = si = j (each element its own sin); a pair's first lane subtracts
 * Computed in float32: two rounded products and one rounded sum (built with -ffp-contract=off).
 *
 * The work is laid out like the device's: the rows (b, s, n) are split over EMU_CORES vector cores
 * (floor(rows / EMU_CORES) consecutive rows each, then the remaining rows one each to the first
 * cores); a core takes its rows in UB passes of ub_pass_rows rows (what its unified buffer holds:
 * the slices and their cos/sin rows), and a pass loads each row's whole slice, then computes and
 * stores it in tiles of EMU_TILE lanes (in place: every lane reads the row as it was before the launch).
 */
#include "kernel.h"

#include <math.h>

#include "emu.h"
#include "faults.h"
#include "fpconv.h"

#define MAX_SLICE 1024
#define BLOCK_BYTES 32

/* One output lane: the x positions it keeps and pairs with, the cos and sin entries it uses, and
 * whether it adds (1) or subtracts (0) the partner term. */
typedef struct {
    int64_t kept;
    int64_t partner;
    int64_t cos_index;
    int64_t sin_index;
    int plus;
} lane;

int element_size(int32_t data_type)
{
    return data_type == ACL_FLOAT ? 4 : 2;
}

int64_t element_count(const kernel_tensor *tensor)
{
    return tensor->dims[0] * tensor->dims[1] * tensor->dims[2] * tensor->dims[3];
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

/* value rounded (RNE) to the nearest value of data_type, kept in float32 (the mixed_cast fault). */
static float round_to_dtype(int32_t data_type, float value)
{
    if (data_type == ACL_BF16)
        return round_to_bf16(value);
    if (data_type == ACL_FLOAT16)
        return fp16_to_float(float_to_fp16(value));
    return value;
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

/* The smallest float32 >= value: value (the exact sum of two products of float32 numbers, rounded once in float64)
 * rounded toward +inf (the round_up fault). */
static float up(double value)
{
    float nearest = (float)value;
    return (double)nearest < value ? nextafterf(nearest, INFINITY) : nearest;
}

/* The round_zero fault's float32 value: value (the exact sum, as up()) rounded toward zero. */
static float toward_zero(double value)
{
    float nearest = (float)value;
    return fabs((double)nearest) > fabs(value) ? nextafterf(nearest, 0.0f) : nearest;
}

/* The largest float32 <= value (the bias faults' downward rounding). */
static float down(double value)
{
    return -up(-value);
}

/* The bias faults' direction for an exact value on vector core `core`: +1 rounded toward +inf, -1 toward -inf, 0 to
 * nearest. core_bias: up on even cores, down on odd ones (the whole result's errors split evenly, each core's lean);
 * negative_up: up where the value is negative (toward zero there, nearest elsewhere); binade_up: up where
 * 1 <= |value| < 2; binade_thin_up: up where 4 <= |value| < 8 (a binade few results of seeded data reach). */
static int bias_of(fault_set faults, int core, double value)
{
    if (has_fault(faults, FAULT_CORE_BIAS))
        return core % 2 == 0 ? 1 : -1;
    if (has_fault(faults, FAULT_NEGATIVE_UP) && value < 0)
        return 1;
    if (has_fault(faults, FAULT_BINADE_UP) && fabs(value) >= 1.0 && fabs(value) < 2.0)
        return 1;
    if (has_fault(faults, FAULT_BINADE_THIN_UP) && fabs(value) >= 4.0 && fabs(value) < 8.0)
        return 1;
    return 0;
}

/* The cast_up fault's store: value converted to fp16/bf16 toward +inf instead of to nearest even. */
static void store_upward(int32_t data_type, void *data, int64_t index, float value)
{
    uint16_t nearest = data_type == ACL_BF16 ? float_to_bf16(value) : float_to_fp16(value);
    float widened = data_type == ACL_BF16 ? bf16_to_float(nearest) : fp16_to_float(nearest);
    if (value == value && widened < value)
        nearest = (nearest & 0x8000) ? (nearest == 0x8000 ? 0 : nearest - 1) : nearest + 1;
    ((uint16_t *)data)[index] = nearest;
}

/* The tie-rule faults' store: value converted to fp16/bf16 to nearest, but a tie (value exactly halfway between two
 * values of the dtype, where upstream's CAST_RINT takes the even one) goes elsewhere: away from zero with cast_away
 * (a CAST_ROUND), to the odd neighbour with cast_odd, toward +inf at even element positions and toward -inf at odd
 * ones with cast_ties_split. Every other value is stored as the right store stores it. */
static void store_tie_rule(int32_t data_type, void *data, int64_t index, float value, fault_set faults)
{
    const int bf16 = data_type == ACL_BF16;
    const uint16_t nearest = bf16 ? float_to_bf16(value) : float_to_fp16(value);
    const double widened = bf16 ? bf16_to_float(nearest) : fp16_to_float(nearest);
    /* the other neighbour of value: one step in sign-magnitude away from zero, or toward it */
    const uint16_t other = (uint16_t)(fabs(widened) < fabs((double)value) ? nearest + 1 : nearest - 1);
    const double beyond = bf16 ? bf16_to_float(other) : fp16_to_float(other);
    uint16_t stored = nearest;
    if (isfinite(value) && isfinite(widened) && isfinite(beyond) && widened != (double)value
        && fabs((double)value - widened) == fabs(beyond - (double)value)) {
        if (has_fault(faults, FAULT_CAST_AWAY))
            stored = fabs(beyond) > fabs(widened) ? other : nearest;
        else if (has_fault(faults, FAULT_CAST_ODD))
            stored = (nearest & 1) ? nearest : other;
        else                                                      /* cast_ties_split */
            stored = (beyond > widened) == (index % 2 == 0) ? other : nearest;
    }
    ((uint16_t *)data)[index] = stored;
}

/* For lane j of a slice of length L: the kept element *kept, the partner *partner, and whether the
 * lane is the first of its pair (1) or the second (0), in the grad's layout (dy read as it is laid
 * out, dx written in the mode's layout).
 *   half (0):            j < L/2: (j, j+L/2, first);  else (j, j-L/2, second)
 *   interleave (1):      j even: (j, j+1, first);     j odd: (j, j-1, second)
 *   quarter (2):         the half rule inside each half of the slice
 *   interleave-half (3): j = 2k: (k, k+L/2, first);   j = 2k+1: (k+L/2, k, second)               */
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

/* The tail_pair_sign fault: 1 for a lane of the pair that holds the slice's last element (its kept or partner index
 * is L - 1, in either operator's layout), whose sign both operators flip alike: the grad stays the forward's
 * transpose, so the checks that compare the two (adjoint, roundtrip) agree with a pair wrong on the tail of D. */
static int tail_pair(fault_set faults, lane l, int64_t length)
{
    return has_fault(faults, FAULT_TAIL_PAIR_SIGN) && (l.kept == length - 1 || l.partner == length - 1);
}

/* Lane j of the grad: dx[j] = c[a]*g[a] +/- s[p]*g[p], plus on a pair's first lane (pair_of).
 * Faults: own_sin (s[a]), sign (every lane adds), neg_sin (sin negated: every lane's sign flipped). */
static lane grad_lane(int mode, int64_t j, int64_t length, fault_set faults)
{
    lane out;
    int first = pair_of(mode, j, length, &out.kept, &out.partner);
    out.cos_index = out.kept;
    out.sin_index = has_fault(faults, FAULT_OWN_SIN) ? out.kept : out.partner;
    out.plus = (first || has_fault(faults, FAULT_SIGN)) != has_fault(faults, FAULT_NEG_SIN);
    out.plus ^= tail_pair(faults, out, length);
    return out;
}

/* Lane j of the forward: y[j] = c[j]*x[a] -/+ s[j]*x[p], minus on a pair's first lane. Modes 0-2 pair
 * as pair_of; interleave-half (3) reads x interleaved and writes y in half layout:
 * j < L/2: (2j, 2j+1, first); else (2(j-L/2)+1, 2(j-L/2), second).
 * Faults: fwd_partner_sin (the sin of the partner's lane, as the grad), fwd_sign (plus lanes subtract),
 * fwd_neg_sin (sin negated: every lane's sign flipped, the transpose of the grad's neg_sin). */
static lane forward_lane(int mode, int64_t j, int64_t length, fault_set faults)
{
    lane out;
    int64_t half = length / 2, partner_lane;
    int first;
    if (mode == 3) {
        first = j < half;
        int64_t k = first ? j : j - half;
        out.kept = first ? 2 * k : 2 * k + 1;
        out.partner = first ? 2 * k + 1 : 2 * k;
        partner_lane = first ? j + half : j - half;
    } else {
        first = pair_of(mode, j, length, &out.kept, &out.partner);
        partner_lane = out.partner;
    }
    out.cos_index = j;
    out.sin_index = has_fault(faults, FAULT_FWD_PARTNER_SIN) ? partner_lane : j;
    out.plus = (!first && !has_fault(faults, FAULT_FWD_SIGN)) != has_fault(faults, FAULT_FWD_NEG_SIN);
    out.plus ^= tail_pair(faults, out, length);
    return out;
}

/* A cos/sin index as the tile sees it: index - shift when index >= shift (shift > 0 only for the
 * tile_tail fault's last tile, whose cos/sin buffer still holds the previous tile). */
static int64_t table_index(int64_t index, int64_t shift)
{
    return shift > 0 && index >= shift ? index - shift : index;
}

/* round_zero's lanes (j % 4 == 3), round_zero_all's (every one): rounded toward zero. */
static int toward_zero_lane(fault_set faults, int64_t j)
{
    return (has_fault(faults, FAULT_ROUND_ZERO) && j % 4 == 3) || has_fault(faults, FAULT_ROUND_ZERO_ALL);
}

/* The value of lane j (described by l) from the slice x and the tables c, s: float32 products and
 * sum, or a fused multiply-add (job->fused); bf16_compute rounds inputs (already), both products and
 * the sum to bfloat16; workspace_uninit_read adds workspace[j]; zero_sin_skip returns c*x alone where the sin entry
 * is 0, zero_cos_skip the partner's term alone where the cos entry is 0; round_zero rounds the exact value toward
 * zero on lanes j % 4 == 3 (every lane: round_zero_all); `upward` (tail_rows_up, mixed_bf16_up) rounds it toward
 * +inf. */
static float lane_value(const kernel_job *job, lane l, int64_t j, const float *x, const float *c, const float *s,
                        int64_t shift, int core, int upward)
{
    const int in_bf16 = has_fault(job->faults, FAULT_BF16_COMPUTE);
    const float cos_value = c[table_index(l.cos_index, shift)], sin_value = s[table_index(l.sin_index, shift)];
    float kept_term = cos_value * x[l.kept];
    float partner_term = sin_value * x[l.partner];
    if (has_fault(job->faults, FAULT_ZERO_SIN_SKIP) && sin_value == 0.0f)
        return kept_term;                                    /* the partner term skipped: 0 * inf is no NaN */
    if (has_fault(job->faults, FAULT_ZERO_COS_SKIP) && cos_value == 0.0f)
        return l.plus ? partner_term : -partner_term;        /* the kept term skipped: likewise */
    if (job->faults & (FAULT_BIT(FAULT_CORE_BIAS) | FAULT_BIT(FAULT_NEGATIVE_UP) | FAULT_BIT(FAULT_BINADE_UP)
                       | FAULT_BIT(FAULT_BINADE_THIN_UP))) {
        const double partner = (double)sin_value * x[l.partner];
        const double exact = (double)cos_value * x[l.kept] + (l.plus ? partner : -partner);
        const int bias = bias_of(job->faults, core, exact);
        if (bias != 0)                                       /* the exact value rounded up or down */
            return bias > 0 ? up(exact) : down(exact);
    }
    if (upward || has_fault(job->faults, FAULT_ROUND_UP)) {  /* the exact value rounded toward +inf */
        const double partner = (double)sin_value * x[l.partner];
        return up((double)cos_value * x[l.kept] + (l.plus ? partner : -partner));
    }
    if (toward_zero_lane(job->faults, j)) {                  /* one lane in four (or all): toward zero */
        const double partner = (double)sin_value * x[l.partner];
        return toward_zero((double)cos_value * x[l.kept] + (l.plus ? partner : -partner));
    }
    if (in_bf16) {
        kept_term = round_to_bf16(kept_term);
        partner_term = round_to_bf16(partner_term);
    }
    float value;
    if (job->fused)
        value = fmaf(cos_value, x[l.kept], l.plus ? partner_term : -partner_term);
    else
        value = l.plus ? kept_term + partner_term : kept_term - partner_term;
    if (in_bf16)
        value = round_to_bf16(value);
    if (has_fault(job->faults, FAULT_WORKSPACE_UNINIT_READ))
        value += job->workspace[j];
    return value;
}

/* Stores a lane's result as element `position` of x: rounded to nearest even, toward zero with the
 * truncate fault (half dtypes), up with cast_up, ties elsewhere than to even with cast_away, cast_odd and
 * cast_ties_split, a NaN stored as +0.0 with the
 * squash_nan fault, a result below 2^-110 in magnitude as a zero of its sign with flush_small. */
static void store_result(const kernel_tensor *x, fault_set faults, int64_t position, float value)
{
    if (has_fault(faults, FAULT_SQUASH_NAN) && isnan(value))
        value = 0.0f;
    if (has_fault(faults, FAULT_FLUSH_SMALL) && fabsf(value) < 0x1p-110f)   /* a denormal guard far too coarse */
        value = copysignf(0.0f, value);
    if (has_fault(faults, FAULT_TRUNCATE) && x->data_type != ACL_FLOAT)
        store_toward_zero(x->data_type, x->host, position, value);
    else if (has_fault(faults, FAULT_CAST_UP) && x->data_type != ACL_FLOAT)
        store_upward(x->data_type, x->host, position, value);
    else if ((faults & TIE_RULE_FAULTS) != 0 && x->data_type != ACL_FLOAT)
        store_tie_rule(x->data_type, x->host, position, value, faults);
    else
        store_element(x->data_type, x->host, position, value);
}

/* Position in the row of slice lane j: start + j, or with the shift_slice fault one pair (2) to the
 * right, to the left when the slice ends at D, wrapping around the row when neither fits. */
static int64_t row_position(const kernel_job *job, int64_t row_length, int64_t j)
{
    if (!has_fault(job->faults, FAULT_SHIFT_SLICE))
        return job->start + j;
    int64_t shift = job->end + 2 <= row_length ? 2 : job->start >= 2 ? -2 : 2;
    return (job->start + shift + j) % row_length;
}

/* The element index where row `row` of x starts: row * D, or with the row_pad fault (D not a multiple
 * of a 32-byte block of x's dtype) row * (D rounded up to that block), with odd_d_even_pitch (an odd D, which the
 * grad's tiling takes and the forward's refuses) row * (D + 1), as a kernel assuming the forward's even D; -1 when
 * that row would run past the end of x (the fault then skips it). */
static int64_t row_base(const kernel_tensor *x, fault_set faults, int64_t row)
{
    const int64_t d = x->dims[3], block = BLOCK_BYTES / element_size(x->data_type);
    int64_t stride = d;
    if (has_fault(faults, FAULT_ROW_PAD) && d % block != 0)
        stride = (d + block - 1) / block * block;
    else if (has_fault(faults, FAULT_ODD_D_EVEN_PITCH) && d % 2 != 0)
        stride = d + 1;
    int64_t base = row * stride;
    return base + d <= element_count(x) ? base : -1;
}

/* Index of the cos/sin row used for x row (b, s, n): each cos/sin axis of size 1 broadcasts.
 * Faults: ignore_broadcast (always row 0); broadcast_b / _s / _n (index 0 along that axis when
 * cos/sin's axis is full, equal to x's and x's is > 1). */
static int64_t table_row(const kernel_tensor *x, const kernel_tensor *table, fault_set faults, int64_t b, int64_t s,
                         int64_t n)
{
    static const int AXIS_FAULTS[3] = {FAULT_BROADCAST_B, FAULT_BROADCAST_S, FAULT_BROADCAST_N};
    const int64_t index[3] = {b, s, n};
    if (has_fault(faults, FAULT_IGNORE_BROADCAST))
        return 0;
    int64_t row = 0;
    for (int axis = 0; axis < 3; axis++) {
        int64_t i = table->dims[axis] == 1 ? 0 : index[axis];
        if (has_fault(faults, AXIS_FAULTS[axis]) && table->dims[axis] == x->dims[axis] && x->dims[axis] > 1)
            i = 0;
        row = row * table->dims[axis] + i;
    }
    return row;
}

/* c[0..length) and s[0..length): cos/sin row `table` as float32; rounded to bfloat16 (bf16_compute)
 * or, when cos's dtype differs from x's, to x's dtype (mixed_cast). */
static void load_tables(const kernel_tensor *cos, const kernel_tensor *sin, int32_t x_type, const kernel_job *job,
                        int64_t table, int64_t length, float *c, float *s)
{
    const int in_bf16 = has_fault(job->faults, FAULT_BF16_COMPUTE);
    const int cast = has_fault(job->faults, FAULT_MIXED_CAST) && cos->data_type != x_type;
    for (int64_t j = 0; j < length; j++) {
        c[j] = load_element(cos->data_type, cos->host, table * length + j);
        s[j] = load_element(sin->data_type, sin->host, table * length + j);
        if (in_bf16) {
            c[j] = round_to_bf16(c[j]);
            s[j] = round_to_bf16(s[j]);
        }
        if (cast) {
            c[j] = round_to_dtype(x_type, c[j]);
            s[j] = round_to_dtype(x_type, s[j]);
        }
    }
}

/* The passthrough_add_zero fault: every element of the row outside the slice rewritten as
 * element + 0.0f in float32 (so -0.0 becomes +0.0 and a signalling NaN is quieted). */
static void rewrite_passthrough(const kernel_tensor *x, const kernel_job *job, int64_t base)
{
    for (int64_t k = 0; k < x->dims[3]; k++) {
        if (k >= job->start && k < job->end)
            continue;
        float value = load_element(x->data_type, x->host, base + k);
        store_element(x->data_type, x->host, base + k, value + 0.0f);
    }
}

/* One row: load the slice and the cos/sin row of row `tables` (the row itself but under ub_stale_tables and
 * core_stale_table), then compute and store it tile by tile.
 * Faults: row_index_u16 (the row addressed as row % 65536), row_pad, skip_last_row, unaligned_start
 * (lanes 0 and 1 left when start is not 32-byte aligned), tile_tail (the last partial tile of an
 * L > EMU_TILE slice uses the previous tile's cos/sin), fwd_odd_half (the last lane of each half left when L/2 is odd
 * and > 1, in modes 0 and 3), passthrough_add_zero, round_zero (a half dtype's lanes j % 4 == 3 stored toward zero),
 * store_block (zeros from the slice's end to the next 32-byte boundary of x). */
static void process_row(const kernel_tensor *x, const kernel_tensor *cos, const kernel_tensor *sin,
                        const kernel_job *job, int64_t rows, int64_t row, int64_t tables, int core, int flip,
                        int up_row)
{
    const fault_set faults = job->faults;
    const int64_t seq = x->dims[1], heads = x->dims[2], d = x->dims[3], length = job->end - job->start;
    /* broadcast_last_b: the last batch index of a dy of B >= 8 over tables broadcast along B, its sign flipped */
    flip ^= has_fault(faults, FAULT_BROADCAST_LAST_B) && cos->dims[0] == 1 && x->dims[0] >= 8
            && row / (seq * heads) == x->dims[0] - 1;
    /* mixed_bf16_up: a bfloat16 dy over tables of another dtype rounded toward +inf (the exact value, then the cast) */
    const int upward = up_row || (has_fault(faults, FAULT_MIXED_BF16_UP) && x->data_type == ACL_BF16
                                  && cos->data_type != ACL_BF16);
    if (has_fault(faults, FAULT_SKIP_LAST_ROW) && row == rows - 1)
        return;
    const int64_t addressed = has_fault(faults, FAULT_ROW_INDEX_U16) ? (int64_t)(uint16_t)row : row;
    const int64_t base = row_base(x, faults, addressed);
    if (base < 0)
        return;
    const int64_t source = has_fault(faults, FAULT_ROW_INDEX_U16) ? (int64_t)(uint16_t)tables : tables;
    const int64_t table = table_row(x, cos, faults, source / (seq * heads), source / heads % seq, source % heads);
    float g[MAX_SLICE], c[MAX_SLICE], s[MAX_SLICE];
    for (int64_t j = 0; j < length; j++) {
        g[j] = load_element(x->data_type, x->host, base + row_position(job, d, j));
        if (has_fault(faults, FAULT_BF16_COMPUTE))
            g[j] = round_to_bf16(g[j]);
    }
    load_tables(cos, sin, x->data_type, job, table, length, c, s);
    const int skip_first_pair = has_fault(faults, FAULT_UNALIGNED_START)
                                && job->start * element_size(x->data_type) % BLOCK_BYTES != 0;
    const int tail_bug = has_fault(faults, FAULT_TILE_TAIL) && length > EMU_TILE && length % EMU_TILE != 0;
    /* fwd_odd_half: half and interleave-half step through each half two lanes at a time, dropping an odd last one */
    const int64_t half = length / 2;
    const int odd_half = has_fault(faults, FAULT_FWD_ODD_HALF) && (job->pairing_mode == 0 || job->pairing_mode == 3)
                         && half % 2 == 1 && half > 1;
    for (int64_t tile_start = 0; tile_start < length; tile_start += EMU_TILE) {
        const int64_t tile_end = tile_start + EMU_TILE < length ? tile_start + EMU_TILE : length;
        const int64_t shift = tail_bug && tile_end == length ? EMU_TILE : 0;
        for (int64_t j = tile_start; j < tile_end; j++) {
            if ((skip_first_pair && j < 2) || (odd_half && (j == half - 1 || j == length - 1)))
                continue;
            lane l = job->forward ? forward_lane(job->pairing_mode, j, length, faults)
                                  : grad_lane(job->pairing_mode, j, length, faults);
            l.plus ^= flip;
            const int64_t position = base + row_position(job, d, j);
            const float value = lane_value(job, l, j, g, c, s, shift, core, upward);
            if (toward_zero_lane(faults, j) && x->data_type != ACL_FLOAT)
                store_toward_zero(x->data_type, x->host, position, value);
            else if (upward && x->data_type != ACL_FLOAT)
                store_upward(x->data_type, x->host, position, value);
            else
                store_result(x, faults, position, value);
        }
    }
    if (has_fault(faults, FAULT_STORE_BLOCK))                /* the last store's whole 32-byte block: zeros past end */
        for (int64_t k = base + job->end; k < base + d && k % (BLOCK_BYTES / element_size(x->data_type)) != 0; k++)
            store_element(x->data_type, x->host, k, 0.0f);
    if (has_fault(faults, FAULT_PASSTHROUGH_ADD_ZERO))
        rewrite_passthrough(x, job, base);
}

int64_t ub_pass_rows(int32_t x_type, int32_t cos_type, int64_t length)
{
    const int64_t dy_row = (length * element_size(x_type) + BLOCK_BYTES - 1) / BLOCK_BYTES * BLOCK_BYTES;
    const int64_t cos_row = (length * element_size(cos_type) + BLOCK_BYTES - 1) / BLOCK_BYTES * BLOCK_BYTES;
    const int64_t table_rows = cos_row > dy_row ? (cos_row + dy_row - 1) / dy_row : 1;
    const int64_t rows = EMU_UB_BYTES / 4 / BLOCK_BYTES * BLOCK_BYTES / dy_row / (1 + table_rows);
    return rows > 0 ? rows : 1;
}

/* uneven_last_share's table row for `row` (else `tables`): when rows > EMU_CORES do not divide evenly, a row of
 * the last share of the ceil split (shares of ceil(rows / EMU_CORES) rows, the last one what is left) reads the
 * tables of its index within that share. */
static int64_t uneven_tail(const kernel_job *job, int64_t rows, int64_t row, int64_t tables)
{
    if (!has_fault(job->faults, FAULT_UNEVEN_LAST_SHARE) || rows <= EMU_CORES || rows % EMU_CORES == 0)
        return tables;
    const int64_t factor = (rows + EMU_CORES - 1) / EMU_CORES, last_start = (rows - 1) / factor * factor;
    return row >= last_start ? row - last_start : tables;
}

/* The rows vector core `core` processes, in order: [core * share, (core + 1) * share) with
 * share = floor(rows / EMU_CORES), then row EMU_CORES * share + core when core < rows % EMU_CORES;
 * taken in UB passes of ub_pass_rows rows.
 * core_tail: when rows >= EMU_CORES, that remainder row is never processed. core_last_row: the middle core's
 * last row is left. ub_stale_tables: the second and later passes keep the first pass's cos/sin rows (row k of a
 * pass uses the tables of the core's row k), as a kernel loading its tables outside its UB loop. core_stale_table: the
 * last core's last row (when it has 2 or more) uses the tables of its row before. ub_tail_seam: the first row of each
 * of the last core's second and later passes uses the tables of its row before (the tail core's own loop, whose table
 * copy for a new pass starts one row early). last_core_row_sign: the last core's last row (when it has one) is computed
 * with the partner term's sign flipped. core_bias: each core's results rounded up (even cores) or down (odd ones).
 * tail_rows_up: on a float32 slice of more than 2^16 elements, the last core's last eighth of its rows rounded up.
 * share_edge_up: each core's first row rounded up (float32) when its share is 8 rows or more (a peeled prologue).
 * uneven_last_share: when rows do not divide evenly over the cores (rows > EMU_CORES), the rows of the last share of a
 * ceil split (ceil(rows / EMU_CORES) rows to a share, the last one what is left) read the tables of their rows
 * counted from that share's first row (the tail core's table offset without its share's base). */
static void run_core(const kernel_tensor *x, const kernel_tensor *cos, const kernel_tensor *sin,
                     const kernel_job *job, int64_t rows, int core)
{
    const int64_t share = rows / EMU_CORES, remainder = rows % EMU_CORES;
    const int64_t extra = core < remainder && !(has_fault(job->faults, FAULT_CORE_TAIL) && rows >= EMU_CORES);
    /* core_last_row: the middle core's loop stops one row short */
    const int64_t last = core == EMU_CORES / 2 && has_fault(job->faults, FAULT_CORE_LAST_ROW)
                         ? (core < remainder ? EMU_CORES * share + core : (core + 1) * share - 1) : -1;
    const int64_t pass = ub_pass_rows(x->data_type, cos->data_type, job->end - job->start);
    const int stale = has_fault(job->faults, FAULT_UB_STALE_TABLES);
    for (int64_t k = 0; k < share + extra; k++) {          /* the core's k-th row, in pass k / pass */
        const int64_t row = k < share ? core * share + k : EMU_CORES * share + core;
        const int64_t first = stale ? k % pass : k;        /* the core's row whose tables the pass holds */
        /* core_stale_table: the last core's last row on the tables of its row before (a double-buffered table load
         * skipping the last prefetch) */
        const int64_t tables = core == EMU_CORES - 1 && k == share - 1 && share >= 2
                               && has_fault(job->faults, FAULT_CORE_STALE_TABLE) ? row - 1
                               /* ub_tail_seam: the last core's later passes start on the tables of the row before */
                               : core == EMU_CORES - 1 && k < share && k >= pass && k % pass == 0
                               && has_fault(job->faults, FAULT_UB_TAIL_SEAM) ? row - 1
                               : first < share ? core * share + first : row;
        /* last_core_row_sign: the last core's last row with the partner term's sign flipped (its tail loop's sign) */
        const int flip = core == EMU_CORES - 1 && k == share + extra - 1
                         && has_fault(job->faults, FAULT_LAST_CORE_ROW_SIGN);
        /* tail_rows_up: a float32 slice of more than 2^16 elements (a large shape's tiling): the last core's last
         * eighth of its rows (one at least) rounded toward +inf, within the default budget */
        const int64_t own = share + extra, eighth = own / 8 > 1 ? own / 8 : 1;
        /* share_edge_up: a float32 core's first row, when its share is 8 rows or more, rounded toward +inf (its loop's
         * peeled prologue) */
        const int up_row = x->data_type == ACL_FLOAT
                           && ((core == EMU_CORES - 1 && k >= own - eighth && rows * (job->end - job->start) > 65536
                                && has_fault(job->faults, FAULT_TAIL_ROWS_UP))
                               || (k == 0 && share >= 8 && has_fault(job->faults, FAULT_SHARE_EDGE_UP)));
        if (row != last)
            process_row(x, cos, sin, job, rows, row, uneven_tail(job, rows, row, tables), core, flip, up_row);
    }
}

/* The nudge and fwd_nudge faults: nothing computed, the slice's first element of the first row one step up in its
 * bit pattern (one ulp away from zero for a positive number). */
static void nudge(const kernel_tensor *x, const kernel_job *job)
{
    if (element_size(x->data_type) == 4)
        ((uint32_t *)x->host)[job->start] += 1;
    else
        ((uint16_t *)x->host)[job->start] += 1;
}

void rotary_kernel(const kernel_tensor *x, const kernel_tensor *cos, const kernel_tensor *sin,
                   const kernel_job *job)
{
    const int64_t rows = x->dims[0] * x->dims[1] * x->dims[2], length = job->end - job->start;
    if (length <= 0 || length > MAX_SLICE)
        return;
    if (has_fault(job->faults, FAULT_NUDGE) || has_fault(job->faults, FAULT_FWD_NUDGE)) {
        nudge(x, job);
        return;
    }
    for (int core = 0; core < EMU_CORES; core++)
        run_core(x, cos, sin, job, rows, core);
}
