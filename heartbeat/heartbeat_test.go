package heartbeat

import (
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSchedulerFiresEachInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(nil)
		defer s.Close()
		start := time.Now()
		e := s.Add(20 * time.Second)
		for i := 1; i <= 3; i++ {
			<-e.Due()
			if got, want := time.Since(start), time.Duration(i)*20*time.Second; got != want {
				t.Fatalf("tick %d after %v, want %v", i, got, want)
			}
		}
	})
}

func TestSchedulerOneGoroutineForManyEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(nil)
		defer s.Close()
		entries := make([]*Entry, 1000)
		for i := range entries {
			entries[i] = s.Add(time.Duration(i%7+1) * time.Second)
		}
		synctest.Wait()
		time.Sleep(7 * time.Second)
		synctest.Wait()
		for i, e := range entries {
			select {
			case <-e.Due():
			default:
				t.Fatalf("entry %d did not fire", i)
			}
		}
		if s.Len() != 1000 {
			t.Fatalf("Len = %d", s.Len())
		}
	})
}

func TestSchedulerCoalescesUnreadTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(nil)
		defer s.Close()
		e := s.Add(time.Second)
		time.Sleep(10*time.Second + time.Millisecond)
		synctest.Wait()
		<-e.Due()
		select {
		case <-e.Due():
			t.Fatal("ticks were not coalesced")
		default:
		}
	})
}

func TestEntryTriggerFiresNowWithoutMovingTheSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(nil)
		defer s.Close()
		e := s.Add(time.Minute)
		start := time.Now()
		e.Trigger()
		e.Trigger() // coalesces with the first
		<-e.Due()
		if d := time.Since(start); d != 0 {
			t.Fatalf("a triggered entry fired after %v, want at once", d)
		}
		select {
		case <-e.Due():
			t.Fatal("two triggers were not coalesced")
		default:
		}
		<-e.Due()
		if d := time.Since(start); d != time.Minute {
			t.Fatalf("the next tick came after %v, want the interval (1m): Trigger moved the schedule", d)
		}
		e.Remove()
		e.Trigger() // harmless after Remove
	})
}

func TestSchedulerRemovedEntryNeverFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(nil)
		defer s.Close()
		e := s.Add(time.Second)
		keep := s.Add(time.Second)
		e.Remove()
		e.Remove()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		select {
		case <-e.Due():
			t.Fatal("removed entry fired")
		default:
		}
		<-keep.Due()
		if s.Len() != 1 {
			t.Fatalf("Len = %d, want 1", s.Len())
		}
	})
}

func TestSchedulerAddAfterCloseNeverFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(nil)
		s.Close()
		s.Close()
		e := s.Add(time.Second)
		time.Sleep(3 * time.Second)
		select {
		case <-e.Due():
			t.Fatal("entry added after Close fired")
		default:
		}
		e.Remove()
	})
}

func TestTrackerNeverAnsweredIsNeverDead(t *testing.T) {
	tr := NewTracker(2)
	for range 100 {
		tr.Sent()
	}
	if tr.Dead() {
		t.Fatal("a peer that never answered was judged dead")
	}
}

func TestTrackerDeadAfterLimitConsecutiveMisses(t *testing.T) {
	tr := NewTracker(2)
	tr.Sent()
	tr.Pong()
	tr.Sent()
	if tr.Dead() {
		t.Fatal("dead after one miss")
	}
	tr.Sent()
	if !tr.Dead() {
		t.Fatal("alive after two consecutive misses")
	}
	tr.Pong()
	if tr.Dead() || tr.Unanswered() != 0 {
		t.Fatal("a pong did not revive the stream")
	}
}

func TestTrackerPongSignal(t *testing.T) {
	tr := NewTracker(0)
	sig := tr.PongSignal()
	select {
	case <-sig:
		t.Fatal("signal closed before a pong")
	default:
	}
	tr.Pong()
	<-sig
	if !tr.Answered() {
		t.Fatal("Answered false after a pong")
	}
}

func TestTrackerForgiveForgetsUnansweredPings(t *testing.T) {
	tr := NewTracker(2)
	tr.Sent()
	tr.Pong()
	tr.Sent()
	tr.Sent()
	if !tr.Dead() {
		t.Fatal("not dead after the limit of unanswered pings")
	}
	tr.Forgive()
	if tr.Dead() || tr.Unanswered() != 0 {
		t.Fatalf("after Forgive: dead=%v unanswered=%d", tr.Dead(), tr.Unanswered())
	}
	if !tr.Answered() {
		t.Fatal("Forgive forgot that the peer answered before")
	}
}

func TestAddSignalSharesTheCallersChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(nil)
		defer s.Close()
		wake := make(chan struct{}, 1)
		e := s.AddSignal(time.Second, wake)
		start := time.Now()
		// A signal of the caller's own: the entry has not fired.
		wake <- struct{}{}
		<-wake
		if e.Fired() {
			t.Fatal("Fired = true for the caller's own signal")
		}
		<-wake
		if d := time.Since(start); d != time.Second {
			t.Fatalf("the entry signalled after %v, want 1s", d)
		}
		if !e.Fired() {
			t.Fatal("Fired = false after the entry's interval elapsed")
		}
		if e.Fired() {
			t.Fatal("Fired did not reset")
		}
		e.Trigger()
		<-wake
		if !e.Fired() {
			t.Fatal("Fired = false after Trigger")
		}
		e.Remove()
	})
}

func TestAddSignalFiredSurvivesACoalescedSignal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(nil)
		defer s.Close()
		wake := make(chan struct{}, 1)
		e := s.AddSignal(time.Second, wake)
		wake <- struct{}{} // the caller's signal fills the slot first
		time.Sleep(time.Second)
		synctest.Wait()
		<-wake // one signal for both
		if !e.Fired() {
			t.Fatal("a tick that coalesced with the caller's signal was lost")
		}
		e.Remove()
	})
}
