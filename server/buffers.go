package server

import "google.golang.org/grpc/mem"

// messageBuffers is where the gRPC servers take the buffers a received message
// is read into: grpc-go's tiers (256 B, 4 KiB, 16 KiB) and then one per power
// of two from 32 KiB to 16 MiB. grpc-go's default has no size between 32 KiB
// and 1 MiB and clears a buffer's whole capacity when handing it out, so a
// 65 KB prompt cleared 1 MiB and a 520 KB one 1 MiB too; here a buffer above
// 16 KiB is at most twice the message (still cleared).
var messageBuffers = func() mem.BufferPool {
	exps := []uint8{8, 12, 14}
	for e := uint8(15); e <= 24; e++ {
		exps = append(exps, e)
	}
	p, err := mem.NewBinaryTieredBufferPool(exps...)
	if err != nil {
		panic(err)
	}
	return p
}()
