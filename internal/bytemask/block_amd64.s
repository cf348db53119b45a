//go:build !purego

#include "textflag.h"

DATA quotes<>+0(SB)/8, $0x2222222222222222
DATA quotes<>+8(SB)/8, $0x2222222222222222
GLOBL quotes<>(SB), RODATA|NOPTR, $16

DATA backslashes<>+0(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA backslashes<>+8(SB)/8, $0x5c5c5c5c5c5c5c5c
GLOBL backslashes<>(SB), RODATA|NOPTR, $16

DATA top3<>+0(SB)/8, $0xe0e0e0e0e0e0e0e0
DATA top3<>+8(SB)/8, $0xe0e0e0e0e0e0e0e0
GLOBL top3<>(SB), RODATA|NOPTR, $16

// One sixteen-byte chunk at off(SI): its four masks into AX (high), BX
// (quote), CX (backslash), DX (control).
#define CHUNK(off) \
	MOVOU off(SI), X0 \
	PMOVMSKB X0, AX \
	MOVO X0, X1 \
	PCMPEQB X8, X1 \
	PMOVMSKB X1, BX \
	MOVO X0, X2 \
	PCMPEQB X9, X2 \
	PMOVMSKB X2, CX \
	PAND X10, X0 \
	PCMPEQB X11, X0 \
	PMOVMSKB X0, DX

// The chunk's masks, shifted to its place, into the totals R8..R11.
#define ADD(shift) \
	SHLQ $shift, AX \
	ORQ AX, R11 \
	SHLQ $shift, BX \
	ORQ BX, R8 \
	SHLQ $shift, CX \
	ORQ CX, R9 \
	SHLQ $shift, DX \
	ORQ DX, R10

// func block(p *[64]byte, m *Masks)
TEXT ·block(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ m+8(FP), DI
	MOVOU quotes<>(SB), X8
	MOVOU backslashes<>(SB), X9
	MOVOU top3<>(SB), X10
	PXOR X11, X11
	CHUNK(0)
	MOVQ BX, R8
	MOVQ CX, R9
	MOVQ DX, R10
	MOVQ AX, R11
	CHUNK(16)
	ADD(16)
	CHUNK(32)
	ADD(32)
	CHUNK(48)
	ADD(48)
	MOVQ R8, 0(DI)
	MOVQ R9, 8(DI)
	MOVQ R10, 16(DI)
	MOVQ R11, 24(DI)
	RET
