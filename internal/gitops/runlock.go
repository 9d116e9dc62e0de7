package gitops

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// runLockName is the file in the git dir whose lock marks a checkout an
// astra run is using.
const runLockName = "astra.lock"

// LockRun marks the checkout as used by this run until unlock is called
// or the process exits, so that a second astra started in the same
// checkout (an overlapping cron job on a persistent runner) stops at once
// with ErrLocked, naming the process that holds it, instead of appending
// to the same ledger files. The lock is the kernel's (flock), so it ends
// with the process however the process ends: a killed run leaves no lock
// to clean up; the file itself stays, holding the last holder's pid for
// the message. While this Repo holds it, calling it again is a no-op.
// Where the system has no such locks, it does nothing.
func (r *Repo) LockRun() (unlock func(), err error) {
	if r.runLock != nil {
		return func() {}, nil
	}
	p := filepath.Join(r.gitDir, runLockName)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", r.relGit(p), err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", r.relGit(p), err)
	}
	if held {
		who := "another process"
		if b, err := os.ReadFile(p); err == nil {
			if fields := strings.Fields(string(b)); len(fields) == 2 {
				who = "pid " + fields[0] + ", running since " + fields[1]
			}
		}
		f.Close()
		return nil, fmt.Errorf("%w: an astra run holds %s (%s); wait for it to finish", ErrLocked, r.relGit(p), who)
	}
	// Say who holds it, for the message above (best effort).
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+" "+time.Now().UTC().Format(time.RFC3339)+"\n"), 0)
	}
	r.runLock = f
	return func() {
		if r.runLock == f {
			r.runLock = nil
			f.Close() // closing the file drops the lock
		}
	}, nil
}
