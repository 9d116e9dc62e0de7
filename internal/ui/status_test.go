package ui

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a terminal's screen as bytes, safe for Busy's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A status line stays under what is written: erased before a line goes
// out, drawn again after it, never inside a line that is not finished.
func TestStatusLine(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, false)
	w.SetLive(true)
	steps := []func(){
		func() { w.SetStatus("running a") },
		func() { fmt.Fprintln(w, "ran a") },
		func() { fmt.Fprint(w, "half ") },
		func() { w.SetStatus("running b\n\x1b]0;title\x07 and c") },
		func() { fmt.Fprintln(w, "a line") },
		func() { w.SetStatus("") },
		func() { fmt.Fprintln(w, "done") },
	}
	for _, step := range steps {
		step()
	}
	want := "running a" + eraseLine + "ran a\nrunning a" + eraseLine + "half a line\nrunning b and c" + eraseLine + "done\n"
	if got := out.String(); got != want {
		t.Fatalf("screen\n got  %q\n want %q", got, want)
	}

	out.Reset()
	w.SetStatus(strings.Repeat("x", 200))
	if got := out.String(); len([]rune(got)) != statusWidth || !strings.HasSuffix(got, "…") {
		t.Errorf("a long status is cut to %d characters: %q", statusWidth, got)
	}
}

// A Writer that is not a terminal never draws a status line.
func TestStatusNotLive(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, false)
	w.SetStatus("running a")
	stop := w.Busy(func() string { return "reading" })
	fmt.Fprintln(w, "ran a")
	stop()
	if got := out.String(); got != "ran a\n" {
		t.Fatalf("got %q", got)
	}
}

// Busy says what is going on once a command has worked for a second, and
// takes the line away when it stops.
func TestBusy(t *testing.T) {
	var out syncBuffer
	w := NewWriter(&out, false)
	w.SetLive(true)
	stop := w.Busy(func() string { return "verifying 3 of 24 files" })
	for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), "verifying 3 of 24 files ("); {
		if time.Now().After(deadline) {
			t.Fatalf("nothing shown after a minute: %q", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	if got := out.String(); !strings.HasSuffix(got, eraseLine) {
		t.Fatalf("the line stays after stop: %q", got)
	}
}
