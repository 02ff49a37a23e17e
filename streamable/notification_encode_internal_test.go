package streamable

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// notificationCases are notifications whose encoding must be json.Marshal's
// byte for byte: no params, empty params, progress, logging, every
// primitive and a few nested values, strings that need escapes, floats at
// the edges of json's exponent form, keys out of order, "_meta" in both
// places.
func notificationCases() []mcp.JSONRPCNotification {
	n := func(method string, meta, fields map[string]any) mcp.JSONRPCNotification {
		return mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
			Method: method, Params: mcp.NotificationParams{Meta: meta, AdditionalFields: fields}}}
	}
	return []mcp.JSONRPCNotification{
		n("notifications/initialized", nil, nil),
		n("notifications/tools/list_changed", nil, map[string]any{}),
		n("notifications/tools/list_changed", map[string]any{}, nil),
		n("notifications/progress", nil, map[string]any{"progressToken": "tok-1", "progress": 1.0, "total": 3.0, "message": "step 1"}),
		n("notifications/progress", nil, map[string]any{"progressToken": int64(7), "progress": 0.5, "total": nil}),
		n("notifications/progress", nil, map[string]any{"progressToken": float64(12), "progress": 1e21, "total": 1e-7, "x": 123456789.125, "y": -0.000001, "z": 1e-6, "w": -2.5e-10, "v": 0.0}),
		n("notifications/message", map[string]any{"trace": "a"}, map[string]any{"level": "info", "logger": "t", "data": map[string]any{"k": []any{1, "two", true}}}),
		n("notifications/message", nil, map[string]any{"data": "<b>&\"quoted\"\\ \n\t\u2028 é \x01", "level": "warning"}),
		n("odd \"method\" <x>", map[string]any{"m": 1}, map[string]any{"_meta": "dropped", "b": false, "a": true, "c": int32(-3), "d": 42, "e": json.RawMessage(`{ "raw" : 1 }`)}),
		n("notifications/resources/updated", nil, map[string]any{"uri": "file:///tmp/a b.txt", "ünicode-key": "v", "<k>": 1}),
	}
}

func TestEncodeNotificationJSONIsJSONMarshal(t *testing.T) {
	for i, n := range notificationCases() {
		want, werr := json.Marshal(n)
		got, gerr := encodeNotificationJSON(n)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Errorf("case %d:\n got %s (%v)\nwant %s (%v)", i, got, gerr, want, werr)
		}
	}
	// A value json.Marshal refuses is refused.
	bad := notificationCases()[3]
	bad.Params.AdditionalFields = map[string]any{"progress": math.NaN()}
	if _, err := encodeNotificationJSON(bad); err == nil {
		t.Error("a NaN progress encoded")
	}
}

// FuzzEncodeNotificationJSON checks the encoding against json.Marshal for
// params of one string, one float and one integer member, under fuzzed
// keys and values.
func FuzzEncodeNotificationJSON(f *testing.F) {
	f.Add("notifications/progress", "progressToken", "tok", "progress", 1.5, "total", int64(3))
	f.Add("m\u2028", "<", "\x00\xff", "_meta", 1e-7, "k", int64(-1))
	f.Fuzz(func(t *testing.T, method, k1, s, k2 string, x float64, k3 string, i int64) {
		n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method,
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{k1: s, k2: x, k3: i}}}}
		want, werr := json.Marshal(n)
		got, gerr := encodeNotificationJSON(n)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("\n got %s (%v)\nwant %s (%v)", got, gerr, want, werr)
		}
	})
}

func BenchmarkEncodeNotification(b *testing.B) {
	n := notificationCases()[3]
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(n)
		}
	})
	b.Run("encodeNotificationJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = encodeNotificationJSON(n)
		}
	})
}
