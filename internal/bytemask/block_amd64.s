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

// MASKS stores the masks of the 64 bytes at SI (in Y0 and Y1) at DI, in the
// order of Masks' fields: Quote, Backslash, Control, High, EscapeChar, U. It
// leaves 0x0F in each byte of Y12 and zero in Y11. (The characters that may
// follow a backslash are told by nibble tables: class(b) = lo[b&15] & hi[b>>4];
// VPSHUFB gives 0 for an index with its high bit set, so the high nibble is
// shifted down and masked first.)
#define MASKS \
	MASK2(Y0, Y1, 24(DI)) \
	VBROADCASTI128 quotes<>(SB), Y8 \
	VPCMPEQB Y8, Y0, Y2 \
	VPCMPEQB Y8, Y1, Y3 \
	MASK2(Y2, Y3, 0(DI)) \
	VBROADCASTI128 backslashes<>(SB), Y8 \
	VPCMPEQB Y8, Y0, Y2 \
	VPCMPEQB Y8, Y1, Y3 \
	MASK2(Y2, Y3, 8(DI)) \
	VPXOR Y11, Y11, Y11 \
	VBROADCASTI128 top3<>(SB), Y8 \
	VPAND Y8, Y0, Y2 \
	VPAND Y8, Y1, Y3 \
	VPCMPEQB Y11, Y2, Y2 \
	VPCMPEQB Y11, Y3, Y3 \
	MASK2(Y2, Y3, 16(DI)) \
	VBROADCASTI128 nibble<>(SB), Y12 \
	VBROADCASTI128 lotab<>(SB), Y13 \
	VBROADCASTI128 hitab<>(SB), Y14 \
	VPAND Y12, Y0, Y2 \
	VPAND Y12, Y1, Y3 \
	VPSHUFB Y2, Y13, Y2 \
	VPSHUFB Y3, Y13, Y3 \
	VPSRLW $4, Y0, Y4 \
	VPSRLW $4, Y1, Y5 \
	VPAND Y12, Y4, Y4 \
	VPAND Y12, Y5, Y5 \
	VPSHUFB Y4, Y14, Y4 \
	VPSHUFB Y5, Y14, Y5 \
	VPAND Y4, Y2, Y2 \
	VPAND Y5, Y3, Y3 \
	VBROADCASTI128 ubit<>(SB), Y8 \
	VPAND Y8, Y2, Y4 \
	VPAND Y8, Y3, Y5 \
	VPCMPEQB Y8, Y4, Y4 \
	VPCMPEQB Y8, Y5, Y5 \
	MASK2(Y4, Y5, 40(DI)) \
	VPAND Y12, Y2, Y2 \
	VPAND Y12, Y3, Y3 \
	VPCMPEQB Y11, Y2, Y2 \
	VPCMPEQB Y11, Y3, Y3 \
	VPMOVMSKB Y2, AX \
	VPMOVMSKB Y3, BX \
	SHLQ $32, BX \
	ORQ BX, AX \
	NOTQ AX \
	MOVQ AX, 32(DI)

// The nibble tables of the UTF-8 check (utf8.go: firstHigh, firstLow,
// secondHigh) and its constants: a byte minus 0x60 (0x70), saturated, has its
// high bit set when it is 0xE0 (0xF0) or more, a lead of three (four) bytes.
DATA firsthigh<>+0(SB)/8, $0x0202020202020202
DATA firsthigh<>+8(SB)/8, $0x4915012180808080
GLOBL firsthigh<>(SB), RODATA|NOPTR, $16

DATA firstlow<>+0(SB)/8, $0xcbcbcb8b8383a3e7
DATA firstlow<>+8(SB)/8, $0xcbcbdbcbcbcbcbcb
GLOBL firstlow<>(SB), RODATA|NOPTR, $16

DATA secondhigh<>+0(SB)/8, $0x0101010101010101
DATA secondhigh<>+8(SB)/8, $0x01010101babaaee6
GLOBL secondhigh<>(SB), RODATA|NOPTR, $16

DATA lead3<>+0(SB)/8, $0x6060606060606060
DATA lead3<>+8(SB)/8, $0x6060606060606060
GLOBL lead3<>(SB), RODATA|NOPTR, $16

DATA lead4<>+0(SB)/8, $0x7070707070707070
DATA lead4<>+8(SB)/8, $0x7070707070707070
GLOBL lead4<>(SB), RODATA|NOPTR, $16

DATA highbits<>+0(SB)/8, $0x8080808080808080
DATA highbits<>+8(SB)/8, $0x8080808080808080
GLOBL highbits<>(SB), RODATA|NOPTR, $16

// UTF8CONSTS loads UTF8HALF's and UTF8CHECK's tables and constants:
// Y13-Y15 the three lookup tables, Y10 and Y9 the lead bytes of three and four
// bytes, Y8 the high bits.
#define UTF8CONSTS \
	VBROADCASTI128 firsthigh<>(SB), Y13 \
	VBROADCASTI128 firstlow<>(SB), Y14 \
	VBROADCASTI128 secondhigh<>(SB), Y15 \
	VBROADCASTI128 lead3<>(SB), Y10 \
	VBROADCASTI128 lead4<>(SB), Y9 \
	VBROADCASTI128 highbits<>(SB), Y8

// ASCIIDONE returns with Invalid zero when no byte of the block (High, at
// 24(DI)) nor of the three before it (two at before2, one at before1) has its
// high bit set: no UTF-8 error can show. Else it goes on at utf8.
#define ASCIIDONE(before2, before1) \
	MOVWQZX before2, R9 \
	MOVBQZX before1, R10 \
	SHLQ $16, R10 \
	ORQ R10, R9 \
	ANDQ $0x808080, R9 \
	ORQ 24(DI), R9 \
	JNZ utf8 \
	MOVQ $0, 48(DI) \
	VZEROUPPER \
	RET

// UTF8HALF sets bit i of dst (32 bits) when byte i of in shows no UTF-8 error,
// judged with the 32 bytes at p1(SI), p2(SI) and p3(SI): in shifted by one,
// two and three bytes.
#define UTF8HALF(p1, p2, p3, in, dst) \
	VMOVDQU p1(SI), Y2 \
	VPSRLW $4, Y2, Y3 \
	VPAND Y12, Y3, Y3 \
	VPSHUFB Y3, Y13, Y3 \
	VPAND Y12, Y2, Y2 \
	VPSHUFB Y2, Y14, Y2 \
	VPAND Y3, Y2, Y2 \
	VPSRLW $4, in, Y3 \
	VPAND Y12, Y3, Y3 \
	VPSHUFB Y3, Y15, Y3 \
	VPAND Y3, Y2, Y2 \
	VMOVDQU p2(SI), Y3 \
	VPSUBUSB Y10, Y3, Y3 \
	VMOVDQU p3(SI), Y4 \
	VPSUBUSB Y9, Y4, Y4 \
	VPOR Y4, Y3, Y3 \
	VPAND Y8, Y3, Y3 \
	VPXOR Y3, Y2, Y2 \
	VPCMPEQB Y11, Y2, Y2 \
	VPMOVMSKB Y2, dst

// func TextBlock(w *[67]byte, m *Masks)
TEXT ·TextBlock(SB), NOSPLIT, $0-16
	CMPB ·avx512(SB), $0
	JEQ avx2
	JMP ·textBlock512(SB)

avx2:
	MOVQ w+0(FP), SI
	MOVQ m+8(FP), DI
	ADDQ $3, SI
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	MASKS

	ASCIIDONE(-3(SI), -1(SI))

utf8:
	UTF8CONSTS
	VPXOR Y11, Y11, Y11
	UTF8HALF(-1, -2, -3, Y0, AX)
	UTF8HALF(31, 30, 29, Y1, BX)
	NOTL AX
	NOTL BX
	SHLQ $32, BX
	ORQ BX, AX
	MOVQ AX, 48(DI) // Invalid
	VZEROUPPER
	RET


// Thirty-two-byte constants of utf8Blocks, read from memory (no register is
// left; 0x80 is Y8's highbits).
DATA e2s<>+0(SB)/8, $0xe2e2e2e2e2e2e2e2
DATA e2s<>+8(SB)/8, $0xe2e2e2e2e2e2e2e2
DATA e2s<>+16(SB)/8, $0xe2e2e2e2e2e2e2e2
DATA e2s<>+24(SB)/8, $0xe2e2e2e2e2e2e2e2
GLOBL e2s<>(SB), RODATA|NOPTR, $32

DATA fes<>+0(SB)/8, $0xfefefefefefefefe
DATA fes<>+8(SB)/8, $0xfefefefefefefefe
DATA fes<>+16(SB)/8, $0xfefefefefefefefe
DATA fes<>+24(SB)/8, $0xfefefefefefefefe
GLOBL fes<>(SB), RODATA|NOPTR, $32

DATA a8s<>+0(SB)/8, $0xa8a8a8a8a8a8a8a8
DATA a8s<>+8(SB)/8, $0xa8a8a8a8a8a8a8a8
DATA a8s<>+16(SB)/8, $0xa8a8a8a8a8a8a8a8
DATA a8s<>+24(SB)/8, $0xa8a8a8a8a8a8a8a8
GLOBL a8s<>(SB), RODATA|NOPTR, $32

// UTF8CHECK ORs into Y6 the UTF-8 errors of the 32 bytes in in, prev holding
// the 32 bytes before them: prev1, prev2 and prev3 (in shifted by one, two and
// three bytes, from prev) are made with VPERM2I128 and VPALIGNR, then judged as
// in textBlock. It also ORs into R8 the mask of the bytes that end U+2028 or
// U+2029 (E2 80 A8, E2 80 A9). Y8-Y10 and Y12-Y15 hold the constants; Y2-Y5,
// Y11 and DX are used.
#define UTF8CHECK(in, prev) \
	VPERM2I128 $0x21, in, prev, Y5 \
	VPALIGNR $15, Y5, in, Y2 \
	VPALIGNR $14, Y5, in, Y3 \
	VPALIGNR $13, Y5, in, Y4 \
	VPCMPEQB e2s<>(SB), Y3, Y11 \
	VPCMPEQB Y8, Y2, Y5 \
	VPAND Y5, Y11, Y11 \
	VPAND fes<>(SB), in, Y5 \
	VPCMPEQB a8s<>(SB), Y5, Y5 \
	VPAND Y5, Y11, Y11 \
	VPMOVMSKB Y11, DX \
	ORL DX, R8 \
	VPSRLW $4, Y2, Y11 \
	VPAND Y12, Y11, Y11 \
	VPSHUFB Y11, Y13, Y11 \
	VPAND Y12, Y2, Y2 \
	VPSHUFB Y2, Y14, Y2 \
	VPAND Y11, Y2, Y2 \
	VPSRLW $4, in, Y11 \
	VPAND Y12, Y11, Y11 \
	VPSHUFB Y11, Y15, Y11 \
	VPAND Y11, Y2, Y2 \
	VPSUBUSB Y10, Y3, Y3 \
	VPSUBUSB Y9, Y4, Y4 \
	VPOR Y4, Y3, Y3 \
	VPAND Y8, Y3, Y3 \
	VPXOR Y3, Y2, Y2 \
	VPOR Y2, Y6, Y6

// func utf8Blocks(p *byte, blocks int, before *byte) (valid, lineSep bool)
TEXT ·utf8Blocks(SB), NOSPLIT, $0-26
	MOVQ p+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ before+16(FP), DX
	VBROADCASTI128 nibble<>(SB), Y12
	UTF8CONSTS
	VPXOR Y7, Y7, Y7 // the 32 bytes before the first block: none (ASCII)...
	TESTQ DX, DX
	JZ none
	VMOVDQU (DX), Y7 // ...or those at before
none:
	VPXOR Y6, Y6, Y6 // the errors so far
	XORL R8, R8      // the line separators so far

loop:
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1

	// ASCII, after three ASCII bytes: nothing to judge.
	VPOR Y0, Y1, Y2
	VPMOVMSKB Y2, AX
	VPMOVMSKB Y7, BX
	ANDL $0xE0000000, BX
	ORL BX, AX
	JZ next

	UTF8CHECK(Y0, Y7)
	UTF8CHECK(Y1, Y0)

next:
	VMOVDQU Y1, Y7
	ADDQ $64, SI
	DECQ CX
	JNZ loop

	VPTEST Y6, Y6
	SETEQ valid+24(FP)
	TESTL R8, R8
	SETNE lineSep+25(FP)
	VZEROUPPER
	RET

// SPECIALS sets Y2 (bytes 0-31) and Y5 (32-63) to the quotes, backslashes and
// control characters of the 64 bytes in Y0 and Y1, with Y8-Y10 the quotes,
// backslashes and top3 constants and Y11 zero (Y3, Y4, Y6, Y7 scratch).
#define SPECIALS \
	VPCMPEQB Y8, Y0, Y2 \
	VPCMPEQB Y9, Y0, Y3 \
	VPAND Y10, Y0, Y4 \
	VPCMPEQB Y11, Y4, Y4 \
	VPOR Y3, Y2, Y2 \
	VPOR Y4, Y2, Y2 \
	VPCMPEQB Y8, Y1, Y5 \
	VPCMPEQB Y9, Y1, Y6 \
	VPAND Y10, Y1, Y7 \
	VPCMPEQB Y11, Y7, Y7 \
	VPOR Y6, Y5, Y5 \
	VPOR Y7, Y5, Y5

// func stopsBlock(p *[64]byte) (special, high uint64)
TEXT ·stopsBlock(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	MASK2(Y0, Y1, high+16(FP))
	VPXOR Y11, Y11, Y11
	VBROADCASTI128 quotes<>(SB), Y8
	VBROADCASTI128 backslashes<>(SB), Y9
	VBROADCASTI128 top3<>(SB), Y10
	SPECIALS
	MASK2(Y2, Y5, special+8(FP))
	VZEROUPPER
	RET

// func specialBlocks(p *byte, blocks int, out *uint64)
//
// stopsBlock's special mask for each of the blocks of 64 bytes at p, into
// out[0:blocks]: the constants loaded once for them all.
TEXT ·specialBlocks(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ out+16(FP), DI
	VPXOR Y11, Y11, Y11
	VBROADCASTI128 quotes<>(SB), Y8
	VBROADCASTI128 backslashes<>(SB), Y9
	VBROADCASTI128 top3<>(SB), Y10
	TESTQ CX, CX
	JZ specialsdone

specialsloop:
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	SPECIALS
	MASK2(Y2, Y5, 0(DI))
	ADDQ $64, SI
	ADDQ $8, DI
	DECQ CX
	JNZ specialsloop

specialsdone:
	VZEROUPPER
	RET

// func textBlock512(w *[67]byte, m *Masks)
//
// TextBlock with AVX-512 (F and BW): the 64 bytes in one register, each mask
// straight from a compare or a test into a mask register. The same tables and
// steps as TextBlock's, in Z0-Z15 only (VZEROUPPER cleans those).
TEXT ·textBlock512(SB), NOSPLIT, $0-16
	MOVQ w+0(FP), SI
	MOVQ m+8(FP), DI
	VMOVDQU64 3(SI), Z0
	VPMOVB2M Z0, K1
	KMOVQ K1, 24(DI) // High

	VBROADCASTI32X4 quotes<>(SB), Z8
	VPCMPEQB Z8, Z0, K2
	KMOVQ K2, 0(DI) // Quote
	VBROADCASTI32X4 backslashes<>(SB), Z9
	VPCMPEQB Z9, Z0, K3
	KMOVQ K3, 8(DI) // Backslash
	VBROADCASTI32X4 top3<>(SB), Z10
	VPTESTNMB Z10, Z0, K4
	KMOVQ K4, 16(DI) // Control

	VBROADCASTI32X4 nibble<>(SB), Z12
	VBROADCASTI32X4 lotab<>(SB), Z13
	VBROADCASTI32X4 hitab<>(SB), Z14
	VPANDQ Z12, Z0, Z2
	VPSHUFB Z2, Z13, Z2
	VPSRLW $4, Z0, Z3
	VPANDQ Z12, Z3, Z3 // the high nibbles, kept for the UTF-8 check
	VPSHUFB Z3, Z14, Z4
	VPANDQ Z4, Z2, Z2 // the class of each byte
	VBROADCASTI32X4 ubit<>(SB), Z11
	VPTESTMB Z11, Z2, K5
	KMOVQ K5, 40(DI) // U
	VPTESTMB Z12, Z2, K6
	KMOVQ K6, 32(DI) // EscapeChar

	ASCIIDONE(0(SI), 2(SI))

utf8:
	VMOVDQU64 2(SI), Z4 // prev1
	VMOVDQU64 1(SI), Z5 // prev2
	VMOVDQU64 0(SI), Z6 // prev3
	VBROADCASTI32X4 firsthigh<>(SB), Z8
	VBROADCASTI32X4 firstlow<>(SB), Z9
	VBROADCASTI32X4 secondhigh<>(SB), Z10
	VPSRLW $4, Z4, Z7
	VPANDQ Z12, Z7, Z7
	VPSHUFB Z7, Z8, Z7
	VPANDQ Z12, Z4, Z4
	VPSHUFB Z4, Z9, Z4
	VPANDQ Z7, Z4, Z4
	VPSHUFB Z3, Z10, Z7
	VPANDQ Z7, Z4, Z4 // the errors the pairs can show
	VBROADCASTI32X4 lead3<>(SB), Z11
	VBROADCASTI32X4 lead4<>(SB), Z13
	VBROADCASTI32X4 highbits<>(SB), Z14
	VPSUBUSB Z11, Z5, Z5
	VPSUBUSB Z13, Z6, Z6
	VPORQ Z6, Z5, Z5
	VPANDQ Z14, Z5, Z5 // must be a third or fourth byte
	VPXORQ Z5, Z4, Z4
	VPTESTMB Z4, Z4, K7
	KMOVQ K7, 48(DI) // Invalid
	VZEROUPPER
	RET

// func plainBlocks512(p *byte, n int) (int, bool)
//
// PlainRun's loop in AVX-512: from p (the three bytes before it readable), the
// 64-byte blocks within n bytes are read while each is plain; it returns where
// the first block that is not (or the bytes too few for one) starts, less one
// when the block before ends in a backslash that escapes its first byte; or,
// with true, the end of the string, when that block is plain up to a closing
// quote (a UTF-8 error at the quote is a character it cuts short). The
// masks are textBlock512's, with every constant kept in Z16-Z27 across
// blocks; a block is plain when (quote &^ escaped) | control | (escaped &^
// escape characters) | invalid is zero. Escaped is escapedAfter in general
// registers (R15 the escape carried from the block before), so that a block's
// start never waits for the block before it to be judged.
TEXT ·plainBlocks512(SB), NOSPLIT, $0-25
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	XORQ AX, AX
	XORQ R15, R15
	VBROADCASTI32X4 quotes<>(SB), Z16
	VBROADCASTI32X4 backslashes<>(SB), Z17
	VBROADCASTI32X4 top3<>(SB), Z18
	VBROADCASTI32X4 nibble<>(SB), Z19
	VBROADCASTI32X4 lotab<>(SB), Z20
	VBROADCASTI32X4 hitab<>(SB), Z21
	VBROADCASTI32X4 firsthigh<>(SB), Z22
	VBROADCASTI32X4 firstlow<>(SB), Z23
	VBROADCASTI32X4 secondhigh<>(SB), Z24
	VBROADCASTI32X4 lead3<>(SB), Z25
	VBROADCASTI32X4 lead4<>(SB), Z26
	VBROADCASTI32X4 highbits<>(SB), Z27
	MOVQ $0x5555555555555555, R11 // even

plainloop:
	LEAQ 64(AX), DX
	CMPQ DX, CX
	JGT plaindone
	LEAQ (SI)(AX*1), DI
	VMOVDQU64 (DI), Z0
	VPCMPEQB Z16, Z0, K2 // quote
	VPCMPEQB Z17, Z0, K3 // backslash
	VPTESTNMB Z18, Z0, K4 // control
	VPANDQ Z19, Z0, Z2
	VPSHUFB Z2, Z20, Z2
	VPSRLW $4, Z0, Z3
	VPANDQ Z19, Z3, Z3 // the high nibbles
	VPSHUFB Z3, Z21, Z1
	VPANDQ Z1, Z2, Z2
	VPTESTMB Z19, Z2, K6 // a character of a two-byte escape

	VMOVDQU64 -3(DI), Z6 // prev3
	VPORQ Z0, Z6, Z8
	VPMOVB2M Z8, K7 // ASCII, after three ASCII bytes: no error (K7, the errors, is none)
	KORTESTQ K7, K7
	JZ plainjudged
	VMOVDQU64 -1(DI), Z4 // prev1
	VMOVDQU64 -2(DI), Z5 // prev2
	VPSRLW $4, Z4, Z7
	VPANDQ Z19, Z7, Z7
	VPSHUFB Z7, Z22, Z7
	VPANDQ Z19, Z4, Z4
	VPSHUFB Z4, Z23, Z4
	VPANDQ Z7, Z4, Z4
	VPSHUFB Z3, Z24, Z7
	VPANDQ Z7, Z4, Z4 // the errors the pairs can show
	VPSUBUSB Z25, Z5, Z5
	VPSUBUSB Z26, Z6, Z6
	VPORQ Z6, Z5, Z5
	VPANDQ Z27, Z5, Z5 // must be a third or fourth byte
	VPXORQ Z5, Z4, Z4
	VPTESTMB Z4, Z4, K7 // invalid

plainjudged:
	KMOVQ K3, BX
	MOVQ R15, R12
	NOTQ R12
	ANDQ R12, BX // the backslashes, less one the block before escapes
	MOVQ BX, R12
	SHLQ $1, R12
	ORQ R15, R12 // follows
	MOVQ R11, R13
	NOTQ R13
	ANDQ BX, R13 // backslash &^ even
	MOVQ R12, R14
	NOTQ R14
	ANDQ R14, R13 // odd starts
	ADDQ BX, R13 // even runs
	MOVL $0, R10
	ADCL $0, R10 // the escape carried out
	SHLQ $1, R13
	XORQ R11, R13
	ANDQ R12, R13 // escaped

	MOVQ R13, R14
	NOTQ R14
	KMOVQ K2, R8
	ANDQ R14, R8 // quotes not escaped
	KMOVQ K4, R9
	ORQ R9, R8
	KMOVQ K6, R9
	NOTQ R9
	ANDQ R13, R9 // escapes of no two-byte escape character
	ORQ R9, R8
	KMOVQ K7, R9
	ORQ R9, R8
	TESTQ R8, R8
	JNZ plainstop

	MOVQ R10, R15
	ADDQ $64, AX
	JMP plainloop

plainstop: // R8 holds what stopped it, R13 the escaped bits, R14 their complement
	KMOVQ K2, DX
	ANDQ R14, DX // quotes not escaped
	JZ plaindone
	MOVQ DX, BX
	NEGQ BX
	ANDQ DX, BX
	DECQ BX // before the first of them
	KMOVQ K6, R9
	NOTQ R9
	ANDQ R13, R9
	KMOVQ K4, R10
	ORQ R10, R9
	ANDQ BX, R9 // control characters and other escapes before it
	KMOVQ K7, R10
	LEAQ 1(BX)(BX*1), BX
	ANDQ BX, R10 // UTF-8 errors up to it
	ORQ R10, R9
	JNZ plaindone
	TZCNTQ DX, DX
	LEAQ 1(AX)(DX*1), AX
	MOVQ AX, ret+16(FP)
	MOVB $1, ret1+24(FP)
	VZEROUPPER
	RET

plaindone:
	SUBQ R15, AX
	MOVQ AX, ret+16(FP)
	MOVB $0, ret1+24(FP)
	VZEROUPPER
	RET

// escletters: the letter of each control character's two-byte escape, by the
// character (\t \n \r), 0 for the others; VPERMB reads it by a byte's low six
// bits.
DATA escletters<>+0(SB)/8, $0
DATA escletters<>+8(SB)/8, $0x00007200006e7400
DATA escletters<>+16(SB)/8, $0
DATA escletters<>+24(SB)/8, $0
DATA escletters<>+32(SB)/8, $0
DATA escletters<>+40(SB)/8, $0
DATA escletters<>+48(SB)/8, $0
DATA escletters<>+56(SB)/8, $0
GLOBL escletters<>(SB), RODATA|NOPTR, $64

// UTF8CONSTS512 loads the AVX-512 UTF-8 check's tables and constants (those
// of UTF8CONSTS, a lane each): Z16 the low nibbles, Z17-Z19 the tables, Z20
// and Z21 the lead bytes of three and four bytes, Z22 the high bits (and
// 0x80); Z23-Z25 the bytes of U+2028 and U+2029 (E2, then A8 less its low bit).
#define UTF8CONSTS512 \
	VBROADCASTI32X4 nibble<>(SB), Z16 \
	VBROADCASTI32X4 firsthigh<>(SB), Z17 \
	VBROADCASTI32X4 firstlow<>(SB), Z18 \
	VBROADCASTI32X4 secondhigh<>(SB), Z19 \
	VBROADCASTI32X4 lead3<>(SB), Z20 \
	VBROADCASTI32X4 lead4<>(SB), Z21 \
	VBROADCASTI32X4 highbits<>(SB), Z22 \
	VBROADCASTI32X4 e2s<>(SB), Z23 \
	VBROADCASTI32X4 fes<>(SB), Z24 \
	VBROADCASTI32X4 a8s<>(SB), Z25

// UTF8ERRORS512(in, p1, p2, p3, t1, t2, out) sets the bytes of out that are
// not zero where a byte of in shows a UTF-8 error, p1, p2 and p3 holding the
// bytes one, two and three before each (Keiser and Lemire's tables, as in
// UTF8HALF; constants as UTF8CONSTS512 loads them; t1 and t2 scratch).
#define UTF8ERRORS512(in, p1, p2, p3, t1, t2, out) \
	VPSRLW $4, p1, t1 \
	VPANDQ Z16, t1, t1 \
	VPSHUFB t1, Z17, t1 \
	VPANDQ Z16, p1, out \
	VPSHUFB out, Z18, out \
	VPANDQ t1, out, out \
	VPSRLW $4, in, t1 \
	VPANDQ Z16, t1, t1 \
	VPSHUFB t1, Z19, t1 \
	VPANDQ t1, out, out \
	VPSUBUSB Z20, p2, t1 \
	VPSUBUSB Z21, p3, t2 \
	VPORQ t2, t1, t1 \
	VPANDQ Z22, t1, t1 \
	VPXORQ t1, out, out

// LINESEPS512(in, p1, p2, t, k) sets k to the bytes of in that end U+2028 or
// U+2029 (E2 80 A8, E2 80 A9: p2 E2, p1 80, in A8 less its low bit; t
// scratch).
#define LINESEPS512(in, p1, p2, t, k) \
	VPCMPEQB Z23, p2, k \
	VPCMPEQB Z22, p1, k, k \
	VPANDQ Z24, in, t \
	VPCMPEQB Z25, t, k, k

// before1: byte i is i-1 (mod 64), VPERMB's indexes for a block's bytes one
// place on (the byte before each).
DATA before1<>+0(SB)/8, $0x060504030201003f
DATA before1<>+8(SB)/8, $0x0e0d0c0b0a090807
DATA before1<>+16(SB)/8, $0x161514131211100f
DATA before1<>+24(SB)/8, $0x1e1d1c1b1a191817
DATA before1<>+32(SB)/8, $0x262524232221201f
DATA before1<>+40(SB)/8, $0x2e2d2c2b2a292827
DATA before1<>+48(SB)/8, $0x363534333231302f
DATA before1<>+56(SB)/8, $0x3e3d3c3b3a393837
GLOBL before1<>(SB), RODATA|NOPTR, $64

// func escapeBlocks512(dst *byte, room int, src *byte, n int, check bool) (written, read int)
//
// EscapeBlocks' loop (AVX-512 BW, VBMI, VBMI2; BMI2): each 64-byte block of
// src within n bytes, and then the bytes too few for a block (loaded under a
// mask, as a block whose other bytes are nothing), is written at dst while
// 128 bytes of room are left. A block with no quote, backslash or control
// character is stored as it is; in another, each control character becomes
// its letter (a block with one that has none stops the loop) and each half of
// 32 bytes is expanded into 32 to 64 bytes with VPEXPANDB: every byte takes
// the odd slot of its pair of slots, an escaped byte's even slot holds its
// backslash, and the slots not used are dropped (the expand mask is PEXT(odd
// slots, used slots)). DX is the bytes of the block (64, or fewer at the
// end): a short block writes what a whole one would less the 64-DX bytes past
// its end, which are last.
//
// With check (R15), a block is first judged as UTF-8 (as in utf8Blocks512,
// with its bytes, and the three before each, loaded under the block's mask;
// the first block's from the block itself, VPERMB one place on, with nothing
// before it): one with an error in its bytes, or a byte that ends U+2028 or
// U+2029, stops the loop. Constants in Z16-Z30 (the UTF-8 check's as
// UTF8CONSTS512 loads them).
TEXT ·escapeBlocks512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ room+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	MOVBQZX check+32(FP), R15
	XORQ AX, AX // read
	XORQ R12, R12 // written
	VBROADCASTI32X4 quotes<>(SB), Z26
	VBROADCASTI32X4 backslashes<>(SB), Z27
	VBROADCASTI32X4 top3<>(SB), Z28
	VMOVDQU64 escletters<>(SB), Z29
	MOVQ $0x5555555555555555, R8 // even slots
	MOVQ $0xaaaaaaaaaaaaaaaa, R9 // odd slots
	TESTQ R15, R15
	JZ escloop
	UTF8CONSTS512
	VMOVDQU64 before1<>(SB), Z30

escloop:
	MOVQ CX, DX
	SUBQ AX, DX
	JLE escdone
	LEAQ 128(R12), R11
	CMPQ R11, R10
	JGT escdone
	MOVQ $64, R11
	CMPQ DX, R11
	CMOVQGT R11, DX // the block's bytes
	MOVQ $-1, R11
	BZHIQ DX, R11, R11
	KMOVQ R11, K7
	CMPQ DX, $64
	JNE escpart
	VMOVDQU64 (SI)(AX*1), Z0
	JMP escloaded

escpart:
	VMOVDQU8.Z (SI)(AX*1), K7, Z0

escloaded:
	TESTQ R15, R15
	JZ escclassify
	TESTQ AX, AX
	JNZ escbefore
	MOVQ $-2, R11
	KMOVQ R11, K1 // all but the first byte: nothing is before it
	VPERMB.Z Z0, Z30, K1, Z4 // prev1
	VPERMB.Z Z4, Z30, K1, Z5 // prev2
	VPERMB.Z Z5, Z30, K1, Z6 // prev3
	JMP escjudge

escbefore:
	CMPQ DX, $64
	JNE escbeforetail
	VMOVDQU64 -1(SI)(AX*1), Z4 // prev1
	VMOVDQU64 -2(SI)(AX*1), Z5 // prev2
	VMOVDQU64 -3(SI)(AX*1), Z6 // prev3
	JMP escjudge

escbeforetail:
	VMOVDQU8.Z -1(SI)(AX*1), K7, Z4 // prev1
	VMOVDQU8.Z -2(SI)(AX*1), K7, Z5 // prev2
	VMOVDQU8.Z -3(SI)(AX*1), K7, Z6 // prev3

escjudge:
	VPORQ Z0, Z6, Z8
	VPTERNLOGQ $0xfe, Z5, Z4, Z8 // or all four: in a tail of one or two bytes, prev1 and prev2 hold bytes prev3 does not
	VPMOVB2M Z8, K1
	KORTESTQ K1, K1
	JZ escclassify // ASCII, after three ASCII bytes: nothing to judge
	LINESEPS512(Z0, Z4, Z5, Z8, K1)
	KORTESTQ K1, K1
	JNZ escdone
	UTF8ERRORS512(Z0, Z4, Z5, Z6, Z8, Z10, Z9)
	VPTESTMB Z9, Z9, K7, K1
	KORTESTQ K1, K1
	JNZ escdone // a UTF-8 error in the block's bytes

escclassify:
	VPCMPEQB Z26, Z0, K7, K1
	VPCMPEQB Z27, Z0, K7, K2
	VPTESTNMB Z28, Z0, K7, K3 // control
	KORQ K1, K2, K4
	KORQ K3, K4, K4
	KORTESTQ K4, K4
	JNZ escspecial
	VMOVDQU64 Z0, (DI)(R12*1)
	ADDQ DX, AX
	ADDQ DX, R12
	JMP escloop

escspecial:
	VPERMB Z29, Z0, Z1 // each byte's letter, by its low six bits
	VPTESTNMB Z1, Z1, K5
	KANDQ K3, K5, K5
	KORTESTQ K5, K5
	JNZ escdone // a control character written \u00XX: the caller's
	VMOVDQU8 Z1, K3, Z0 // control characters become their letters
	KMOVQ K4, BX

	MOVL BX, R11 // the first 32 bytes
	PDEPQ R8, R11, R11
	ORQ R9, R11
	POPCNTQ R11, R13
	PEXTQ R11, R9, R11
	KMOVQ R11, K6
	VMOVDQA64 Z27, Z2
	VPEXPANDB Z0, K6, Z2
	VMOVDQU64 Z2, (DI)(R12*1)
	ADDQ R13, R12

	SHRQ $32, BX // the last 32
	PDEPQ R8, BX, BX
	ORQ R9, BX
	POPCNTQ BX, R13
	PEXTQ BX, R9, BX
	KMOVQ BX, K6
	VEXTRACTI64X4 $1, Z0, Y3
	VMOVDQA64 Z27, Z2
	VPEXPANDB Z3, K6, Z2
	VMOVDQU64 Z2, (DI)(R12*1)
	LEAQ -64(R12)(R13*1), R12
	ADDQ DX, R12
	ADDQ DX, AX
	JMP escloop

escdone:
	MOVQ R12, written+40(FP)
	MOVQ AX, read+48(FP)
	VZEROUPPER
	RET

// func utf8Blocks512(p *byte, blocks int) (valid, lineSep bool)
//
// utf8Blocks in AVX-512 (F and BW), the three bytes before p being text: a
// block in one register, the bytes one, two and three before each loaded from
// p-1, p-2 and p-3. A block with no high bit in it or in the three bytes
// before it has nothing to judge; else its errors are judged as in UTF8CHECK
// (Keiser and Lemire) and ORed into Z6, and the bytes that end U+2028 or
// U+2029 into R8. Constants in Z16-Z25.
TEXT ·utf8Blocks512(SB), NOSPLIT, $0-18
	MOVQ p+0(FP), SI
	MOVQ blocks+8(FP), CX
	UTF8CONSTS512
	VPXORQ Z6, Z6, Z6 // the errors so far
	XORQ R8, R8 // the line separators so far

u512loop:
	VMOVDQU64 (SI), Z0
	VMOVDQU64 -1(SI), Z1 // prev1
	VMOVDQU64 -2(SI), Z2 // prev2
	VMOVDQU64 -3(SI), Z3 // prev3

	VPORQ Z0, Z3, Z4 // ASCII, after three ASCII bytes: nothing to judge
	VPMOVB2M Z4, K4
	KORTESTQ K4, K4
	JZ u512next

	LINESEPS512(Z0, Z1, Z2, Z4, K4)
	KMOVQ K4, AX
	ORQ AX, R8
	UTF8ERRORS512(Z0, Z1, Z2, Z3, Z4, Z7, Z5)
	VPORQ Z5, Z6, Z6

u512next:
	ADDQ $64, SI
	DECQ CX
	JNZ u512loop

	VPTESTMB Z6, Z6, K4
	KORTESTQ K4, K4
	SETEQ valid+16(FP)
	TESTQ R8, R8
	SETNE lineSep+17(FP)
	VZEROUPPER
	RET
