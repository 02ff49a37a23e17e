package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Bad flags exit 2 with a message naming the flag, before anything runs.
func TestBadFlagsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-cuts", "yes"}, "-cuts must be on or off"},
		{[]string{"-kills", "1"}, "-kills must be on or off"},
		{[]string{"-drains", "true"}, "-drains must be on or off"},
		{[]string{"-store", "disk"}, "-store must be redis or memory"},
		{[]string{"-clients", "0"}, "-clients and -replicas must be at least 1"},
		{[]string{"-duration", "0s"}, "-duration positive"},
		{[]string{"-store", "memory", "-replicas", "3"}, "the in-memory store serves one replica"},
		{[]string{"-nope"}, "flag provided but not defined"},
	} {
		var out, errs bytes.Buffer
		if code := run(context.Background(), tc.args, &out, &errs); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(errs.String(), tc.want) || out.Len() != 0 {
			t.Errorf("%v: stderr %q, stdout %q; want %q on stderr only", tc.args, errs.String(), out.String(), tc.want)
		}
	}
}
