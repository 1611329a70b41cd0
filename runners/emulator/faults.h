/*
 * Fault injection for prmg's own tests: PRMG_EMU_FAULT names one fault (or a comma list), optionally
 * restricted by PRMG_EMU_FAULT_SHAPE=B,S,N,D to launches whose dy (xRef for the forward) has exactly
 * that shape and by PRMG_EMU_FAULT_DEVICE=N to launches on device N (a bad chip of several). They are read at
 * every GetWorkspaceSize and launch. Grad faults act on the grad, the
 * fwd_* faults on the forward. See README.md for what each fault does.
 *
 * Which faults acted is recorded per thread, from each GetWorkspaceSize (which starts the record) to
 * the launch after it, and exported as the test hook prmg_emu_applied_faults(): a fault acted when it
 * was in force as the kernel ran (or, accept_mode, when it made the first phase accept a mode).
 */
#ifndef PRMG_EMU_FAULTS_H
#define PRMG_EMU_FAULTS_H

#include <stdint.h>

/* A set of faults, one bit each (more than 64 faults: a 128-bit integer, gcc's). */
typedef unsigned __int128 fault_set;

#define FAULT_BIT(n) ((fault_set)1 << (n))

enum {
    FAULT_SIGN = 0,
    FAULT_OWN_SIN,
    FAULT_HALF_PAIRING,
    FAULT_SHIFT_SLICE,
    FAULT_IGNORE_BROADCAST,
    FAULT_SKIP_LAST_ROW,
    FAULT_CLOBBER_PASSTHROUGH,
    FAULT_WRITE_PAST_END,
    FAULT_MODIFY_COS,
    FAULT_BF16_COMPUTE,
    FAULT_NOOP,
    FAULT_NAN,
    FAULT_ACCEPT_MODE,
    FAULT_CRASH,
    FAULT_HANG,
    FAULT_TRUNCATE,
    FAULT_SQUASH_NAN,
    FAULT_PASSTHROUGH_ADD_ZERO,
    FAULT_WORKSPACE_OVERRUN,
    FAULT_WORKSPACE_UNINIT_READ,
    FAULT_CORE_TAIL,
    FAULT_TILE_TAIL,
    FAULT_UNALIGNED_START,
    FAULT_ROW_PAD,
    FAULT_BROADCAST_B,
    FAULT_BROADCAST_S,
    FAULT_BROADCAST_N,
    FAULT_MIXED_CAST,
    FAULT_ROW_INDEX_U16,
    FAULT_NONDETERMINISTIC,
    FAULT_DEVICE_FAULT,
    FAULT_NEG_SIN,
    FAULT_FWD_SIGN,
    FAULT_FWD_PARTNER_SIN,
    FAULT_FWD_NOOP,
    FAULT_FWD_NEG_SIN,
    FAULT_FWD_WRITE_PAST_END,
    FAULT_FWD_GAP_WRITE,
    FAULT_GEIR_SLICE_DROPPED,
    FAULT_GEIR_MODE_DROPPED,
    FAULT_GEIR_INPUT_WRITTEN,
    FAULT_CLOBBER_ROW_END,
    FAULT_IGNORE_OFFSET,
    FAULT_CONTIGUOUS_TABLES,
    FAULT_NUDGE,
    FAULT_FWD_NUDGE,
    FAULT_ROUND_UP,
    FAULT_CAST_UP,
    FAULT_CORE_LAST_ROW,
    FAULT_LEAK_DEVICE_MEMORY,
    FAULT_WRITE_BEYOND_GUARD,
    FAULT_FWD_IGNORE_OFFSET,
    FAULT_FWD_CONTIGUOUS_TABLES,
    FAULT_GEIR_OUTPUT_OVERRUN,
    FAULT_TILING_CACHE,
    FAULT_FWD_FP16_ILV_HALF,
    FAULT_FWD_ODD_HALF,
    FAULT_CAST_AWAY,
    FAULT_CAST_ODD,
    FAULT_CAST_TIES_SPLIT,
    FAULT_UB_STALE_TABLES,
    FAULT_ROUND_ZERO,
    FAULT_ZERO_SIN_SKIP,
    FAULT_CORE_STALE_TABLE,
    FAULT_STORE_BLOCK,
    FAULT_UB_TAIL_SEAM,
    FAULT_TABLE_ADDRESS_CACHE,
    FAULT_TABLE_BLOCK_CACHE,
    FAULT_ZERO_COS_SKIP,
    FAULT_FLUSH_SMALL,
    FAULT_FWD_STAGED_OFFSET,
    FAULT_FWD_DENSE_IN_PLACE,
    FAULT_FWD_EXPAND_ONCE,
    FAULT_GEIR_REF_NOT_ALIASED,
    FAULT_SLICE_LIST_READ,
    FAULT_NOOP_LAUNCH_REFUSED,
    FAULT_FWD_MEMBASE_LATE,
    FAULT_CORE_BIAS,
    FAULT_NEGATIVE_UP,
    FAULT_BINADE_UP,
    FAULT_LAST_CORE_ROW_SIGN,
    FAULT_TAIL_PAIR_SIGN,
    FAULT_GEIR_EMPTY_LIST_UNSET,
    FAULT_GEIR_REFUSAL_AT_RUN,
    FAULT_GEIR_FWD_SIN_NEGATED,
    FAULT_TAIL_ROWS_UP,
    FAULT_BROADCAST_LAST_B,
    FAULT_MIXED_BF16_UP,
    FAULT_TABLE_OFFSET_IGNORED,
    FAULT_ROUND_ZERO_ALL,
    FAULT_BINADE_THIN_UP,
    FAULT_REPEAT_LAUNCH_SIGN,
    FAULT_OFFSET_READ_BASE,
    FAULT_UNEVEN_LAST_SHARE,
    FAULT_OFFSET_BLOCK_ALIGNED,
    FAULT_WORKSPACE_TABLE_CACHE,
    FAULT_SHARE_EDGE_UP,
    FAULT_LENGTH_ONE_STRIDES,
    FAULT_FWD_TABLES_ONE_PLAN,
    FAULT_SLICE_OF_1_AS_END,
    FAULT_OFFSET_COS_SIZE,
    FAULT_FWD_MEMBASE_REPEAT_U8,
    FAULT_ODD_D_EVEN_PITCH,
    FAULT_COUNT                 /* not a fault: how many there are (append new ones above) */
};
_Static_assert(FAULT_COUNT <= 8 * (int)sizeof(fault_set), "more faults than bits of fault_set");

/* The faults each operator obeys. Both obey the shared ones: a cast helper both kernels call, and the slice read
 * (read_slice) and nnopbase's slice-array check both first phases make. */
/* The casts whose ties go elsewhere than to even (one store helper). */
#define TIE_RULE_FAULTS (FAULT_BIT(FAULT_CAST_AWAY) | FAULT_BIT(FAULT_CAST_ODD) | FAULT_BIT(FAULT_CAST_TIES_SPLIT))
/* tail_pair_sign: the pair holding the slice's last lane wrong alike in both (a shared lane-pairing helper);
 * offset_block_aligned: both kernels' GM addresses rounded to the 32-byte block (align_offsets); offset_cos_size: every
 * storage offset applied in cos's element size (offsets_in_cos_size). */
#define SHARED_FAULTS (TIE_RULE_FAULTS | FAULT_BIT(FAULT_SLICE_LIST_READ) | FAULT_BIT(FAULT_SLICE_OF_1_AS_END) \
                       | FAULT_BIT(FAULT_TAIL_PAIR_SIGN) \
                       | FAULT_BIT(FAULT_OFFSET_BLOCK_ALIGNED) | FAULT_BIT(FAULT_OFFSET_COS_SIZE))
#define FORWARD_FAULTS (FAULT_BIT(FAULT_FWD_SIGN) | FAULT_BIT(FAULT_FWD_PARTNER_SIN) | FAULT_BIT(FAULT_FWD_NOOP) \
                        | FAULT_BIT(FAULT_FWD_NEG_SIN) | FAULT_BIT(FAULT_FWD_WRITE_PAST_END) \
                        | FAULT_BIT(FAULT_FWD_GAP_WRITE) | FAULT_BIT(FAULT_FWD_NUDGE) \
                        | FAULT_BIT(FAULT_FWD_IGNORE_OFFSET) | FAULT_BIT(FAULT_FWD_CONTIGUOUS_TABLES) \
                        | FAULT_BIT(FAULT_FWD_FP16_ILV_HALF) | FAULT_BIT(FAULT_FWD_ODD_HALF) \
                        | FAULT_BIT(FAULT_FWD_STAGED_OFFSET) | FAULT_BIT(FAULT_FWD_DENSE_IN_PLACE) \
                        | FAULT_BIT(FAULT_FWD_EXPAND_ONCE) | FAULT_BIT(FAULT_FWD_MEMBASE_LATE) \
                        | FAULT_BIT(FAULT_FWD_TABLES_ONE_PLAN) | FAULT_BIT(FAULT_FWD_MEMBASE_REPEAT_U8) \
                        | SHARED_FAULTS)
/* Graph-mode faults: only the graph-mode twin (geir.c) obeys them, for either operator. */
#define GEIR_FAULTS (FAULT_BIT(FAULT_GEIR_SLICE_DROPPED) | FAULT_BIT(FAULT_GEIR_MODE_DROPPED) \
                     | FAULT_BIT(FAULT_GEIR_INPUT_WRITTEN) | FAULT_BIT(FAULT_GEIR_OUTPUT_OVERRUN) \
                     | FAULT_BIT(FAULT_GEIR_REF_NOT_ALIASED) | FAULT_BIT(FAULT_GEIR_EMPTY_LIST_UNSET) \
                     | FAULT_BIT(FAULT_GEIR_REFUSAL_AT_RUN) | FAULT_BIT(FAULT_GEIR_FWD_SIN_NEGATED))
#define GRAD_FAULTS (~(FORWARD_FAULTS | GEIR_FAULTS) | SHARED_FAULTS)

/* 1 when fault `index` is in the set `faults`. */
static inline int has_fault(fault_set faults, int index)
{
    return (faults & FAULT_BIT(index)) != 0;
}

/* The faults of `op_mask` active for a tensor of shape dims[0..dim_count) on the calling thread's device: 0 and
 * *faults set, or -1 with an error message when PRMG_EMU_FAULT names an unknown fault (of either operator) or
 * PRMG_EMU_FAULT_SHAPE or PRMG_EMU_FAULT_DEVICE is malformed. */
int active_faults(const int64_t *dims, uint64_t dim_count, fault_set op_mask, fault_set *faults);

/* Starts the calling thread's record of the faults that acted (at every GetWorkspaceSize). */
void begin_fault_record(void);

/* Adds `faults` to the calling thread's record of the faults that acted. */
void record_faults(fault_set faults);

/* Test hook: the names of the faults that acted on the calling thread's last GetWorkspaceSize and the
 * launch after it, comma-separated in the catalogue's order ("" when none). */
const char *prmg_emu_applied_faults(void) __attribute__((visibility("default")));

/* For the graph-mode twin (geir.c, its own library, linked to this one): active_faults of GEIR_FAULTS,
 * begin_fault_record and record_faults, exported; in the twin (EMU_TWIN) hidden forwarders to the
 * libopapi_transformer.so of its own folder (contract.c, as emu.h's contract). */
#ifdef EMU_TWIN
#define EMU_FAULT_RECORD __attribute__((visibility("hidden")))
#else
#define EMU_FAULT_RECORD __attribute__((visibility("default")))
#endif
EMU_FAULT_RECORD int prmg_emu_geir_faults(const int64_t *dims, uint64_t dim_count, fault_set *faults);
EMU_FAULT_RECORD void prmg_emu_begin_fault_record(void);
EMU_FAULT_RECORD void prmg_emu_record_faults(fault_set faults);

/* The rotary modes the emulated kernels implement, from PRMG_EMU_MODES (a comma list of 0..3,
 * default "1"): 0 and *mode_mask set (bit m for mode m), or -1 with an error message. */
int supported_modes(unsigned *mode_mask);

/* The chip the operators run on, from PRMG_EMU_SOC (default DEFAULT_SOC_NAME), by its name's prefix:
 * the 950 family's regbase tiling (Ascend950 or its other name Ascend910_95, Ascend960, Ascend350), the A2/A3
 * membase tiling (Ascend910B1..., Ascend910_93), or another chip (the A1 "Ascend910B", whole). *name is its name. */
typedef enum { SOC_950, SOC_960, SOC_350, SOC_MEMBASE, SOC_OTHER } soc_kind;
soc_kind emulated_soc(const char **name);

/* The upstream build whose behaviour the grad follows, from PRMG_EMU_BUILD: 0 "base" (no no-op), 1
 * "e9f0541c" (the no-op before the slice-range check), 2 "2b888cdb" (the default: the range first); -1
 * with an error message for any other text. */
int emulated_build(void);

#endif
