package gitops

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
)

// The remote's time is the Date of its smart-HTTP answer, asked with the
// credentials a push uses: the real git http-backend's, and a server's
// whose clock is a year behind (its 401 counts: Date is its clock whatever
// it says about access).
func TestServerTime(t *testing.T) {
	dir, _, _ := httpClone(t)
	r := open(t, dir, func(o *Options) { o.Token = testToken })
	got, err := r.ServerTime(context.Background())
	if err != nil || time.Since(got).Abs() > time.Minute {
		t.Fatalf("git http-backend's time: %v %v", got, err)
	}

	past := time.Date(2025, 11, 22, 9, 0, 0, 0, time.UTC)
	var asked *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		asked = req
		w.Header().Set("Date", past.Format(http.TimeFormat))
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer srv.Close()
	gitCmd(t, dir, "remote", "set-url", "origin", srv.URL+"/o/r.git")
	r = open(t, dir, func(o *Options) { o.Token = testToken })
	if got, err := r.ServerTime(context.Background()); err != nil || !got.Equal(past) {
		t.Fatalf("skewed server: %v %v", got, err)
	}
	if user, pass, _ := asked.BasicAuth(); asked.URL.Path != "/o/r.git/info/refs" || asked.URL.RawQuery != "service=git-upload-pack" || user != "x-access-token" || pass != testToken {
		t.Fatalf("asked %s %s as %s", asked.URL.Path, asked.URL.RawQuery, user)
	}

	srv.Close()
	if _, err := r.ServerTime(context.Background()); !errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("a remote that does not answer: %v", err)
	}
}

// A remote reached by path says no time; a checkout notes a warning once.
func TestServerTimeOfAPath(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	r := open(t, dir)
	if _, err := r.ServerTime(context.Background()); !errors.Is(err, ErrNoServerTime) || r.IsHTTP() {
		t.Fatalf("file remote: %v", err)
	}
	if !r.NoteOnce("untimed x") || r.NoteOnce("untimed x") || !r.NoteOnce("untimed y") {
		t.Fatal("a note is new once")
	}
	if open(t, dir).NoteOnce("untimed x") {
		t.Fatal("the note did not outlive the run")
	}
}
