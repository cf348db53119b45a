//go:build !purego

#include "textflag.h"

// Sixteen-byte constants, broadcast to both lanes of a YMM register.
DATA quotes<>+0(SB)/8, $0x2222222222222222
DATA quotes<>+8(SB)/8, $0x2222222222222222
GLOBL quotes<>(SB), RODATA|NOPTR, $16

DATA backslashes<>+0(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA backslashes<>+8(SB)/8, $0x5c5c5c5c5c5c5c5c
GLOBL backslashes<>(SB), RODATA|NOPTR, $16

DATA top3<>+0(SB)/8, $0xe0e0e0e0e0e0e0e0
DATA top3<>+8(SB)/8, $0xe0e0e0e0e0e0e0e0
GLOBL top3<>(SB), RODATA|NOPTR, $16

DATA nibble<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibble<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nibble<>(SB), RODATA|NOPTR, $16

DATA ubit<>+0(SB)/8, $0x1010101010101010
DATA ubit<>+8(SB)/8, $0x1010101010101010
GLOBL ubit<>(SB), RODATA|NOPTR, $16

// The characters that may follow a backslash, as nibble tables: class(b) =
// lo[b&15] & hi[b>>4]. Bit 0: 0x22 " and 0x2F /; bit 1: 0x5C \; bit 2: 0x62 b,
// 0x66 f, 0x6E n; bit 3: 0x72 r, 0x74 t; bit 4 (0x10): 0x75 u.
DATA lotab<>+0(SB)/8, $0x00041008000d0000
DATA lotab<>+8(SB)/8, $0x0104000200000000
GLOBL lotab<>(SB), RODATA|NOPTR, $16

DATA hitab<>+0(SB)/8, $0x1804020000010000
DATA hitab<>+8(SB)/8, $0x0000000000000000
GLOBL hitab<>(SB), RODATA|NOPTR, $16

// MASK2(y0, y1, dst) stores the 64-bit mask of bytes with their high bit set
// in y0 (bytes 0-31) and y1 (32-63) at dst.
#define MASK2(y0, y1, dst) \
	VPMOVMSKB y0, AX \
	VPMOVMSKB y1, BX \
	SHLQ $32, BX \
	ORQ BX, AX \
	MOVQ AX, dst

// func block(p *[64]byte, m *Masks)
TEXT ·block(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ m+8(FP), DI
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1

	MASK2(Y0, Y1, 24(DI)) // High

	VBROADCASTI128 quotes<>(SB), Y8
	VPCMPEQB Y8, Y0, Y2
	VPCMPEQB Y8, Y1, Y3
	MASK2(Y2, Y3, 0(DI)) // Quote

	VBROADCASTI128 backslashes<>(SB), Y8
	VPCMPEQB Y8, Y0, Y2
	VPCMPEQB Y8, Y1, Y3
	MASK2(Y2, Y3, 8(DI)) // Backslash

	VPXOR Y11, Y11, Y11
	VBROADCASTI128 top3<>(SB), Y8
	VPAND Y8, Y0, Y2
	VPAND Y8, Y1, Y3
	VPCMPEQB Y11, Y2, Y2
	VPCMPEQB Y11, Y3, Y3
	MASK2(Y2, Y3, 16(DI)) // Control

	// class = lo[b&15] & hi[b>>4] (VPSHUFB gives 0 for an index with its high
	// bit set: the high nibble is shifted down and masked first)
	VBROADCASTI128 nibble<>(SB), Y12
	VBROADCASTI128 lotab<>(SB), Y13
	VBROADCASTI128 hitab<>(SB), Y14
	VPAND Y12, Y0, Y2
	VPAND Y12, Y1, Y3
	VPSHUFB Y2, Y13, Y2
	VPSHUFB Y3, Y13, Y3
	VPSRLW $4, Y0, Y4
	VPSRLW $4, Y1, Y5
	VPAND Y12, Y4, Y4
	VPAND Y12, Y5, Y5
	VPSHUFB Y4, Y14, Y4
	VPSHUFB Y5, Y14, Y5
	VPAND Y4, Y2, Y2
	VPAND Y5, Y3, Y3

	// U: class & 0x10 != 0
	VBROADCASTI128 ubit<>(SB), Y8
	VPAND Y8, Y2, Y4
	VPAND Y8, Y3, Y5
	VPCMPEQB Y8, Y4, Y4
	VPCMPEQB Y8, Y5, Y5
	MASK2(Y4, Y5, 40(DI))

	// EscapeChar: class & 0x0F != 0
	VPAND Y12, Y2, Y2
	VPAND Y12, Y3, Y3
	VPCMPEQB Y11, Y2, Y2
	VPCMPEQB Y11, Y3, Y3
	VPMOVMSKB Y2, AX
	VPMOVMSKB Y3, BX
	SHLQ $32, BX
	ORQ BX, AX
	NOTQ AX
	MOVQ AX, 32(DI)

	VZEROUPPER
	RET
