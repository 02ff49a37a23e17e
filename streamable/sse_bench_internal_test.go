package streamable

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// discardWriter is a ResponseWriter that drops what it is given, with the
// methods of net/http's own that the stream uses.
type discardWriter struct{ header http.Header }

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) Flush()                      {}

func (w *discardWriter) SetWriteDeadline(time.Time) error { return nil }

// WriteString, as net/http's own ResponseWriter has.
func (w *discardWriter) WriteString(s string) (int, error) { return len(s), nil }

// BenchmarkEvent writes one SSE event of a small and of a 4 MiB message:
// what the write path itself allocates and costs.
func BenchmarkEvent(b *testing.B) {
	for _, size := range []int{200, 4 << 20} {
		msg := []byte(strings.Repeat("x", size))
		b.Run(map[int]string{200: "200B", 4 << 20: "4MiB"}[size], func(b *testing.B) {
			s := newSSEStream(context.Background(), &discardWriter{header: http.Header{}}, time.Second)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if err := s.event(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
