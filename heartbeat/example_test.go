package heartbeat_test

import (
	"fmt"
	"time"

	"github.com/lifeline-mcp/lifeline/heartbeat"
)

// One scheduler serves every stream: each stream waits on its entry's Due
// channel and pings its peer then.
func ExampleScheduler() {
	s := heartbeat.NewScheduler(nil)
	defer s.Close()
	e := s.Add(10 * time.Millisecond)
	defer e.Remove()
	for i := 1; i <= 3; i++ {
		<-e.Due()
		fmt.Println("ping", i)
	}
	// Output:
	// ping 1
	// ping 2
	// ping 3
}

// A Tracker judges a peer gone only after it has answered once and then
// left the limit of consecutive pings unanswered.
func ExampleTracker() {
	t := heartbeat.NewTracker(2)
	t.Sent()
	t.Sent()
	fmt.Println("never answered, dead:", t.Dead())
	t.Pong()
	t.Sent()
	fmt.Println("one miss, dead:", t.Dead())
	t.Sent()
	fmt.Println("two misses, dead:", t.Dead())
	// Output:
	// never answered, dead: false
	// one miss, dead: false
	// two misses, dead: true
}

// One goroutine can wait on one channel for its heartbeat and for signals
// of its own: Fired tells the heartbeat's apart.
func ExampleScheduler_AddSignal() {
	s := heartbeat.NewScheduler(nil)
	defer s.Close()
	wake := make(chan struct{}, 1)
	e := s.AddSignal(10*time.Millisecond, wake)
	defer e.Remove()
	wake <- struct{}{} // something else to do
	for pings := 0; pings < 2; {
		<-wake
		if e.Fired() {
			pings++
			fmt.Println("ping", pings)
		}
	}
	// Output:
	// ping 1
	// ping 2
}
