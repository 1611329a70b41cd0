/*
 * Fault injection for prmg's own tests: PRMG_EMU_FAULT names one fault (or a comma list), optionally
 * restricted by PRMG_EMU_FAULT_SHAPE=B,S,N,D to launches whose dy has exactly that shape.
 * Both are read at every GetWorkspaceSize and launch. See README.md for what each fault does.
 */
#ifndef PRMG_EMU_FAULTS_H
#define PRMG_EMU_FAULTS_H

#include <stdint.h>

enum {
    FAULT_SIGN = 1u << 0,
    FAULT_OWN_SIN = 1u << 1,
    FAULT_HALF_PAIRING = 1u << 2,
    FAULT_SHIFT_SLICE = 1u << 3,
    FAULT_IGNORE_BROADCAST = 1u << 4,
    FAULT_SKIP_LAST_ROW = 1u << 5,
    FAULT_CLOBBER_PASSTHROUGH = 1u << 6,
    FAULT_WRITE_PAST_END = 1u << 7,
    FAULT_MODIFY_COS = 1u << 8,
    FAULT_BF16_COMPUTE = 1u << 9,
    FAULT_NOOP = 1u << 10,
    FAULT_NAN = 1u << 11,
    FAULT_ACCEPT_MODE = 1u << 12,
    FAULT_CRASH = 1u << 13,
    FAULT_HANG = 1u << 14,
    FAULT_TRUNCATE = 1u << 15,
};

/* The faults active for a dy of shape dy_dims[0..dim_count): 0 and *faults set, or -1 with an error
 * message when PRMG_EMU_FAULT names an unknown fault or PRMG_EMU_FAULT_SHAPE is malformed. */
int active_faults(const int64_t *dy_dims, uint64_t dim_count, unsigned *faults);

/* The rotary modes the emulated kernel implements, from PRMG_EMU_MODES (a comma list of 0..3,
 * default "1"): 0 and *mode_mask set (bit m for mode m), or -1 with an error message. */
int supported_modes(unsigned *mode_mask);

#endif
