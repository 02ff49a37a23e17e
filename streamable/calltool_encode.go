package streamable

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// appendCallToolResult appends r encoded exactly as its MarshalJSON
// (mcp-go's) encodes it, without the map that builds, and text content and
// _meta without reflection: the members in their sorted order, _meta's
// members sorted, a text content item as json.Marshal encodes the struct.
// Values it does not know (other content, structured content, input
// requests, _meta values that are not primitives) go through json.Marshal,
// as MarshalJSON sends them there. It reports false, leaving b as it was,
// when mcp-go's types are not the ones it was written for (knownCallTool)
// or a value does not encode: the caller then uses json.Marshal.
func appendCallToolResult(b []byte, r *mcp.CallToolResult) ([]byte, bool) {
	if !knownCallTool {
		return b, false
	}
	out := append(b, '{')
	var err error
	if r.Meta != nil {
		out = append(out, `"_meta":`...)
		if out, err = appendMeta(out, r.Meta); err != nil {
			return b, false
		}
		out = append(out, ',')
	}
	out = append(out, `"content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			out = append(out, ',')
		}
		if t, ok := c.(mcp.TextContent); ok && t.Annotations == nil && t.Meta == nil {
			out = append(out, `{"type":`...)
			out = appendJSONString(out, t.Type)
			out = append(out, `,"text":`...)
			out = appendJSONString(out, t.Text)
			out = append(out, '}')
			continue
		}
		if out, err = appendMarshalled(out, c); err != nil {
			return b, false
		}
	}
	out = append(out, ']')
	if len(r.InputRequests) > 0 {
		out = append(out, `,"inputRequests":`...)
		if out, err = appendMarshalled(out, r.InputRequests); err != nil {
			return b, false
		}
	}
	if r.IsError {
		out = append(out, `,"isError":true`...)
	}
	if r.RequestState != "" {
		out = append(out, `,"requestState":`...)
		out = appendJSONString(out, r.RequestState)
	}
	if r.ResultType != "" {
		out = append(out, `,"resultType":`...)
		out = appendJSONString(out, string(r.ResultType))
	}
	var structured any
	if len(r.RawStructuredContent) > 0 {
		structured = r.RawStructuredContent
	} else if r.StructuredContent != nil {
		structured = r.StructuredContent
	}
	if structured != nil {
		out = append(out, `,"structuredContent":`...)
		if out, err = appendMarshalled(out, structured); err != nil {
			return b, false
		}
	}
	return append(out, '}'), true
}

// appendMeta appends m as its MarshalJSON encodes it: the progress token
// and the additional fields (which win a clash) as one object, its keys
// sorted. The map is read once, as MarshalJSON's copy reads it.
func appendMeta(b []byte, m *mcp.Meta) ([]byte, error) {
	type member struct {
		key   string
		value any
	}
	var buf [8]member
	members := buf[:0]
	_, clash := m.AdditionalFields["progressToken"]
	if m.ProgressToken != nil && !clash {
		members = append(members, member{"progressToken", m.ProgressToken})
	}
	for k, v := range m.AdditionalFields {
		members = append(members, member{k, v})
	}
	if len(members) > 1 { // mcp-go's 2026-07-28 results carry one: its server's identity
		slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	}
	b = append(b, '{')
	for i, e := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, e.key)
		b = append(b, ':')
		var err error
		if b, err = appendMetaValue(b, e.value); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendMetaValue appends v, a _meta member, as json.Marshal encodes it:
// a server's identity (what mcp-go puts in every 2026-07-28 result) and
// primitives directly, anything else through json.Marshal.
func appendMetaValue(b []byte, v any) ([]byte, error) {
	impl, ok := v.(mcp.Implementation)
	if !ok || impl.Title != "" || impl.Description != "" || impl.WebsiteURL != "" || impl.Icons != nil {
		return appendJSONValue(b, v)
	}
	b = append(b, `{"name":`...)
	b = appendJSONString(b, impl.Name)
	b = append(b, `,"version":`...)
	b = appendJSONString(b, impl.Version)
	return append(b, '}'), nil
}

// knownCallTool reports whether mcp-go's types are the ones
// appendResponseJSON and appendCallToolResult were written for (mcp-go
// v1.2.1's): the same fields, field types and JSON tags, and no
// json.Marshaler or encoding.TextMarshaler on the types written by hand
// besides the MarshalJSON methods they reproduce. With any other (a later
// mcp-go that added a field or a method), the encoding is json.Marshal's.
// What the guard cannot see is a MarshalJSON whose body changed (a
// RequestId's, a Meta's, a CallToolResult's): TestAppendResponseJSONIsJSONMarshal
// compares the two for the mcp-go this module builds with.
var knownCallTool = layoutIs[mcp.JSONRPCResponse](`JSONRPC string json:"jsonrpc"; ID mcp.RequestId json:"id"; Result interface {} json:"result"; `) &&
	layoutIs[mcp.CallToolResult]("Result mcp.Result ; MultiRoundTripResult mcp.MultiRoundTripResult ; "+
		`Content []mcp.Content json:"content"; StructuredContent interface {} json:"structuredContent,omitempty"; `+
		`RawStructuredContent json.RawMessage json:"-"; IsError bool json:"isError,omitempty"; `) &&
	layoutIs[mcp.Result](`Meta *mcp.Meta json:"_meta,omitempty"; ResultType mcp.ResultType json:"resultType,omitempty"; `) &&
	layoutIs[mcp.MultiRoundTripResult](`InputRequests mcp.InputRequests json:"inputRequests,omitempty"; RequestState string json:"requestState,omitempty"; `) &&
	layoutIs[mcp.Meta]("ProgressToken mcp.ProgressToken ; AdditionalFields map[string]interface {} ; ") &&
	layoutIs[mcp.TextContent](`Annotated mcp.Annotated ; Meta *mcp.Meta json:"_meta,omitempty"; Type string json:"type"; Text string json:"text"; `) &&
	layoutIs[mcp.Annotated](`Annotations *mcp.Annotations json:"annotations,omitempty"; `) &&
	layoutIs[mcp.Implementation](`Name string json:"name"; Version string json:"version"; Title string json:"title,omitempty"; `+
		`Description string json:"description,omitempty"; WebsiteURL string json:"websiteUrl,omitempty"; Icons []mcp.Icon json:"icons,omitempty"; `) &&
	!marshalsItself[mcp.JSONRPCResponse]() && !marshalsItself[mcp.Result]() && !marshalsItself[mcp.MultiRoundTripResult]() &&
	!marshalsItself[mcp.TextContent]() && !marshalsItself[mcp.Annotated]() && !marshalsItself[mcp.Implementation]() &&
	!marshalsItself[mcp.ResultType]()

// marshalsItself reports whether T or *T encodes itself in JSON (a
// json.Marshaler or an encoding.TextMarshaler).
func marshalsItself[T any]() bool {
	for _, t := range []reflect.Type{reflect.TypeFor[T](), reflect.TypeFor[*T]()} {
		if t.Implements(reflect.TypeFor[json.Marshaler]()) || t.Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
			return true
		}
	}
	return false
}

// layoutIs reports whether struct type T's fields, in order, are the ones
// want lists: each as its name, type and tag, then "; ".
func layoutIs[T any](want string) bool {
	t := reflect.TypeFor[T]()
	var got strings.Builder
	for i := range t.NumField() {
		f := t.Field(i)
		fmt.Fprintf(&got, "%s %s %s; ", f.Name, f.Type, f.Tag)
	}
	return got.String() == want
}
