package streamable

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// stackCheckEnv, set to 1, makes TestReserveStackLeavesRoomForAMessage
// run its check instead of starting a process for it.
const stackCheckEnv = "LIFELINE_STACK_CHECK"

// After reserveStack, a frame of messageStackHeadroom bytes below the
// caller fits without the stack being grown, that is, copied elsewhere:
// the growth happened in reserveStack. The check runs in a child process
// whose goroutines start with the runtime's fixed 2 KiB stack and whose
// stacks the collector never shrinks (GODEBUG adaptivestackstart=0 and
// gcshrinkstackoff=1), so that neither the stacks of earlier tests nor a
// collection in between decides it: reserveStack must grow the stack, and
// the second frame must not.
func TestReserveStackLeavesRoomForAMessage(t *testing.T) {
	const bound = 10 * time.Second
	if os.Getenv(stackCheckEnv) == "1" {
		type moves struct{ reserving, after bool }
		moved := make(chan moves, 1)
		go func() {
			start := stackAddress()
			reserveStack(false)
			reserved := stackAddress()
			headroomFrame(false)
			moved <- moves{reserving: reserved != start, after: stackAddress() != reserved}
		}()
		select {
		case m := <-moved:
			if !m.reserving {
				t.Fatal("reserveStack did not grow a fresh goroutine's 2 KiB stack: it reserved nothing")
			}
			if m.after {
				t.Fatal("a frame of messageStackHeadroom bytes after reserveStack grew the stack: reserveStack reserved too little")
			}
		case <-time.After(bound):
			t.Fatal("the check's goroutine did not report")
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestReserveStackLeavesRoomForAMessage$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), stackCheckEnv+"=1", "GODEBUG=adaptivestackstart=0,gcshrinkstackoff=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestReserveStackLeavesRoomForAMessage") {
		t.Fatalf("the check in a child process: %v\n%s", err, out)
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
