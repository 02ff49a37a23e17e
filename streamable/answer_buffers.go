package streamable

import (
	"bytes"
	"sync"
)

// answerBuffers pools the buffers JSON answers are encoded into. Writing
// an answer copies it into net/http's buffer (or writes it out) before
// the write returns, so the buffer can take the next answer: a call
// answered with JSON then costs no allocation of its own for the encoding
// beyond what encoding/json does. A buffer grown past maxPooledAnswer is
// left to the collector, so that one large answer does not stay held.
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
