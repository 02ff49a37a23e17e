package streamable

// messageStackHeadroom is the stack reserveStack asks for below servePost.
// A stack of 8 KiB or less grows to 16 KiB there, where a message served
// through mcp-go fits (TestModernCallFitsA16KiBStack in bench holds that),
// when the frames above take more than 1.2 KiB of it on linux/amd64 (the
// runtime keeps a guard of 928 bytes below): net/http's and servePost's
// take about 1.7 KiB. It would grow to 32 KiB only under more than 9.1 KiB
// of frames (8.3 under the race detector, whose guard is larger, 5.1 on
// Windows, whose guard is 5 KiB): net/http's and lifeline's take under
// 2 KiB, and middleware adds its own.
const messageStackHeadroom = 6 << 10

// reserveStack, called with false, makes sure the goroutine has
// messageStackHeadroom bytes of stack below its caller, and returns 0.
// (The argument is there only so that the frame's one use is on a path
// never taken.)
//
// Go grows a goroutine's stack by copying it and adjusting every frame on
// it, and a garbage collection that finds a stack mostly unused shrinks it
// again, as it finds a net/http connection's goroutine waiting for its
// next request. Most POSTs then grow their stack once, where mcp-go first
// needs it: at HandleMessage's frame, under net/http's frames and
// lifeline's, each of which the copy must adjust. Grown here, with only
// net/http's frames and servePost's above, the same growth costs about
// 2% of a whole session-era call's instructions less (BENCHMARKS.md,
// "Counted, not timed"). When the stack is already large enough, it costs a
// comparison and a call; if the runtime ever stops shrinking stacks, no
// more.
//
//go:noinline
func reserveStack(never bool) byte {
	if never {
		// Never run, and so never zeroed: the frame is there for the
		// function's prologue, which checks the stack for it.
		var frame [messageStackHeadroom]byte
		return lastByte(frame[:])
	}
	return 0
}

// lastByte keeps reserveStack's frame from being optimised away.
//
//go:noinline
func lastByte(b []byte) byte { return b[len(b)-1] }
