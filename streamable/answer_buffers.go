package streamable

import (
	"bytes"
	"sync"
)

// answerBuffers pools the buffers JSON answers are encoded into. Writing
// a small answer (at most smallResponse, the size of net/http's write
// buffer) copies it into that buffer before the write returns, so its
// buffer can take the next answer: a call answered with JSON then costs no
// allocation of its own for the encoding beyond what encoding/json does. A
// larger answer's buffer is not given back (respondJSON), and one grown
// past maxPooledAnswer is left to the collector.
type answerBuffers struct{ pool sync.Pool }

// maxPooledAnswer is the largest buffer answerBuffers keeps.
const maxPooledAnswer = 64 << 10

// get returns an empty buffer.
func (a *answerBuffers) get() *bytes.Buffer {
	if b, ok := a.pool.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

// put gives b back once nothing reads it any more.
func (a *answerBuffers) put(b *bytes.Buffer) {
	if b.Cap() > maxPooledAnswer {
		return
	}
	b.Reset()
	a.pool.Put(b)
}
