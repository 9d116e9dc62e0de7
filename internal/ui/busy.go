package ui

import (
	"fmt"
	"time"
)

// busyAfter is how long a command works before it says what it is doing.
const busyAfter = time.Second

// Busy shows on w's status line, after a second of work and then every
// second, what says what a command is doing and for how long it has been
// at it; the stop it returns removes the line. On a Writer that is not
// live (a log, a pipe) it shows nothing. what is called from another
// goroutine.
func (w *Writer) Busy(what func() string) (stop func()) {
	if !w.Live() {
		return func() {}
	}
	start := time.Now()
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTimer(busyAfter)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				_ = w.SetStatus(fmt.Sprintf("%s (%ds)", what(), int(now.Sub(start).Seconds())))
				t.Reset(time.Second)
			}
		}
	}()
	return func() {
		close(done)
		<-exited
		_ = w.SetStatus("")
	}
}
