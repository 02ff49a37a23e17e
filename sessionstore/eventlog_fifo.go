package sessionstore

// fifo is a queue on a slice: push at the back, pop at the front. It
// reuses the front's room once it is half the slice, so its array holds at
// most about twice what it has held at once.
type fifo[T any] struct {
	buf  []T
	head int
}

func (q *fifo[T]) len() int { return len(q.buf) - q.head }

// front returns the oldest item; the queue must not be empty.
func (q *fifo[T]) front() T { return q.buf[q.head] }

// items returns the queued items, oldest first, in the queue's own array.
func (q *fifo[T]) items() []T { return q.buf[q.head:] }

func (q *fifo[T]) push(v T) {
	if len(q.buf) == cap(q.buf) && q.head > 0 && q.head >= len(q.buf)/2 {
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, v)
}

// pop removes and returns the oldest item; the queue must not be empty.
func (q *fifo[T]) pop() T {
	v := q.buf[q.head]
	var zero T
	q.buf[q.head] = zero
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	return v
}

// keep drops the items for which live is false, keeping the order.
func (q *fifo[T]) keep(live func(T) bool) {
	kept := q.buf[:0]
	for _, v := range q.buf[q.head:] {
		if live(v) {
			kept = append(kept, v)
		}
	}
	clear(q.buf[len(kept):])
	q.buf, q.head = kept, 0
}
