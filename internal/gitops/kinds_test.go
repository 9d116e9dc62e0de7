package gitops

import (
	"context"
	"errors"
	"net"
	"runtime"
	"testing"

	"github.com/astra-gitops/astra/internal/errkind"
)

// TestErrorKinds: each failure says what kind it is, with its sentinel
// kept. A remote that cannot be reached, a lost race and a busy checkout
// pass (errkind.ErrInfra: a later run gets through); a protected branch
// and a directory that is no repository are the setup's (ErrUsage).
// Nothing git does is a refusal of a person. Real repositories, a real
// bare remote and a real closed port each time.
func TestErrorKinds(t *testing.T) {
	closedPort := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "http://" + l.Addr().String() + "/o/r.git"
	}()
	for _, c := range []struct {
		name     string
		fail     func(t *testing.T) error
		kind     error
		sentinel error
	}{
		{"closed port", func(t *testing.T) error {
			dir := cloneCLI(t, fileURL(newRemote(t)), true)
			gitCmd(t, dir, "remote", "set-url", "origin", closedPort)
			return commitAndPush(t, open(t, dir), dir)
		}, errkind.ErrInfra, nil},
		{"remote moved", func(t *testing.T) error {
			remote := newRemote(t)
			a, b := cloneCLI(t, fileURL(remote), false), cloneCLI(t, fileURL(remote), false)
			if err := commitAndPush(t, open(t, a), a); err != nil {
				t.Fatal(err)
			}
			writeFile(t, b, ledger, "another runner's event\n")
			return commitAndPush(t, open(t, b), b)
		}, errkind.ErrInfra, ErrRejected},
		{"protected branch", func(t *testing.T) error {
			remote := newRemote(t)
			dir := cloneCLI(t, fileURL(remote), true)
			protect(t, remote, "pre-receive")
			return commitAndPush(t, open(t, dir), dir)
		}, errkind.ErrUsage, ErrProtected},
		{"not a repository", func(t *testing.T) error {
			_, err := Open(Options{Dir: t.TempDir()})
			return err
		}, errkind.ErrUsage, ErrNotRepository},
		{"another run holds the checkout", func(t *testing.T) error {
			if runtime.GOOS == "windows" {
				t.Skip("no advisory locks")
			}
			dir := cloneCLI(t, fileURL(newRemote(t)), false)
			unlock, err := open(t, dir).LockRun()
			if err != nil {
				t.Fatal(err)
			}
			defer unlock()
			_, err = open(t, dir).LockRun()
			return err
		}, errkind.ErrInfra, ErrLocked},
		{"interrupted", func(t *testing.T) error {
			dir := cloneCLI(t, fileURL(newRemote(t)), true)
			r := open(t, dir)
			writeFile(t, dir, ledger, "event\n")
			if _, _, err := r.Commit("run", ledger); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return r.Push(ctx)
		}, nil, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.fail(t)
			if err == nil {
				t.Fatal("no error")
			}
			if got := errkind.Of(err); got != c.kind {
				t.Errorf("%v: kind %v, want %v", err, got, c.kind)
			}
			if c.sentinel != nil && !errors.Is(err, c.sentinel) {
				t.Errorf("%v: lost %v", err, c.sentinel)
			}
		})
	}
}
