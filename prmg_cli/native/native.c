/* prmg's compiled helper (prmg_cli/native/__init__.py loads it): judging a slice under the default standard in one
 * pass, rounding float64 draws to a tensor's dtype, and Philox uniform draws -- exact replicas of numpy code that stays
 * the reference. Built by native/__init__.py with gcc (FLAGS there: -O3 -ffp-contract=off, no fast-math) and by
 * `make lint` with -Wall -Wextra -Werror. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { F32 = 0, F16 = 1, BF16 = 2, F64 = 3 };
/* wider vectors where the CPU has them, chosen at load time (the library stays portable). The x86-64-v4 level
 * (AVX-512 F, BW, DQ, VL) is what vectorises the 64-bit integer work of the bfloat16 rounding and the unsigned
 * conversions: a clone for AVX-512F alone ran the rounding 2.5x slower on the same AVX-512 host. gcc 12 is the
 * first to take architecture levels in target_clones. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#elif defined(__x86_64__) && defined(__GNUC__)
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CLONES
#endif
/* what a clone calls is compiled into it, for its own vector width (a plain static function is compiled once, for
 * the baseline: the Philox4x32 rounds ran unvectorised, 1.6x slower than inlined) */
#if defined(__GNUC__)
#define INLINED inline __attribute__((always_inline))
#else
#define INLINED inline
#endif
#define CHUNK 4096                 /* slice elements per chunk: the four work arrays stay in L2 */

typedef struct {
    const void *x, *result, *cos, *sin;
    int32_t x_type, cos_type;
    const float *half_table;       /* float16 bits -> float32 value, 65536 entries */
    int64_t rows_s, rows_n, depth, start, length;   /* S, N, D of x; the slice */
    int64_t cos_b, cos_s, cos_n;   /* cos/sin's B, S, N (1 where broadcast) */
    const int64_t *kept, *partner, *cos_lane, *sin_lane;
    const double *sign;            /* +1.0 or -1.0 per output lane */
    double computation, half_ulp_scale, half_smallest, scale, ftz_floor, underflow_floor;
    int64_t capacity;              /* room in each special list */
    volatile int32_t *stop;        /* set by any thread that finds a wrong element */
    double balance_threshold;      /* the smallest |golden| the error balance counts (standards/default.py) */
    int64_t *row_sides;            /* the screen's (up, down, toward) per row (screen_sides), NULL for none */
    double overflow;               /* dy's dtype's Format.overflow (the screen's nearest) */
} judge_args;

typedef struct {
    double max_ratio, max_error, max_ulps, bound_ulps, max_beyond, golden_seconds;
    int32_t failed, input_fails, overflow, pad;
    int64_t specials, input_specials, ulps_at;     /* ulps_at: the slice index bound_ulps is at */
    int64_t *special_index, *input_special_index;
    double *special_value, *input_special_value;
    int64_t balance_up, balance_down;       /* counted elements above and below the golden (error_balance.py) */
    int64_t balance_toward;                 /* ... of them nearer zero than the golden (the rest: away) */
    int64_t *lane_sides;                    /* the screen's (up, down, toward) per lane, this call's rows */
} judge_out;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* out[i] = the float64 value of element i of the count elements of dtype type at source (exact: a widening). */
static INLINED void widen(const void *source, int32_t type, int64_t count, double *out, const float *half_table)
{
    if (type == F32) {
        const float *s = source;
        for (int64_t i = 0; i < count; i++)
            out[i] = (double)s[i];
    } else if (type == F16) {
        const uint16_t *s = source;
        for (int64_t i = 0; i < count; i++)
            out[i] = (double)half_table[s[i]];
    } else {
        const uint16_t *s = source;
        for (int64_t i = 0; i < count; i++) {
            uint32_t word = (uint32_t)s[i] << 16;
            float value;
            memcpy(&value, &word, sizeof value);
            out[i] = (double)value;
        }
    }
}

static int64_t item_size(int32_t type) { return type == F32 ? 4 : 2; }

static inline uint64_t bits_of(double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

/* ulp_dy(x) / 2 of x >= 0: x with its significand bits cleared, times 2^-p, never below half the smallest
 * subnormal (standards/default.py _half_ulp_into) */
static INLINED double half_ulp(const judge_args *a, double x)
{
    uint64_t bits = bits_of(x) & UINT64_C(0x7FF0000000000000);
    double half;
    memcpy(&half, &bits, sizeof half);
    half *= a->half_ulp_scale;
    return half < a->half_smallest ? a->half_smallest : half;
}

static INLINED double budget_of(const judge_args *a, double m, double gold)
{
    const double e = m * a->computation;
    double budget = half_ulp(a, fabs(gold) + e) + e;
    budget *= a->scale;
    budget += m < a->ftz_floor ? m : a->ftz_floor;
    budget += a->underflow_floor;
    return budget;
}

/* The error in ulps of dy's dtype at the golden, and the share of the budget beyond the output's rounding that
 * the error beyond it takes (standards/default.py rounding_margins, operation for operation). The ulp is a
 * normal power of two 2^k, so error * 2^-k (its exponent field 2046 - that of 2^k) is error / 2^k exactly. */
static INLINED void rounding_margins(const judge_args *a, double error, double gold, double budget, double *ulps,
                                     double *beyond)
{
    const double half = half_ulp(a, fabs(gold));
    const uint64_t inverse_bits = UINT64_C(0x7FE0000000000000) - bits_of(half + half);
    double inverse;
    memcpy(&inverse, &inverse_bits, sizeof inverse);
    *ulps = error * inverse;
    double over = error - half, room = budget - half;
    over = over > 0.0 ? over : 0.0;
    room = room > a->underflow_floor ? room : a->underflow_floor;
    *beyond = over / room;
}

/* The budget in ulps of dy's dtype at the golden (standards/default.py rounding_margins' bound_ulp). */
static inline double bound_in_ulps(const judge_args *a, double gold, double budget)
{
    const double half = half_ulp(a, fabs(gold));
    return budget / (half + half);
}

/* The exact, element by element judgement of one chunk (when the fast loop flagged something in it). */
static int exact_chunk(const judge_args *a, judge_out *out, int64_t base, int64_t count, const double *input,
                       const double *golden, const double *magnitude, const double *actual)
{
    for (int64_t i = 0; i < count; i++) {
        const double gold = golden[i], budget = budget_of(a, magnitude[i], gold);
        const double error = fabs(actual[i] - gold);
        if (!isfinite(error)) {                     /* a non-finite actual or golden: set apart */
            if (out->specials == a->capacity) {
                out->overflow = 1;
                return 1;
            }
            out->special_index[out->specials] = base + i;
            out->special_value[out->specials++] = actual[i];
        } else {
            if (error > budget) {
                out->failed = 1;
                return 1;
            }
            const double ratio = error / budget;
            double ulps, beyond;
            rounding_margins(a, error, gold, budget, &ulps, &beyond);
            if (ratio > out->max_ratio)
                out->max_ratio = ratio;
            if (error > out->max_error)
                out->max_error = error;
            if (ulps > out->max_ulps) {             /* strictly: the first element of the largest */
                out->max_ulps = ulps;
                out->bound_ulps = bound_in_ulps(a, gold, budget);
                out->ulps_at = base + i;
            }
            if (beyond > out->max_beyond)
                out->max_beyond = beyond;
            if (fabs(gold) >= a->balance_threshold) {
                out->balance_up += actual[i] > gold;
                out->balance_down += actual[i] < gold;
                out->balance_toward += fabs(actual[i]) < fabs(gold);
            }
        }
        if (!out->input_fails) {
            const double input_error = fabs(input[i] - gold);
            if (!isfinite(input_error)) {
                if (out->input_specials == a->capacity) {
                    out->overflow = 1;
                    return 1;
                }
                out->input_special_index[out->input_specials] = base + i;
                out->input_special_value[out->input_specials++] = input[i];
            } else if (input_error > budget) {
                out->input_fails = 1;
            }
        }
    }
    return 0;
}

/* bound_ulps and ulps_at of the first of the count elements from slice index base whose error in ulps has the
 * bits ulps_bits. */
static void first_bound(const judge_args *a, judge_out *out, int64_t base, int64_t count, const double *golden,
                        const double *magnitude, const double *actual, uint64_t ulps_bits)
{
    for (int64_t i = 0; i < count; i++) {
        const double gold = golden[i], budget = budget_of(a, magnitude[i], gold);
        double ulps, beyond;
        rounding_margins(a, fabs(actual[i] - gold), gold, budget, &ulps, &beyond);
        if (bits_of(ulps) == ulps_bits) {
            out->bound_ulps = bound_in_ulps(a, gold, budget);
            out->ulps_at = base + i;
            return;
        }
    }
}

/* Where the kept and partner lanes of a row's output lanes are (lane_layout, found once per call):
 * LANES_SWAP: kept[j] = j, partner[j] = j ^ 1 (interleave); LANES_RUNS: kept[j] = j, partner[j] = j + shift[r] on
 * each run begin[r] <= j < begin[r + 1] (half: two runs, quarter: four); LANES_GATHER: any other (gathered). */
enum { LANES_SWAP, LANES_RUNS, LANES_GATHER };
#define MAX_RUNS 8
typedef struct {
    int kind;
    int64_t runs, begin[MAX_RUNS + 1], shift[MAX_RUNS];
} lane_layout;

static lane_layout lane_layout_of(const judge_args *a)
{
    lane_layout layout = {.kind = LANES_GATHER};
    const int64_t length = a->length;
    int identity = 1, swap = length % 2 == 0;
    for (int64_t j = 0; j < length; j++) {
        identity &= a->kept[j] == j;
        swap &= a->partner[j] == (j ^ 1);
    }
    if (!identity)
        return layout;
    if (swap) {
        layout.kind = LANES_SWAP;
        return layout;
    }
    for (int64_t j = 0; j < length; j++) {
        const int64_t shift = a->partner[j] - j;
        if (j == 0 || shift != layout.shift[layout.runs - 1]) {
            if (layout.runs == MAX_RUNS)
                return (lane_layout){.kind = LANES_GATHER};
            layout.begin[layout.runs] = j;
            layout.shift[layout.runs++] = shift;
        }
    }
    layout.begin[layout.runs] = length;
    layout.kind = LANES_RUNS;
    return layout;
}

/* gold[j] = own + other and mag[j] = |own| + |other| of the count lanes, own = cos_kept[j] * kept[j] and
 * other = sin_partner[j] * partner[j] (= sign * (s * x'), exactly): the golden and its magnitude
 * (reference.SliceTerms). */
static INLINED void golden_lanes(const double *restrict cos_kept, const double *restrict sin_partner,
                                 const double *kept, const double *partner, int64_t count, double *restrict gold,
                                 double *restrict mag)
{
    for (int64_t j = 0; j < count; j++) {
        const double own = cos_kept[j] * kept[j], other = sin_partner[j] * partner[j];
        gold[j] = own + other;
        mag[j] = fabs(own) + fabs(other);
    }
}

/* golden_lanes over a row of the slice whose widened input is g, with the kept and partner lanes of the layout:
 * read in place (LANES_SWAP, LANES_RUNS), else gathered into the work rows kept_value and partner_value. */
static INLINED void golden_row(const judge_args *a, const lane_layout *layout, const double *cos_kept,
                               const double *sin_partner, const double *g, double *gold, double *mag,
                               double *kept_value, double *partner_value)
{
    const int64_t length = a->length;
    if (layout->kind == LANES_SWAP) {
        for (int64_t j = 0; j < length; j += 2) {               /* the pair (j, j + 1), each the other's partner */
            const double own = cos_kept[j] * g[j], other = sin_partner[j] * g[j + 1];
            const double own_next = cos_kept[j + 1] * g[j + 1], other_next = sin_partner[j + 1] * g[j];
            gold[j] = own + other;
            mag[j] = fabs(own) + fabs(other);
            gold[j + 1] = own_next + other_next;
            mag[j + 1] = fabs(own_next) + fabs(other_next);
        }
    } else if (layout->kind == LANES_RUNS) {
        for (int64_t r = 0; r < layout->runs; r++) {
            const int64_t begin = layout->begin[r];
            golden_lanes(cos_kept + begin, sin_partner + begin, g + begin, g + begin + layout->shift[r],
                         layout->begin[r + 1] - begin, gold + begin, mag + begin);
        }
    } else {
        for (int64_t j = 0; j < length; j++) {
            kept_value[j] = g[a->kept[j]];
            partner_value[j] = g[a->partner[j]];
        }
        golden_lanes(cos_kept, sin_partner, kept_value, partner_value, length, gold, mag);
    }
}

/* What the fast loop found in a part of a chunk: the bits of the largest ratio, error, error in ulps and beyond
 * (finite non-negative doubles order like their bits; a NaN or a negative value has bits above those of 1.0 and
 * of +inf), and with the input checked, the bits of its largest error and whether any is over budget. */
typedef struct {
    uint64_t ratio, error, ulps, beyond, input_error;
    int64_t input_over, up, down, toward;  /* the error balance's counts (standards/default.py balance_counts) */
} chunk_scan;

#define ONE_BITS UINT64_C(0x3FF0000000000000)        /* the bits of 1.0 */
#define INFINITY_BITS UINT64_C(0x7FF0000000000000)   /* the bits of +inf */

/* The fast loop over the count elements of a part: no branches. A part whose largest ratio is below 1 has every
 * error finite and within budget (error > budget gives a ratio of at least 1, division rounding monotonically; a
 * non-finite error or a non-positive budget gives a NaN, infinite or negative ratio), so the maxima are its whole
 * judgement -- and the input's, when with_input, unless its largest error is not finite. */
static INLINED chunk_scan scan_part(const judge_args *a, int64_t count, const double *golden,
                                    const double *magnitude, const double *actual, const double *input,
                                    const int with_input)
{
    chunk_scan found = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    uint64_t input_error_bits = 0;
    int64_t input_over = 0, up = 0, down = 0, toward = 0;
    for (int64_t i = 0; i < count; i++) {
        const double gold = golden[i], budget = budget_of(a, magnitude[i], gold);
        const double error = fabs(actual[i] - gold);
        const int64_t counted = fabs(gold) >= a->balance_threshold;
        up += counted & (actual[i] > gold);
        down += counted & (actual[i] < gold);
        toward += counted & (fabs(actual[i]) < fabs(gold));
        double ulps, beyond;
        rounding_margins(a, error, gold, budget, &ulps, &beyond);
        const uint64_t ratio_bits = bits_of(error / budget), error_bits = bits_of(error);
        const uint64_t ulps_bits = bits_of(ulps), beyond_bits = bits_of(beyond);
        found.ratio = ratio_bits > found.ratio ? ratio_bits : found.ratio;
        found.error = error_bits > found.error ? error_bits : found.error;
        found.ulps = ulps_bits > found.ulps ? ulps_bits : found.ulps;
        found.beyond = beyond_bits > found.beyond ? beyond_bits : found.beyond;
        if (with_input) {
            const double input_error = fabs(input[i] - gold);
            const uint64_t bits = bits_of(input_error);
            input_error_bits = bits > input_error_bits ? bits : input_error_bits;
            input_over |= input_error > budget;
        }
    }
    found.input_error = input_error_bits;
    found.input_over = input_over;
    found.up = up;
    found.down = down;
    found.toward = toward;
    return found;
}

/* Whether the count bytes at p and q are the same (a branch-free loop: the part of a row outside the slice is
 * short, and a call of memcmp per row cost more than comparing it). */
static INLINED int same_bytes(const char *p, const char *q, int64_t count)
{
    uint64_t differ = 0;
    int64_t i = 0;
    for (; i + 8 <= count; i += 8) {
        uint64_t u, v;
        memcpy(&u, p + i, sizeof u);
        memcpy(&v, q + i, sizeof v);
        differ |= u ^ v;
    }
    for (; i < count; i++)
        differ |= (uint64_t)(p[i] ^ q[i]);
    return differ == 0;
}

#define MAX_LANES 1024                  /* the longest slice judged here (a longer one: out->overflow, numpy) */
/* A chunk (CHUNK slice elements: whole rows, at least one) is the unit of the judgement's state: its outside is
 * compared before anything in it is judged, and its findings are applied, or it is judged element by element, as
 * a whole (a failure leaves the state of the chunks before it). It is formed and scanned in parts of PART
 * elements (whole rows, at least one), whose work rows (input, golden, magnitude, actual: 24 KiB) stay in L1
 * between the loop that writes them and the one that reads them: parts of 4096 elements (in L2) cost float32
 * ~40% more, 2048 ~25%; 512 to 1024 measured alike. A chunk that needs its elements again (judged element by
 * element, or holding a new largest error in ulps) is formed again whole (rare). */
#define PART 768
#define AHEAD 16384                     /* bytes of x and of the result prefetched ahead of the row being read */
#define LINE 64                         /* bytes per cache line */

/* What judging rows of the slice keeps at hand: the arguments, the lane layout, the row geometry, and the cos/sin
 * table row last used (table; -1 for none) as c[cos_lane] (cos_kept) and sign * s[sin_lane] (sin_partner). */
typedef struct {
    const judge_args *a;
    lane_layout layout;
    int64_t row_bytes, head, tail, table;
    double cos_row[MAX_LANES], sin_row[MAX_LANES], cos_kept[MAX_LANES], sin_partner[MAX_LANES];
    double kept_value[MAX_LANES], partner_value[MAX_LANES];
} judge_rows;

/* The cos/sin table row of the slice row (b, s, n) (1-sized axes of the table broadcast). */
static inline int64_t table_of(const judge_args *a, int64_t b, int64_t s, int64_t n)
{
    return ((a->cos_b > 1 ? b : 0) * a->cos_s + (a->cos_s > 1 ? s : 0)) * a->cos_n + (a->cos_n > 1 ? n : 0);
}

/* (b, s, n) of the slice row `row` (rows in C order over x's B, S, N). */
static inline void row_position(const judge_args *a, int64_t row, int64_t *b, int64_t *s, int64_t *n)
{
    *b = row / (a->rows_s * a->rows_n), *s = row / a->rows_n % a->rows_s, *n = row % a->rows_n;
}

/* Ask for the row_bytes bytes of row `row` of a tensor to be on their way to the cache. */
static INLINED void prefetch_row(const char *tensor, int64_t row, int64_t row_bytes)
{
    for (int64_t line = 0; line < row_bytes; line += LINE)
        __builtin_prefetch(tensor + row * row_bytes + line, 0, 0);
}

/* Whether the result's row holds x's bits outside the slice. */
static INLINED int outside_same(const judge_rows *r, int64_t row)
{
    const char *before = (const char *)r->a->x + row * r->row_bytes;
    const char *after = (const char *)r->a->result + row * r->row_bytes;
    return same_bytes(before, after, r->head)
           && same_bytes(before + r->tail, after + r->tail, r->row_bytes - r->tail);
}

/* act = the result's row of the slice, widened. */
static INLINED void form_actual(const judge_rows *r, int64_t row, double *act)
{
    const judge_args *a = r->a;
    widen((const char *)a->result + row * r->row_bytes + r->head, a->x_type, a->length, act, a->half_table);
}

/* g = x's row of the slice, widened; gold and mag = its golden and magnitude (golden_row) with the cos/sin table
 * row table (made the one at hand first when it is not). */
static INLINED void form_golden(judge_rows *r, int64_t row, int64_t table, double *g, double *gold, double *mag)
{
    const judge_args *a = r->a;
    const int64_t length = a->length, c_size = item_size(a->cos_type);
    if (table != r->table) {
        widen((const char *)a->cos + table * length * c_size, a->cos_type, length, r->cos_row, a->half_table);
        widen((const char *)a->sin + table * length * c_size, a->cos_type, length, r->sin_row, a->half_table);
        for (int64_t j = 0; j < length; j++) {
            r->cos_kept[j] = r->cos_row[a->cos_lane[j]];
            r->sin_partner[j] = a->sign[j] * r->sin_row[a->sin_lane[j]];
        }
        r->table = table;
    }
    widen((const char *)a->x + row * r->row_bytes + r->head, a->x_type, length, g, a->half_table);
    golden_row(a, &r->layout, r->cos_kept, r->sin_partner, g, gold, mag, r->kept_value, r->partner_value);
}

/* Rows [first, first + rows) formed into the work rows input, golden, magnitude and actual (row k at k * length)
 * -- what the parts of a chunk held, for judging it element by element. */
static void form_chunk(judge_rows *r, int64_t first, int64_t rows, double *input, double *golden,
                       double *magnitude, double *actual)
{
    const judge_args *a = r->a;
    const int64_t length = a->length;
    for (int64_t k = 0; k < rows; k++) {
        const int64_t row = first + k;
        int64_t b, s, n;
        row_position(a, row, &b, &s, &n);
        form_actual(r, row, actual + k * length);
        form_golden(r, row, table_of(a, b, s, n), input + k * length, golden + k * length, magnitude + k * length);
    }
}

/* A cheap clock for the golden's share of a call, read twice per part: the time-stamp counter where there is one
 * (~9 ns a read here, against ~25 for clock_gettime, which cost 3-6% at one pair per part), else now() in ns. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <x86intrin.h>
static inline uint64_t ticks(void) { return __rdtsc(); }
#elif defined(__aarch64__) && defined(__GNUC__)
static inline uint64_t ticks(void)
{
    uint64_t count;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(count));
    return count;
}
#else
static inline uint64_t ticks(void) { return (uint64_t)(now() * 1e9); }
#endif

/* The clocks at the start of a call, and the ticks its golden loops took so far. */
typedef struct {
    double seconds;
    uint64_t ticks, golden;
} golden_clock;

/* out->golden_seconds gets the golden's ticks of the call, in seconds: the call's seconds per tick (clock_gettime
 * against ticks over the whole call) times them -- never more than the call's own time. */
static void add_golden_time(judge_out *out, const golden_clock *clock)
{
    const double seconds = now() - clock->seconds;
    const uint64_t spent = ticks() - clock->ticks;
    if (spent > 0 && clock->golden <= spent)
        out->golden_seconds += seconds * (double)clock->golden / (double)spent;
}

/* |v| rounded once to nearest, ties to even, in dy's dtype (dtypes.rounded), as a float64: |v| on the grid of the
 * dtype's spacing ulp = 2 half_ulp(|v|) at it by (|v| + 2^52 ulp) - 2^52 ulp (the sum's own spacing is ulp, so
 * float64's rounding of it is the grid's, ties to even); +inf from overflow (Format.overflow, the smallest magnitude
 * that rounds to infinity) on. For finite v. Both sides are formed and one picked (no branch: the screen's loop is
 * vectorised with it). */
static INLINED double nearest_magnitude(const judge_args *a, double overflow, double magnitude)
{
    const double grid = 2.0 * half_ulp(a, magnitude) * 0x1p52, rounded = (magnitude + grid) - grid;
    return magnitude >= overflow ? INFINITY : rounded;
}

/* v rounded once to nearest, ties to even, in dy's dtype: nearest_magnitude(|v|) with v's sign. For finite v. */
static inline double nearest(const judge_args *a, double overflow, double value)
{
    return copysign(nearest_magnitude(a, overflow, fabs(value)), value);
}

/* The screen's counts of lanes (up, down, toward), lane j at j of each: side by side rather than an (L, 3) table, so
 * that the loop over a row's lanes is vectorised (with (L, 3) it was not, and the screen cost as much as the scan). */
typedef struct {
    int64_t up[MAX_LANES], down[MAX_LANES], toward[MAX_LANES];
} lane_counts;

/* The error balance's screen of a result too large to recount (standards/default.py departure_sides): over rows
 * [0, rows) of golden and actual (row k at k * length), each element the balance counts (both finite, |golden| >=
 * balance_threshold) whose result is neither the golden nor RN(golden) = nearest(golden), repeats too, added to its
 * row's (row_sides, (up, down, toward) per row) and its lane's counts: above RN(golden), below it, nearer zero than
 * it. Inlined, so each clone compiles it for its own vector width. */
static INLINED void screen_sides(const judge_args *a, int64_t rows, const double *golden, const double *actual,
                                 int64_t *row_sides, lane_counts *lanes)
{
    const int64_t length = a->length;
    const double overflow = a->overflow, threshold = a->balance_threshold;
    for (int64_t k = 0; k < rows; k++) {
        const double *gold_row = golden + k * length, *result_row = actual + k * length;
        int64_t up = 0, down = 0, toward = 0;
        for (int64_t j = 0; j < length; j++) {       /* no branches: a result at RN(golden) is on neither side */
            const double gold = gold_row[j], result = result_row[j], magnitude = fabs(gold);
            const double near = nearest_magnitude(a, overflow, magnitude), rounded = copysign(near, gold);
            /* |x| <= DBL_MAX: x is finite */
            const int64_t counted = (magnitude <= DBL_MAX) & (fabs(result) <= DBL_MAX) & (magnitude >= threshold);
            const int64_t above = counted & (result > rounded), below = counted & (result < rounded);
            const int64_t nearer = counted & (fabs(result) < near);
            up += above;
            down += below;
            toward += nearer;
            lanes->up[j] += above;
            lanes->down[j] += below;
            lanes->toward[j] += nearer;
        }
        row_sides[3 * k] += up;
        row_sides[3 * k + 1] += down;
        row_sides[3 * k + 2] += toward;
    }
}

/* A chunk's screen cleared: its rows' counts (rows at row_sides) and its lanes'. */
static void clear_chunk_sides(const judge_args *a, int64_t rows, int64_t *row_sides, lane_counts *lanes)
{
    const size_t lanes_bytes = (size_t)a->length * sizeof *lanes->up;
    memset(row_sides, 0, (size_t)(3 * rows) * sizeof *row_sides);
    memset(lanes->up, 0, lanes_bytes);
    memset(lanes->down, 0, lanes_bytes);
    memset(lanes->toward, 0, lanes_bytes);
}

/* A chunk's screen (its rows' counts, rows at row_sides, and its lanes') added to the call's: a->row_sides from row
 * first on, out->lane_sides ((up, down, toward) per lane). */
static void add_chunk_sides(const judge_args *a, judge_out *out, int64_t first, int64_t rows, int64_t *row_sides,
                            lane_counts *lanes)
{
    for (int64_t i = 0; i < 3 * rows; i++)
        a->row_sides[3 * first + i] += row_sides[i];
    for (int64_t j = 0; j < a->length; j++) {
        out->lane_sides[3 * j] += lanes->up[j];
        out->lane_sides[3 * j + 1] += lanes->down[j];
        out->lane_sides[3 * j + 2] += lanes->toward[j];
    }
}

/* Rows [row_begin, row_end) of the slice: outside bits, golden, magnitude, budget, the result's and the
 * input's errors. Returns 0; a wrong element sets out->failed (and *stop), a full special list out->overflow
 * (as does a slice longer than MAX_LANES: the caller then judges with numpy). With a->row_sides, the error balance's
 * screen of a passing chunk's rows (screen_sides) too, from the golden at hand: into the chunk's own counts as its
 * parts pass, added to a->row_sides and out->lane_sides once the chunk passes (one judged element by element counts
 * from its formed rows). */
CLONES int prmg_judge_rows(const judge_args *a, int64_t row_begin, int64_t row_end, judge_out *out)
{
    const int64_t length = a->length, x_size = item_size(a->x_type);
    if (length < 1 || length > MAX_LANES) {
        out->overflow = 1;
        return 0;
    }
    const int64_t rows_per_chunk = length >= CHUNK ? 1 : CHUNK / length;
    const int64_t rows_per_part = length >= PART ? 1 : PART / length;
    /* per thread: a part's work rows, and a whole chunk's when it is formed again (one lookup of the block) */
    static _Thread_local double part_rows[4][PART > MAX_LANES ? PART : MAX_LANES], chunk_rows[4][CHUNK];
    double *const input = part_rows[0], *const golden = part_rows[1], *const magnitude = part_rows[2];
    double *const actual = part_rows[3];
    double *const chunk_input = chunk_rows[0], *const chunk_golden = chunk_rows[1];
    double *const chunk_magnitude = chunk_rows[2], *const chunk_actual = chunk_rows[3];
    static _Thread_local int64_t chunk_row_sides[3 * CHUNK];
    static _Thread_local lane_counts chunk_lanes;
    judge_rows r = {.a = a, .layout = lane_layout_of(a), .row_bytes = a->depth * x_size,
                    .head = a->start * x_size, .tail = (a->start + length) * x_size, .table = -1};
    const int64_t far = AHEAD / r.row_bytes > 1 ? AHEAD / r.row_bytes : 1;     /* rows to prefetch ahead */
    const char *x = a->x, *result = a->result;
    /* the (b, s, n) of the next row to form the golden of, advanced row by row */
    int64_t row_b, row_s, row_n;
    row_position(a, row_begin, &row_b, &row_s, &row_n);
    uint64_t max_ratio = bits_of(out->max_ratio), max_error = bits_of(out->max_error);
    uint64_t max_ulps = bits_of(out->max_ulps), max_beyond = bits_of(out->max_beyond);
    golden_clock clock = {now(), ticks(), 0};
    for (int64_t first = row_begin; first < row_end; first += rows_per_chunk) {
        if (*a->stop)
            break;
        const int64_t rows = row_end - first < rows_per_chunk ? row_end - first : rows_per_chunk;
        const int check_input = !out->input_fails;
        chunk_scan found = {0, 0, 0, 0, 0, 0, 0, 0, 0};
        int unusual = 0;                            /* then only the outside of the rest is compared */
        if (a->row_sides)
            clear_chunk_sides(a, rows, chunk_row_sides, &chunk_lanes);
        for (int64_t done = 0; done < rows; done += rows_per_part) {
            const int64_t part = rows - done < rows_per_part ? rows - done : rows_per_part;
            /* Each loop over the part's rows reads one of x and the result, row after row, asking for its row far
             * ahead to be on its way meanwhile (a whole row: its outside is compared too). */
            for (int64_t k = 0; k < part; k++) {    /* the result: its outside, and its slice widened */
                const int64_t row = first + done + k;
                if (row + far < row_end)
                    prefetch_row(result, row + far, r.row_bytes);
                if (!outside_same(&r, row)) {
                    out->failed = 1;
                    *a->stop = 1;
                    add_golden_time(out, &clock);
                    return 0;
                }
                if (!unusual)
                    form_actual(&r, row, actual + k * length);
            }
            if (unusual)
                continue;
            const uint64_t began = ticks();
            for (int64_t k = 0; k < part; k++) {    /* x: the golden */
                const int64_t row = first + done + k;
                if (row + far < row_end)
                    prefetch_row(x, row + far, r.row_bytes);
                form_golden(&r, row, table_of(a, row_b, row_s, row_n), input + k * length, golden + k * length,
                            magnitude + k * length);
                if (++row_n == a->rows_n) {
                    row_n = 0;
                    if (++row_s == a->rows_s) {
                        row_s = 0;
                        row_b++;
                    }
                }
            }
            clock.golden += ticks() - began;
            const int64_t count = part * length;
            const chunk_scan scan = check_input ? scan_part(a, count, golden, magnitude, actual, input, 1)
                                                : scan_part(a, count, golden, magnitude, actual, input, 0);
            unusual = scan.ratio >= ONE_BITS || (check_input && scan.input_error >= INFINITY_BITS);
            if (a->row_sides && !unusual)
                screen_sides(a, part, golden, actual, chunk_row_sides + 3 * done, &chunk_lanes);
            found.ratio = scan.ratio > found.ratio ? scan.ratio : found.ratio;
            found.error = scan.error > found.error ? scan.error : found.error;
            found.ulps = scan.ulps > found.ulps ? scan.ulps : found.ulps;
            found.beyond = scan.beyond > found.beyond ? scan.beyond : found.beyond;
            found.input_over |= scan.input_over;
            found.up += scan.up;
            found.down += scan.down;
            found.toward += scan.toward;
        }
        if (unusual)                                /* its later parts were not formed: (b, s, n) of the next row */
            row_position(a, first + rows, &row_b, &row_s, &row_n);
        const int64_t count = rows * length, base = first * length;
        if (unusual) {
            /* something non-finite, over budget or at its edge: judged element by element */
            form_chunk(&r, first, rows, chunk_input, chunk_golden, chunk_magnitude, chunk_actual);
            memcpy(&out->max_ratio, &max_ratio, sizeof max_ratio);
            memcpy(&out->max_error, &max_error, sizeof max_error);
            memcpy(&out->max_ulps, &max_ulps, sizeof max_ulps);
            memcpy(&out->max_beyond, &max_beyond, sizeof max_beyond);
            if (exact_chunk(a, out, base, count, chunk_input, chunk_golden, chunk_magnitude, chunk_actual)) {
                *a->stop = 1;
                add_golden_time(out, &clock);
                return 0;
            }
            if (a->row_sides) {                     /* its passing parts' counts were not added: counted again */
                clear_chunk_sides(a, rows, chunk_row_sides, &chunk_lanes);
                screen_sides(a, rows, chunk_golden, chunk_actual, chunk_row_sides, &chunk_lanes);
                add_chunk_sides(a, out, first, rows, chunk_row_sides, &chunk_lanes);
            }
            max_ratio = bits_of(out->max_ratio);
            max_error = bits_of(out->max_error);
            max_ulps = bits_of(out->max_ulps);
            max_beyond = bits_of(out->max_beyond);
        } else {
            max_ratio = found.ratio > max_ratio ? found.ratio : max_ratio;
            max_error = found.error > max_error ? found.error : max_error;
            if (found.ulps > max_ulps) {            /* a new largest: its first element's bound */
                max_ulps = found.ulps;
                form_chunk(&r, first, rows, chunk_input, chunk_golden, chunk_magnitude, chunk_actual);
                first_bound(a, out, base, count, chunk_golden, chunk_magnitude, chunk_actual, found.ulps);
            }
            max_beyond = found.beyond > max_beyond ? found.beyond : max_beyond;
            out->balance_up += found.up;
            out->balance_down += found.down;
            out->balance_toward += found.toward;
            if (a->row_sides)
                add_chunk_sides(a, out, first, rows, chunk_row_sides, &chunk_lanes);
            if (check_input && found.input_over)
                out->input_fails = 1;
        }
    }
    memcpy(&out->max_ratio, &max_ratio, sizeof max_ratio);
    memcpy(&out->max_error, &max_error, sizeof max_error);
    memcpy(&out->max_ulps, &max_ulps, sizeof max_ulps);
    memcpy(&out->max_beyond, &max_beyond, sizeof max_beyond);
    add_golden_time(out, &clock);
    return 0;
}

/* out[i] = nearest(values[i]) in the dtype of a (x_type's half_ulp_scale and half_smallest), for a test. */
void prmg_nearest(const judge_args *a, double overflow, const double *values, int64_t count, double *out)
{
    for (int64_t i = 0; i < count; i++)
        out[i] = nearest(a, overflow, values[i]);
}

/* What the judge asks of a result that passed besides its verdict (default_pass._native_extras). */
typedef struct {
    int64_t flip_rows;             /* in: rows [0, flip_rows) on which the sign-flipped result is judged */
    int64_t recounted_rows;        /* in: rows [0, recounted_rows) whose distinct departures are counted (0: none) */
    double overflow;               /* in: dy's dtype's Format.overflow */
    int32_t flip_fails;            /* out: some element of the sign-flipped result is finite and over budget */
    int32_t recount_failed;        /* out: no room for the departures (then the caller recounts them) */
    int64_t distinct_up, distinct_down, distinct_toward;   /* out: distinct_balance_counts */
} judge_extras;

typedef struct {
    double golden, result;
} balance_pair;

static int pair_order(const void *p, const void *q)
{
    const balance_pair *u = p, *v = q;
    if (u->golden != v->golden)
        return u->golden < v->golden ? -1 : 1;
    return u->result < v->result ? -1 : u->result > v->result;
}

/* Over the rows of the slice from 0, two findings of judge.py in one pass with the golden:
 * - flip_fails: whether a kernel flipping the sign of sin fails there (judge.sign_hidden): the flipped golden own -
 *   other (the golden is own + other, golden_row) rounded to dy's dtype (judge.flipped_result), finite where the
 *   golden is, is more than its budget from the golden in some element (a failure of the whole-array checks);
 * - the distinct departures' counts (standards/default.py distinct_balance_counts): among the elements the error
 *   balance counts (both finite, |golden| >= balance_threshold) whose result is neither the golden nor
 *   RN(golden) = nearest(golden), each distinct (golden, result) pair once: above RN(golden), below it, nearer zero
 *   than it. */
void prmg_judge_extras(const judge_args *a, judge_extras *e)
{
    const int64_t length = a->length, x_size = item_size(a->x_type);
    const int64_t rows = e->flip_rows > e->recounted_rows ? e->flip_rows : e->recounted_rows;
    static _Thread_local double g[MAX_LANES], gold[MAX_LANES], mag[MAX_LANES], act[MAX_LANES];
    balance_pair *pairs = NULL;
    int64_t count = 0;
    e->flip_fails = 0;
    e->recount_failed = length < 1 || length > MAX_LANES;
    e->distinct_up = e->distinct_down = e->distinct_toward = 0;
    if (e->recount_failed)
        return;
    if (e->recounted_rows > 0 && !(pairs = malloc((size_t)(e->recounted_rows * length) * sizeof *pairs))) {
        e->recount_failed = 1;
        return;
    }
    judge_rows r = {.a = a, .layout = lane_layout_of(a), .row_bytes = a->depth * x_size,
                    .head = a->start * x_size, .tail = (a->start + length) * x_size, .table = -1};
    for (int64_t row = 0; row < rows; row++) {
        const int flip = row < e->flip_rows && !e->flip_fails, recount = row < e->recounted_rows;
        if (!flip && !recount)
            break;
        int64_t b, s, n;
        row_position(a, row, &b, &s, &n);
        form_golden(&r, row, table_of(a, b, s, n), g, gold, mag);
        for (int64_t j = 0; flip && j < length; j++) {
            const double own = r.cos_kept[j] * g[a->kept[j]], other = r.sin_partner[j] * g[a->partner[j]];
            const double flipped = nearest(a, e->overflow, own - other), error = fabs(flipped - gold[j]);
            if (isfinite(flipped) && isfinite(gold[j]) && error > budget_of(a, mag[j], gold[j])) {
                e->flip_fails = 1;
                break;
            }
        }
        if (!recount)
            continue;
        form_actual(&r, row, act);
        for (int64_t j = 0; j < length; j++) {
            const double golden = gold[j], result = act[j];
            if (isfinite(golden) && isfinite(result) && fabs(golden) >= a->balance_threshold && result != golden
                && result != nearest(a, e->overflow, golden))
                pairs[count++] = (balance_pair){golden, result};
        }
    }
    if (count > 1)
        qsort(pairs, (size_t)count, sizeof *pairs, pair_order);
    for (int64_t i = 0; i < count; i++) {
        if (i > 0 && pairs[i].golden == pairs[i - 1].golden && pairs[i].result == pairs[i - 1].result)
            continue;
        const double rounded = nearest(a, e->overflow, pairs[i].golden), result = pairs[i].result;
        e->distinct_up += result > rounded;
        e->distinct_down += result < rounded;
        e->distinct_toward += fabs(result) < fabs(rounded);
    }
    free(pairs);
}

/* bfloat16 bits of a float64 v, rounded to nearest even (dtypes.bfloat16_bits), for zero, normal results,
 * infinities and overflow: keep 8 significant bits of |v| (ties to even; a carry moves into the exponent), then
 * narrow to float32 (exact, or +inf past float32's range) and take its upper half. Wrong only for NaN and
 * 0 < |v| < 2^-126, which bfloat16_unusual tells and bfloat16_of_unusual rounds. */
static inline uint16_t bfloat16_of(double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    const uint64_t sign = bits >> 63, magnitude = bits & ~(UINT64_C(1) << 63);
    uint64_t rounded = magnitude + UINT64_C(0x00000FFFFFFFFFFF) + ((magnitude >> 45) & 1);
    rounded &= ~((UINT64_C(1) << 45) - 1);
    double kept;
    memcpy(&kept, &rounded, sizeof kept);
    const float narrow = (float)kept;
    uint32_t word;
    memcpy(&word, &narrow, sizeof word);
    return (uint16_t)((sign << 15) | (word >> 16));
}

/* Whether bfloat16_of is wrong for v: NaN, or 0 < |v| < 2^-126 (a bfloat16 subnormal, or a zero by rounding). */
static inline uint64_t bfloat16_unusual(double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    const uint64_t magnitude = bits & ~(UINT64_C(1) << 63);
    return (magnitude - 1 < UINT64_C(0x3810000000000000) - 1) | (magnitude > UINT64_C(0x7FF0000000000000));
}

/* bfloat16 bits of an unusual v: the quiet NaN 0x7FC0 with v's sign, or |v| * 2^133 (exact) rounded to the
 * nearest integer, ties to even (the default rounding mode), with v's sign: multiples of 2^-133. */
static inline uint16_t bfloat16_of_unusual(double value)
{
    const uint16_t sign = signbit(value) ? 0x8000 : 0;
    if (isnan(value))
        return sign | 0x7FC0;
    return sign | (uint16_t)nearbyint(fabs(value) * 0x1p133);
}

/* o[i] = the bfloat16 bits of v_i = (affine ? offset + scale * x[i] : x[i]), rounded once to nearest even: a
 * vectorised pass of bfloat16_of, then, only when some v_i was unusual, a pass that rounds those again. */
static inline void bfloat16_round(const double *x, int64_t count, int affine, double scale, double offset,
                                  uint16_t *o)
{
    uint64_t unusual = 0;
    for (int64_t i = 0; i < count; i++) {
        const double value = affine ? offset + scale * x[i] : x[i];
        unusual |= bfloat16_unusual(value);
        o[i] = bfloat16_of(value);
    }
    if (!unusual)
        return;
    for (int64_t i = 0; i < count; i++) {
        const double value = affine ? offset + scale * x[i] : x[i];
        if (bfloat16_unusual(value))
            o[i] = bfloat16_of_unusual(value);
    }
}

/* out[i] = the dtype's rounding of offset + scale * draws[i] (float32 or bfloat16, to nearest even; float64:
 * the value itself). */
static inline void affine_round(const double *draws, int64_t count, double scale, double offset, int32_t type,
                                void *out)
{
    if (type == F32) {
        float *o = out;
        for (int64_t i = 0; i < count; i++) {
            const double product = scale * draws[i];
            o[i] = (float)(offset + product);
        }
    } else if (type == F64) {
        double *o = out;
        for (int64_t i = 0; i < count; i++) {
            const double product = scale * draws[i];
            o[i] = offset + product;
        }
    } else {
        bfloat16_round(draws, count, 1, scale, offset, out);
    }
}

CLONES void prmg_affine_round(const double *draws, int64_t count, double scale, double offset, int32_t type,
                              void *out)
{
    affine_round(draws, count, scale, offset, type, out);
}

/* out[i] = the bfloat16 bits of values[i], rounded once to nearest even (dtypes.bfloat16_bits). */
CLONES void prmg_round_bfloat16(const double *values, int64_t count, uint16_t *out)
{
    bfloat16_round(values, count, 0, 1.0, 0.0, out);
}

/* Philox4x64-10 (Random123, numpy's Philox): the block of four words at counter (c0, c1, 0, 0), key (k0, k1). */
static inline void philox4x64_10(uint64_t c0, uint64_t c1, uint64_t k0, uint64_t k1, uint64_t out[4])
{
    uint64_t v0 = c0, v1 = c1, v2 = 0, v3 = 0;
    for (int round = 0; round < 10; round++) {
        const __uint128_t p0 = (__uint128_t)UINT64_C(0xD2E7470EE14C6C93) * v0;
        const __uint128_t p1 = (__uint128_t)UINT64_C(0xCA5A826395121157) * v2;
        v0 = (uint64_t)(p1 >> 64) ^ v1 ^ k0;
        v1 = (uint64_t)p1;
        v2 = (uint64_t)(p0 >> 64) ^ v3 ^ k1;
        v3 = (uint64_t)p0;
        k0 += UINT64_C(0x9E3779B97F4A7C15);
        k1 += UINT64_C(0xBB67AE8584CAA73B);
    }
    out[0] = v0, out[1] = v1, out[2] = v2, out[3] = v3;
}

/* u[i] = 2^-32 * the 32-bit draw of element begin + i of the stream keyed (k0, k1) (inputs._philox_words):
 * element e is in chunk j = e / stream_chunk (a multiple of 8) at k = e % stream_chunk; its draw is half k % 2
 * (the low half first) of word (k / 2) % 4 of the block at counter (k / 8 + 1, j). */
static INLINED void philox_draws(uint64_t k0, uint64_t k1, int64_t stream_chunk, int64_t begin, int64_t count,
                                 double *u)
{
    uint64_t words[4];
    for (int64_t e = begin, end = begin + count; e < end;) {
        const int64_t chunk = e / stream_chunk, chunk_end = (chunk + 1) * stream_chunk;
        const int64_t stop = end < chunk_end ? end : chunk_end;
        for (int64_t k = e - chunk * stream_chunk; e < stop; k = (k | 7) + 1) {
            philox4x64_10((uint64_t)(k / 8 + 1), (uint64_t)chunk, k0, k1, words);
            if (k % 8 == 0 && stop - e >= 8) {                  /* a whole block */
                for (int lane = 0; lane < 8; lane++)
                    u[e - begin + lane] = (double)(uint32_t)(words[lane / 2] >> (32 * (lane % 2))) * 0x1p-32;
                e += 8;
                continue;
            }
            for (int64_t lane = k % 8; lane < 8 && e < stop; lane++, e++)
                u[e - begin] = (double)(uint32_t)(words[lane / 2] >> (32 * (lane % 2))) * 0x1p-32;
        }
    }
}

/* Philox4x32-10 (Random123's philox4x32 with 10 rounds) of the blocks first .. first + blocks - 1 of tensor stream
 * `stream` under the key (k0, k1): block m is the cipher of the counter (m mod 2^32, m / 2^32, stream, 0); each
 * round maps (v0, v1, v2, v3) to (hi(M1 v2) ^ v1 ^ k0, lo(M1 v2), hi(M0 v0) ^ v3 ^ k1, lo(M0 v0)) (hi, lo: the
 * upper and lower 32 bits of the 64-bit product) and then adds the Weyl constants to the key. Block i's four
 * words go to words[4i .. 4i + 3]. */
#define PHILOX_M0 UINT32_C(0xD2511F53)
#define PHILOX_M1 UINT32_C(0xCD9E8D57)
#define PHILOX_W0 UINT32_C(0x9E3779B9)
#define PHILOX_W1 UINT32_C(0xBB67AE85)
static void philox4x32_scalar(uint64_t first, int64_t blocks, uint32_t stream, uint32_t k0, uint32_t k1,
                              uint32_t *words)
{
    for (int64_t i = 0; i < blocks; i++) {
        const uint64_t block = first + (uint64_t)i;
        uint32_t v0 = (uint32_t)block, v1 = (uint32_t)(block >> 32), v2 = stream, v3 = 0, key0 = k0, key1 = k1;
        for (int round = 0; round < 10; round++) {
            const uint64_t p0 = (uint64_t)PHILOX_M0 * v0, p1 = (uint64_t)PHILOX_M1 * v2;
            v0 = (uint32_t)(p1 >> 32) ^ v1 ^ key0, v2 = (uint32_t)(p0 >> 32) ^ v3 ^ key1;
            v1 = (uint32_t)p1, v3 = (uint32_t)p0;
            key0 += PHILOX_W0, key1 += PHILOX_W1;
        }
        words[4 * i] = v0, words[4 * i + 1] = v1, words[4 * i + 2] = v2, words[4 * i + 3] = v3;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PHILOX_X86 1                   /* the vector paths of the rounds */
/* The upper and lower 32 bits of each 32-bit lane of v times m (m in every 64-bit lane): vpmuludq multiplies the
 * even lanes, and the odd ones shifted down. */
__attribute__((target("avx2"))) static inline void philox_product(__m256i v, __m256i m, __m256i *hi, __m256i *lo)
{
    const __m256i even = _mm256_mul_epu32(v, m), odd = _mm256_mul_epu32(_mm256_srli_epi64(v, 32), m);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

/* Eight blocks from a lane per block (v0 .. v3 hold their words 0 .. 3) to four consecutive words per block. */
__attribute__((target("avx2"))) static inline void philox_store8(__m256i v0, __m256i v1, __m256i v2, __m256i v3,
                                                                 uint32_t *words)
{
    const __m256i a = _mm256_unpacklo_epi32(v0, v1), b = _mm256_unpackhi_epi32(v0, v1);
    const __m256i c = _mm256_unpacklo_epi32(v2, v3), d = _mm256_unpackhi_epi32(v2, v3);
    const __m256i e = _mm256_unpacklo_epi64(a, c), f = _mm256_unpackhi_epi64(a, c);     /* blocks 0|4, 1|5 */
    const __m256i g = _mm256_unpacklo_epi64(b, d), h = _mm256_unpackhi_epi64(b, d);     /* blocks 2|6, 3|7 */
    __m256i *out = (__m256i *)words;
    _mm256_storeu_si256(out, _mm256_permute2x128_si256(e, f, 0x20));
    _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(g, h, 0x20));
    _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(e, f, 0x31));
    _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(g, h, 0x31));
}

/* philox4x32_scalar with eight blocks side by side, one per 32-bit lane (gcc does not vectorise the scalar rounds
 * well at the AVX2 level: 2.2x slower). Writes whole groups of eight blocks: room for blocks rounded up to 8. */
__attribute__((target("avx2"))) static void philox4x32_avx2(uint64_t first, int64_t blocks, uint32_t stream,
                                                            uint32_t k0, uint32_t k1, uint32_t *words)
{
    const __m256i m0 = _mm256_set1_epi64x(PHILOX_M0), m1 = _mm256_set1_epi64x(PHILOX_M1);
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), top = _mm256_set1_epi32(INT32_MIN);
    for (int64_t i = 0; i < blocks; i += 8) {
        const uint64_t block = first + (uint64_t)i;
        const __m256i low = _mm256_set1_epi32((int32_t)(uint32_t)block);
        __m256i v0 = _mm256_add_epi32(low, lanes);            /* a lane past 2^32 carries into v1 (-1 = carry) */
        const __m256i carry = _mm256_cmpgt_epi32(_mm256_xor_si256(low, top), _mm256_xor_si256(v0, top));
        __m256i v1 = _mm256_sub_epi32(_mm256_set1_epi32((int32_t)(uint32_t)(block >> 32)), carry);
        __m256i v2 = _mm256_set1_epi32((int32_t)stream), v3 = _mm256_setzero_si256();
        uint32_t key0 = k0, key1 = k1;
        for (int round = 0; round < 10; round++) {
            __m256i hi0, lo0, hi1, lo1;
            philox_product(v0, m0, &hi0, &lo0);
            philox_product(v2, m1, &hi1, &lo1);
            v0 = _mm256_xor_si256(_mm256_xor_si256(hi1, v1), _mm256_set1_epi32((int32_t)key0));
            v2 = _mm256_xor_si256(_mm256_xor_si256(hi0, v3), _mm256_set1_epi32((int32_t)key1));
            v1 = lo1, v3 = lo0;
            key0 += PHILOX_W0, key1 += PHILOX_W1;
        }
        philox_store8(v0, v1, v2, v3, words + 4 * i);
    }
}

/* The product halves of philox_product for sixteen lanes. */
__attribute__((target("avx512f"))) static inline void philox_product16(__m512i v, __m512i m, __m512i *hi, __m512i *lo)
{
    const __m512i even = _mm512_mul_epu32(v, m), odd = _mm512_mul_epu32(_mm512_srli_epi64(v, 32), m);
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
    *lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

/* philox4x32_avx2 with sixteen blocks side by side (1.8x faster on an AVX-512 host). Writes whole groups of
 * sixteen blocks: room for blocks rounded up to 16. */
__attribute__((target("avx512f,avx2"))) static void philox4x32_avx512(uint64_t first, int64_t blocks, uint32_t stream,
                                                                      uint32_t k0, uint32_t k1, uint32_t *words)
{
    const __m512i m0 = _mm512_set1_epi64(PHILOX_M0), m1 = _mm512_set1_epi64(PHILOX_M1), one = _mm512_set1_epi32(1);
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int64_t i = 0; i < blocks; i += 16) {
        const uint64_t block = first + (uint64_t)i;
        const __m512i low = _mm512_set1_epi32((int32_t)(uint32_t)block);
        const __m512i high = _mm512_set1_epi32((int32_t)(uint32_t)(block >> 32));
        __m512i v0 = _mm512_add_epi32(low, lanes);            /* a lane past 2^32 carries into v1 */
        __m512i v1 = _mm512_mask_add_epi32(high, _mm512_cmplt_epu32_mask(v0, low), high, one);
        __m512i v2 = _mm512_set1_epi32((int32_t)stream), v3 = _mm512_setzero_si512();
        uint32_t key0 = k0, key1 = k1;
        for (int round = 0; round < 10; round++) {
            __m512i hi0, lo0, hi1, lo1;
            philox_product16(v0, m0, &hi0, &lo0);
            philox_product16(v2, m1, &hi1, &lo1);
            v0 = _mm512_xor_si512(_mm512_xor_si512(hi1, v1), _mm512_set1_epi32((int32_t)key0));
            v2 = _mm512_xor_si512(_mm512_xor_si512(hi0, v3), _mm512_set1_epi32((int32_t)key1));
            v1 = lo1, v3 = lo0;
            key0 += PHILOX_W0, key1 += PHILOX_W1;
        }
        philox_store8(_mm512_castsi512_si256(v0), _mm512_castsi512_si256(v1), _mm512_castsi512_si256(v2),
                      _mm512_castsi512_si256(v3), words + 4 * i);
        philox_store8(_mm512_extracti64x4_epi64(v0, 1), _mm512_extracti64x4_epi64(v1, 1),
                      _mm512_extracti64x4_epi64(v2, 1), _mm512_extracti64x4_epi64(v3, 1), words + 4 * i + 32);
    }
}
#endif

enum { PHILOX_FASTEST = -1, PHILOX_SCALAR = 0, PHILOX_WITH_AVX2 = 1, PHILOX_WITH_AVX512 = 2 };

/* Philox4x32-10 blocks (philox4x32_scalar's words) by the code of `path`: PHILOX_FASTEST, the fastest this CPU runs
 * (what the draws use), or one named, so that a test holds each to numpy's. Returns 0 (nothing written) for a path
 * this build or CPU lacks. words needs room for blocks rounded up to 16. */
int32_t prmg_philox4x32_blocks(uint64_t first, int64_t blocks, uint32_t stream, uint32_t k0, uint32_t k1,
                               int32_t path, uint32_t *words)
{
#ifdef PHILOX_X86
    const int avx512 = __builtin_cpu_supports("avx512f"), avx2 = __builtin_cpu_supports("avx2");
    if (path == PHILOX_WITH_AVX512 || (path == PHILOX_FASTEST && avx512)) {
        if (!avx512)
            return 0;
        philox4x32_avx512(first, blocks, stream, k0, k1, words);
        return 1;
    }
    if (path == PHILOX_WITH_AVX2 || (path == PHILOX_FASTEST && avx2)) {
        if (!avx2)
            return 0;
        philox4x32_avx2(first, blocks, stream, k0, k1, words);
        return 1;
    }
#endif
    if (path != PHILOX_SCALAR && path != PHILOX_FASTEST)
        return 0;
    philox4x32_scalar(first, blocks, stream, k0, k1, words);
    return 1;
}

/* u[i] = 2^-32 * the word of element begin + i of the philox4x32 stream (inputs._philox4x32_words), count <= CHUNK:
 * element e takes word e % 4 of block e / 4, under the key (seed mod 2^32, seed / 2^32). A word w becomes a double
 * exactly as (2^52 + w) - 2^52, an exponent and a subtraction, which vectorises on every x86-64 level. */
static INLINED void philox4x32_draws(uint64_t seed, uint32_t stream, int64_t begin, int64_t count, double *u)
{
    static _Thread_local uint32_t words[CHUNK + 128];          /* up to CHUNK / 4 + 2 blocks, rounded up to 16 */
    const int64_t first = begin / 4, blocks = (begin + count + 3) / 4 - first;
    prmg_philox4x32_blocks((uint64_t)first, blocks, stream, (uint32_t)seed, (uint32_t)(seed >> 32), PHILOX_FASTEST,
                           words);
    const uint32_t *drawn = words + begin % 4;
    for (int64_t i = 0; i < count; i++) {
        const uint64_t bits = UINT64_C(0x4330000000000000) | drawn[i];
        double word;
        memcpy(&word, &bits, sizeof word);
        u[i] = (word - 0x1p52) * 0x1p-32;
    }
}

enum { PHILOX = 0, PHILOX4X32 = 1 };   /* the generators of inputs/seeded.py whose uniform draws this helper makes */

/* out[i] = the dtype's rounding of offset + scale * u (affine_round) for elements begin.. of a uniform stream:
 * PHILOX's keyed (k0, k1) in chunks of stream_chunk elements (philox_draws), or PHILOX4X32's of seed k0 and
 * tensor index k1 (philox4x32_draws). */
CLONES void prmg_uniform(int32_t generator, uint64_t k0, uint64_t k1, int64_t stream_chunk, int64_t begin,
                         int64_t count, double scale, double offset, int32_t type, void *out)
{
    static _Thread_local double u[CHUNK];
    const int64_t size = type == F64 ? 8 : type == F32 ? 4 : 2;
    for (int64_t done = 0; done < count; done += CHUNK) {
        const int64_t n = count - done < CHUNK ? count - done : CHUNK;
        if (generator == PHILOX4X32)
            philox4x32_draws(k0, (uint32_t)k1, begin + done, n, u);
        else
            philox_draws(k0, k1, stream_chunk, begin + done, n, u);
        affine_round(u, n, scale, offset, type, (char *)out + done * size);
    }
}
