/* Reading PRMG_EMU_FAULT, PRMG_EMU_FAULT_SHAPE, PRMG_EMU_MODES, PRMG_EMU_SOC and PRMG_EMU_BUILD, and
 * recording which faults acted (see faults.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "faults.h"

static const struct {
    const char *name;
    int index;
} FAULT_NAMES[] = {
    {"sign", FAULT_SIGN},
    {"own_sin", FAULT_OWN_SIN},
    {"half_pairing", FAULT_HALF_PAIRING},
    {"shift_slice", FAULT_SHIFT_SLICE},
    {"ignore_broadcast", FAULT_IGNORE_BROADCAST},
    {"skip_last_row", FAULT_SKIP_LAST_ROW},
    {"clobber_passthrough", FAULT_CLOBBER_PASSTHROUGH},
    {"write_past_end", FAULT_WRITE_PAST_END},
    {"modify_cos", FAULT_MODIFY_COS},
    {"bf16_compute", FAULT_BF16_COMPUTE},
    {"noop", FAULT_NOOP},
    {"nan", FAULT_NAN},
    {"accept_mode", FAULT_ACCEPT_MODE},
    {"crash", FAULT_CRASH},
    {"hang", FAULT_HANG},
    {"truncate", FAULT_TRUNCATE},
    {"squash_nan", FAULT_SQUASH_NAN},
    {"passthrough_add_zero", FAULT_PASSTHROUGH_ADD_ZERO},
    {"workspace_overrun", FAULT_WORKSPACE_OVERRUN},
    {"workspace_uninit_read", FAULT_WORKSPACE_UNINIT_READ},
    {"core_tail", FAULT_CORE_TAIL},
    {"tile_tail", FAULT_TILE_TAIL},
    {"unaligned_start", FAULT_UNALIGNED_START},
    {"row_pad", FAULT_ROW_PAD},
    {"broadcast_b", FAULT_BROADCAST_B},
    {"broadcast_s", FAULT_BROADCAST_S},
    {"broadcast_n", FAULT_BROADCAST_N},
    {"mixed_cast", FAULT_MIXED_CAST},
    {"row_index_u16", FAULT_ROW_INDEX_U16},
    {"nondeterministic", FAULT_NONDETERMINISTIC},
    {"device_fault", FAULT_DEVICE_FAULT},
    {"neg_sin", FAULT_NEG_SIN},
    {"fwd_sign", FAULT_FWD_SIGN},
    {"fwd_partner_sin", FAULT_FWD_PARTNER_SIN},
    {"fwd_noop", FAULT_FWD_NOOP},
    {"fwd_neg_sin", FAULT_FWD_NEG_SIN},
    {"fwd_write_past_end", FAULT_FWD_WRITE_PAST_END},
    {"fwd_gap_write", FAULT_FWD_GAP_WRITE},
    {"geir_slice_dropped", FAULT_GEIR_SLICE_DROPPED},
    {"geir_mode_dropped", FAULT_GEIR_MODE_DROPPED},
    {"geir_input_written", FAULT_GEIR_INPUT_WRITTEN},
    {"clobber_row_end", FAULT_CLOBBER_ROW_END},
    {"ignore_offset", FAULT_IGNORE_OFFSET},
    {"contiguous_tables", FAULT_CONTIGUOUS_TABLES},
    {"nudge", FAULT_NUDGE},
    {"fwd_nudge", FAULT_FWD_NUDGE},
    {"round_up", FAULT_ROUND_UP},
    {"cast_up", FAULT_CAST_UP},
    {"core_last_row", FAULT_CORE_LAST_ROW},
    {"leak_device_memory", FAULT_LEAK_DEVICE_MEMORY},
    {"write_beyond_guard", FAULT_WRITE_BEYOND_GUARD},
    {"fwd_ignore_offset", FAULT_FWD_IGNORE_OFFSET},
    {"fwd_contiguous_tables", FAULT_FWD_CONTIGUOUS_TABLES},
    {"geir_output_overrun", FAULT_GEIR_OUTPUT_OVERRUN},
    {"tiling_cache", FAULT_TILING_CACHE},
    {"fwd_fp16_ilv_half", FAULT_FWD_FP16_ILV_HALF},
    {"fwd_odd_half", FAULT_FWD_ODD_HALF},
    {"cast_away", FAULT_CAST_AWAY},
    {"cast_odd", FAULT_CAST_ODD},
    {"cast_ties_split", FAULT_CAST_TIES_SPLIT},
    {"ub_stale_tables", FAULT_UB_STALE_TABLES},
    {"round_zero", FAULT_ROUND_ZERO},
    {"zero_sin_skip", FAULT_ZERO_SIN_SKIP},
    {"core_stale_table", FAULT_CORE_STALE_TABLE},
    {"store_block", FAULT_STORE_BLOCK},
    {"ub_tail_seam", FAULT_UB_TAIL_SEAM},
    {"table_address_cache", FAULT_TABLE_ADDRESS_CACHE},
    {"table_block_cache", FAULT_TABLE_BLOCK_CACHE},
    {"zero_cos_skip", FAULT_ZERO_COS_SKIP},
    {"flush_small", FAULT_FLUSH_SMALL},
    {"fwd_staged_offset", FAULT_FWD_STAGED_OFFSET},
    {"fwd_dense_in_place", FAULT_FWD_DENSE_IN_PLACE},
    {"fwd_expand_once", FAULT_FWD_EXPAND_ONCE},
    {"geir_ref_not_aliased", FAULT_GEIR_REF_NOT_ALIASED},
    {"slice_list_read", FAULT_SLICE_LIST_READ},
    {"noop_launch_refused", FAULT_NOOP_LAUNCH_REFUSED},
    {"fwd_membase_late", FAULT_FWD_MEMBASE_LATE},
    {"core_bias", FAULT_CORE_BIAS},
    {"negative_up", FAULT_NEGATIVE_UP},
    {"binade_up", FAULT_BINADE_UP},
    {"last_core_row_sign", FAULT_LAST_CORE_ROW_SIGN},
    {"tail_pair_sign", FAULT_TAIL_PAIR_SIGN},
    {"geir_empty_list_unset", FAULT_GEIR_EMPTY_LIST_UNSET},
    {"geir_refusal_at_run", FAULT_GEIR_REFUSAL_AT_RUN},
    {"geir_fwd_sin_negated", FAULT_GEIR_FWD_SIN_NEGATED},
    {"tail_rows_up", FAULT_TAIL_ROWS_UP},
    {"broadcast_last_b", FAULT_BROADCAST_LAST_B},
    {"mixed_bf16_up", FAULT_MIXED_BF16_UP},
    {"table_offset_ignored", FAULT_TABLE_OFFSET_IGNORED},
    {"round_zero_all", FAULT_ROUND_ZERO_ALL},
    {"binade_thin_up", FAULT_BINADE_THIN_UP},
    {"repeat_launch_sign", FAULT_REPEAT_LAUNCH_SIGN},
    {"offset_read_base", FAULT_OFFSET_READ_BASE},
    {"uneven_last_share", FAULT_UNEVEN_LAST_SHARE},
    {"offset_block_aligned", FAULT_OFFSET_BLOCK_ALIGNED},
    {"workspace_table_cache", FAULT_WORKSPACE_TABLE_CACHE},
    {"share_edge_up", FAULT_SHARE_EDGE_UP},
    {"length_one_strides", FAULT_LENGTH_ONE_STRIDES},
    {"fwd_tables_one_plan", FAULT_FWD_TABLES_ONE_PLAN},
    {"slice_of_1_as_end", FAULT_SLICE_OF_1_AS_END},
    {"offset_cos_size", FAULT_OFFSET_COS_SIZE},
    {"fwd_membase_repeat_u8", FAULT_FWD_MEMBASE_REPEAT_U8},
    {"odd_d_even_pitch", FAULT_ODD_D_EVEN_PITCH},
};

/* The bit of fault `name` (length `length`), or 0 when unknown. */
static fault_set fault_flag(const char *name, size_t length)
{
    for (size_t i = 0; i < sizeof FAULT_NAMES / sizeof FAULT_NAMES[0]; i++) {
        if (strlen(FAULT_NAMES[i].name) == length && strncmp(FAULT_NAMES[i].name, name, length) == 0)
            return FAULT_BIT(FAULT_NAMES[i].index);
    }
    return 0;
}

/* 1 when PRMG_EMU_FAULT_SHAPE is unset or equals the shape dims, 0 when it differs, -1 when malformed. */
static int shape_selected(const int64_t *dims, uint64_t dim_count)
{
    const char *text = getenv("PRMG_EMU_FAULT_SHAPE");
    if (text == NULL || *text == '\0')
        return 1;
    int64_t wanted[4];
    for (int axis = 0; axis < 4; axis++) {
        char *end;
        wanted[axis] = strtoll(text, &end, 10);
        if (end == text || *end != (axis < 3 ? ',' : '\0')) {
            prmg_emu_set_error("emulator: PRMG_EMU_FAULT_SHAPE must be B,S,N,D, got '%s'",
                               getenv("PRMG_EMU_FAULT_SHAPE"));
            return -1;
        }
        text = end + 1;
    }
    if (dim_count != 4)
        return 0;
    for (int axis = 0; axis < 4; axis++) {
        if (dims[axis] != wanted[axis])
            return 0;
    }
    return 1;
}

/* 1 when PRMG_EMU_FAULT_DEVICE is unset or names the calling thread's device, 0 when it names another, -1 (and a
 * message) when it is no device id: the faults act on one chip of several, as a bad chip would compute. */
static int device_selected(void)
{
    const char *text = getenv("PRMG_EMU_FAULT_DEVICE");
    if (text == NULL || *text == '\0')
        return 1;
    char *end;
    long wanted = strtol(text, &end, 10);
    if (end == text || *end != '\0' || wanted < 0) {
        prmg_emu_set_error("emulator: PRMG_EMU_FAULT_DEVICE must be a device id, got '%s'", text);
        return -1;
    }
    return prmg_emu_current_device() == wanted;
}

int active_faults(const int64_t *dims, uint64_t dim_count, fault_set op_mask, fault_set *faults)
{
    *faults = 0;
    const char *text = getenv("PRMG_EMU_FAULT");
    if (text == NULL || *text == '\0')
        return 0;
    fault_set named = 0;
    for (const char *item = text; *item != '\0';) {
        size_t length = strcspn(item, ",");
        fault_set flag = fault_flag(item, length);
        if (flag == 0) {
            prmg_emu_set_error("emulator: unknown fault '%.*s' in PRMG_EMU_FAULT", (int)length, item);
            return -1;
        }
        named |= flag;
        item += length + (item[length] == ',');
    }
    int selected = shape_selected(dims, dim_count), on_device = device_selected();
    if (selected < 0 || on_device < 0)
        return -1;
    if (selected && on_device)
        *faults = named & op_mask;
    return 0;
}

static __thread fault_set applied;
static __thread char applied_names[512];

void begin_fault_record(void)
{
    applied = 0;
}

void record_faults(fault_set faults)
{
    applied |= faults;
}

int prmg_emu_geir_faults(const int64_t *dims, uint64_t dim_count, fault_set *faults)
{
    return active_faults(dims, dim_count, GEIR_FAULTS, faults);
}

void prmg_emu_begin_fault_record(void)
{
    begin_fault_record();
}

void prmg_emu_record_faults(fault_set faults)
{
    record_faults(faults);
}

const char *prmg_emu_applied_faults(void)
{
    size_t used = 0;
    applied_names[0] = '\0';
    for (size_t i = 0; i < sizeof FAULT_NAMES / sizeof FAULT_NAMES[0]; i++) {
        if (!has_fault(applied, FAULT_NAMES[i].index))
            continue;
        int written = snprintf(applied_names + used, sizeof applied_names - used, "%s%s", used ? "," : "",
                               FAULT_NAMES[i].name);
        if (written < 0 || (size_t)written >= sizeof applied_names - used)
            break;
        used += (size_t)written;
    }
    return applied_names;
}

int supported_modes(unsigned *mode_mask)
{
    const char *text = getenv("PRMG_EMU_MODES");
    if (text == NULL || *text == '\0')
        text = "1";
    unsigned mask = 0;
    for (const char *item = text; *item != '\0';) {
        size_t length = strcspn(item, ",");
        if (length != 1 || item[0] < '0' || item[0] > '3') {
            prmg_emu_set_error("emulator: PRMG_EMU_MODES must list modes 0..3, got '%s'", text);
            return -1;
        }
        mask |= 1u << (item[0] - '0');
        item += length + (item[length] == ',');
    }
    *mode_mask = mask;
    return 0;
}

soc_kind emulated_soc(const char **name)
{
    static const struct {
        const char *prefix;
        soc_kind kind;
    } KINDS[] = {{"Ascend950", SOC_950}, {"Ascend910_95", SOC_950}, {"Ascend960", SOC_960},
                 {"Ascend350", SOC_350}, {"Ascend910B", SOC_MEMBASE}, {"Ascend910_93", SOC_MEMBASE}};
    const char *chosen = getenv("PRMG_EMU_SOC");
    *name = chosen != NULL && *chosen != '\0' ? chosen : DEFAULT_SOC_NAME;
    if (strcmp(*name, "Ascend910B") == 0)     /* no digit: an A1 Ascend 910 (opbase's socOpMap: ascend910/) */
        return SOC_OTHER;
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (strncmp(*name, KINDS[i].prefix, strlen(KINDS[i].prefix)) == 0)
            return KINDS[i].kind;
    return SOC_OTHER;
}

int emulated_build(void)
{
    static const char *const BUILDS[] = {"base", "e9f0541c", "2b888cdb"};
    const char *text = getenv("PRMG_EMU_BUILD");
    if (text == NULL || *text == '\0')
        return 2;
    for (int i = 0; i < 3; i++)
        if (strcmp(text, BUILDS[i]) == 0)
            return i;
    prmg_emu_set_error("emulator: PRMG_EMU_BUILD must be base, e9f0541c or 2b888cdb, got '%s'", text);
    return -1;
}
