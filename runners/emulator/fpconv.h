/*
 * float16 / bfloat16 <-> float32 by bit manipulation. Narrowing rounds to nearest, ties to even, and
 * handles NaN (kept quiet, sign kept), infinities, overflow (to infinity) and subnormals.
 */
#ifndef PRMG_EMU_FPCONV_H
#define PRMG_EMU_FPCONV_H

#include <stdint.h>
#include <string.h>

static inline uint32_t float_bits(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

static inline float bits_float(uint32_t bits)
{
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* bfloat16 is the high half of a float32. */
static inline float bf16_to_float(uint16_t half)
{
    return bits_float((uint32_t)half << 16);
}

static inline uint16_t float_to_bf16(float value)
{
    uint32_t bits = float_bits(value);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((bits >> 16) | 0x0040u);           /* quiet NaN */
    bits += 0x7FFFu + ((bits >> 16) & 1u);                    /* RNE; overflow carries into inf */
    return (uint16_t)(bits >> 16);
}

static inline float fp16_to_float(uint16_t half)
{
    uint32_t sign = (uint32_t)(half & 0x8000u) << 16;
    uint32_t exponent = (half >> 10) & 0x1Fu;
    uint32_t mantissa = half & 0x3FFu;
    if (exponent == 0x1Fu)
        return bits_float(sign | 0x7F800000u | (mantissa << 13));
    if (exponent == 0) {
        /* zero or subnormal: mantissa * 2^-24, exact in float32 */
        float magnitude = (float)mantissa * bits_float(0x33800000u);
        return bits_float(sign | float_bits(magnitude));
    }
    return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

static inline uint16_t float_to_fp16(float value)
{
    uint32_t bits = float_bits(value);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u)
        return (uint16_t)(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));   /* quiet NaN */
    if (magnitude >= 0x47800000u)
        return (uint16_t)(sign | 0x7C00u);                                    /* >= 2^16: inf */
    if (magnitude >= 0x38800000u) {
        /* normal: rebias the exponent (127 -> 15), round 13 dropped bits; [65520, 65536) -> inf */
        uint32_t rebiased = magnitude - 0x38000000u;
        rebiased += 0xFFFu + ((rebiased >> 13) & 1u);
        return (uint16_t)(sign | (rebiased >> 13));
    }
    uint32_t exponent = magnitude >> 23;
    if (exponent < 102u)
        return sign;                                                          /* < 2^-25: zero */
    /* subnormal: count of 2^-24 units = full mantissa >> (126 - exponent), rounded */
    uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
    uint32_t shift = 126u - exponent;
    uint32_t kept = mantissa >> shift;
    uint32_t dropped = mantissa & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (dropped > halfway || (dropped == halfway && (kept & 1u)))
        kept++;
    return (uint16_t)(sign | kept);
}

/* Rounds a float32 to the nearest bfloat16 value, kept in float32 (for the bf16_compute fault). */
static inline float round_to_bf16(float value)
{
    return bf16_to_float(float_to_bf16(value));
}

#endif
