package streamable

import (
	"testing"
	"unsafe"
)

// After reserveStack, a frame of messageStackHeadroom bytes below the
// caller fits without the stack being grown, that is, copied elsewhere:
// the growth happened in reserveStack, where the frames above are few.
// (Were reserveStack's frame optimised away, a fresh goroutine's stack,
// 8 KiB or less, would grow at the second frame instead.)
func TestReserveStackLeavesRoomForAMessage(t *testing.T) {
	moved := make(chan bool, 1)
	go func() {
		reserveStack(false)
		before := stackAddress()
		headroomFrame(false)
		moved <- stackAddress() != before
	}()
	if <-moved {
		t.Fatal("a frame of messageStackHeadroom bytes after reserveStack grew the stack: reserveStack reserved nothing")
	}
}

// stackAddress is the address of a local of its own frame: from one
// caller, the same unless the stack was moved between calls.
//
//go:noinline
func stackAddress() uintptr {
	var local byte
	return uintptr(unsafe.Pointer(&local))
}

// headroomFrame has a frame of messageStackHeadroom bytes, as
// reserveStack has.
//
//go:noinline
func headroomFrame(never bool) byte {
	if never {
		var frame [messageStackHeadroom]byte
		return lastByte(frame[:])
	}
	return 0
}
