package gitops

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
)

// faultyClone is a clone whose origin is the smart-HTTP server (git
// http-backend) in front of a bare repository, opened with short bounds.
func faultyClone(t *testing.T, timeout, budget time.Duration) (*Repo, string, string, *gitHTTPServer) {
	t.Helper()
	remote := newRemote(t)
	srv := newGitHTTPServer(t, filepath.Dir(remote), "")
	dir := cloneCLI(t, fileURL(remote), false)
	gitCmd(t, dir, "remote", "set-url", "origin", srv.URL+"/remote.git")
	r := open(t, dir, func(o *Options) { o.Timeout, o.Budget = timeout, budget })
	return r, dir, remote, srv
}

// firstN fails the first n requests with f, then lets the rest through.
func firstN(n int64, f fault) func(*http.Request) fault {
	var seen atomic.Int64
	return func(*http.Request) fault {
		if seen.Add(1) <= n {
			return f
		}
		return pass
	}
}

// 500s and connection resets are retried with backoff: the fetch and
// the push get through, and the report says what was retried.
func TestTransientFailuresRetried(t *testing.T) {
	for _, f := range []fault{fail500, reset} {
		r, dir, remote, srv := faultyClone(t, 10*time.Second, time.Minute)
		srv.setFault(firstN(2, f))
		if err := r.Sync(context.Background()); err != nil {
			t.Fatalf("fault %d: sync: %v", f, err)
		}
		srv.setFault(firstN(2, f))
		writeFile(t, dir, ledger, "line\n")
		if _, _, err := r.Commit("astra: run", ledger); err != nil {
			t.Fatal(err)
		}
		if err := r.Push(context.Background()); err != nil {
			t.Fatalf("fault %d: push: %v", f, err)
		}
		if got, want := gitCmd(t, remote, "rev-parse", "main"), gitCmd(t, dir, "rev-parse", "HEAD"); got != want {
			t.Fatalf("remote at %s, want %s", got, want)
		}
		if w := strings.Join(r.Warnings(), "\n"); !strings.Contains(w, "attempt 1 failed") {
			t.Fatalf("warnings %q", w)
		}
	}
}

// A remote that never answers costs each call its timeout and the run at
// most its budget: the error is the infrastructure's and says so.
func TestHungRemoteBounded(t *testing.T) {
	r, dir, _, srv := faultyClone(t, 100*time.Millisecond, 700*time.Millisecond)
	srv.setFault(func(*http.Request) fault { return hang })
	writeFile(t, dir, ledger, "line\n")
	if _, _, err := r.Commit("astra: run", ledger); err != nil {
		t.Fatal(err)
	}
	err := r.Push(context.Background())
	if !errors.Is(err, errkind.ErrInfra) || !strings.Contains(err.Error(), "git.budget") {
		t.Fatalf("push to a hung remote: %v", err)
	}
	// The budget is the run's: later calls do not wait again.
	if err := r.Sync(context.Background()); !errors.Is(err, errkind.ErrInfra) || !strings.Contains(err.Error(), "git.budget") {
		t.Fatalf("sync after the budget: %v", err)
	}
}

// A push that landed but whose answer was lost is found on the remote by
// the next attempt and taken as done: not an error, not a lost claim.
func TestLostPushAnswer(t *testing.T) {
	r, dir, remote, srv := faultyClone(t, 10*time.Second, time.Minute)
	var lost atomic.Bool
	srv.setFault(func(req *http.Request) fault {
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/git-receive-pack") && lost.CompareAndSwap(false, true) {
			return lostReply
		}
		return pass
	})
	writeFile(t, dir, ledger, "line\n")
	if _, _, err := r.Commit("astra: run", ledger); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(context.Background()); err != nil {
		t.Fatalf("push whose answer was lost: %v", err)
	}
	if !lost.Load() {
		t.Fatal("no answer was lost")
	}
	if got, want := gitCmd(t, remote, "rev-parse", "main"), gitCmd(t, dir, "rev-parse", "HEAD"); got != want {
		t.Fatalf("remote at %s, want %s", got, want)
	}
	if n, known, err := r.Unpushed(); err != nil || !known || n != 0 {
		t.Fatalf("unpushed %d %v %v", n, known, err)
	}
}

// A watch's calls (Watch: the look for a cancel beside a running tool)
// are one attempt each, spend none of the run's budget and add no
// warning: a long tool's polls leave the budget to the run's push, and a
// watch writes nothing of the Repo beside a commit holding the lock.
func TestWatchCallsSpendNoBudget(t *testing.T) {
	r, _, _, srv := faultyClone(t, 10*time.Second, time.Minute)
	ctx := Watch(context.Background())
	srv.setFault(firstN(1, fail500))
	if _, err := r.RemoteTip(ctx, "main"); err == nil {
		t.Fatal("a watch's failed call was retried")
	}
	tip, err := r.RemoteTip(ctx, "main")
	if err != nil || tip == "" {
		t.Fatalf("RemoteTip = %q, %v", tip, err)
	}
	if spent, w := r.netSpent.Load(), r.Warnings(); spent != 0 || len(w) != 0 {
		t.Fatalf("the watch spent %v of the budget and warned %q", time.Duration(spent), w)
	}
}
