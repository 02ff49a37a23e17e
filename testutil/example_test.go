package testutil_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifeline-mcp/lifeline/testutil"
)

func ExampleSSEReader() {
	stream := ": connected\n\n" +
		"event: message\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" +
		"data: first line\r\n" +
		"data: second line\r\n\r\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"
	rd := testutil.NewSSEReader(strings.NewReader(stream))
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			fmt.Println("end of stream")
			return
		}
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if ev.IsComment() {
			fmt.Printf("comment %q\n", ev.Comment)
			continue
		}
		if m, err := ev.Message(); err == nil {
			fmt.Printf("%s: request %v, notification %v\n", ev.Name, m.IsRequest(), m.IsNotification())
			continue
		}
		fmt.Printf("%s: %q\n", ev.Name, ev.Data)
	}
	// Output:
	// comment "connected"
	// message: request false, notification true
	// message: "first line\nsecond line"
	// message: request false, notification false
	// end of stream
}

func ExampleBarrier() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	const parties = 3
	b := testutil.NewBarrier(parties)
	var arrived atomic.Int64
	seen := make(chan int64, parties)
	var wg sync.WaitGroup
	for range parties {
		wg.Go(func() {
			arrived.Add(1)
			if err := b.Wait(ctx); err != nil {
				fmt.Println(err)
				return
			}
			// Nobody gets here before the last party has arrived.
			seen <- arrived.Load()
		})
	}
	wg.Wait()
	close(seen)
	for n := range seen {
		fmt.Printf("released with %d of %d arrived\n", n, parties)
	}

	// A party that waits for someone who never comes gives up with ctx.
	short, cancelShort := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancelShort()
	fmt.Println(testutil.NewBarrier(2).Wait(short))
	// Output:
	// released with 3 of 3 arrived
	// released with 3 of 3 arrived
	// released with 3 of 3 arrived
	// barrier: 1 of 2 arrived: context deadline exceeded
}

func ExampleFaultProxy() {
	// A backend streaming server-sent events: two, then nothing until the
	// client goes.
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: 1\ndata: first\n\nid: 2\ndata: second\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer backend.Close()

	// The proxy in front of it (of several, round-robin, in a cluster test).
	p, err := testutil.NewFaultProxy(testutil.FaultProxyConfig{Backends: []string{backend.URL}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	isGET := func(ci testutil.ConnInfo) bool { return ci.Method == http.MethodGet }

	// Cut the GET streams now: the client reads what it was sent, then
	// its connection ends in the middle of the response.
	resp, err := hc.Get(p.URL() + "/events")
	if err != nil {
		fmt.Println(err)
		return
	}
	rd := testutil.NewSSEReader(resp.Body)
	for range 2 {
		ev, _ := rd.Next()
		fmt.Println("event:", ev.Data)
	}
	fmt.Println("cut", p.Cut(isGET), "stream")
	_, err = rd.Next()
	fmt.Println("then:", err)
	resp.Body.Close()

	// Cut the next GET in the middle of its first event's data line.
	p.Arm(testutil.Fault{Match: isGET, After: 1, MidEvent: true})
	resp, err = hc.Get(p.URL() + "/events")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("got %q, then: %v\n", body, err)

	st := p.Stats()
	fmt.Printf("%d connections, %d requests, %d cuts\n", st.Conns, st.Requests, st.Cuts)
	// Output:
	// event: first
	// event: second
	// cut 1 stream
	// then: unexpected EOF
	// got "id: 1\ndata: fi", then: unexpected EOF
	// 2 connections, 2 requests, 2 cuts
}
