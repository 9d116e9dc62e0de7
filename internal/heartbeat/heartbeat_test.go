package heartbeat

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// monitor is a Healthchecks-style check: it records the paths pinged.
type monitor struct {
	mu    sync.Mutex
	paths []string
}

func (m *monitor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.paths = append(m.paths, r.Method+" "+r.URL.RequestURI())
	m.mu.Unlock()
	if strings.Contains(r.URL.Path, "gone") {
		http.Error(w, "no such check", http.StatusNotFound)
	}
}

func TestPingsStartSuccessFail(t *testing.T) {
	m := &monitor{}
	srv := httptest.NewServer(m)
	defer srv.Close()
	p, err := New(srv.URL+"/ping/secret-uuid/?rid=1", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Finish(ctx, false); err != nil {
		t.Fatal(err)
	}
	cancel() // a tick a signal stopped is still reported
	if err := p.Finish(ctx, true); err != nil {
		t.Fatal(err)
	}
	want := []string{"GET /ping/secret-uuid/start?rid=1", "GET /ping/secret-uuid/?rid=1", "GET /ping/secret-uuid/fail?rid=1"}
	if strings.Join(m.paths, "\n") != strings.Join(want, "\n") {
		t.Fatalf("pinged\n%s\nwant\n%s", strings.Join(m.paths, "\n"), strings.Join(want, "\n"))
	}
}

// A failing ping says what failed, never the URL: it is a credential.
func TestErrorsDoNotQuoteTheURL(t *testing.T) {
	m := &monitor{}
	srv := httptest.NewServer(m)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer slow.Close()
	defer close(release)
	closed := httptest.NewServer(m)
	closed.Close()
	for _, c := range []struct {
		url, want string
		timeout   time.Duration
	}{
		{srv.URL + "/gone-secret-uuid", "heartbeat start ping: the monitor answered 404 Not Found", 0},
		{slow.URL + "/slow-secret-uuid", "heartbeat start ping: no answer within 50ms", 50 * time.Millisecond},
		{closed.URL + "/closed-secret-uuid", "heartbeat start ping: ", 0},
	} {
		p, err := New(c.url, nil, c.timeout)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Start(context.Background())
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "secret-uuid") {
			t.Errorf("%s: %v, want %q without the URL", c.url, err, c.want)
		}
	}
	for _, bad := range []string{"", "hc-ping.com/uuid", "ftp://x/y", "https:///nohost"} {
		if _, err := New(bad, nil, 0); err == nil || strings.Contains(err.Error(), "uuid") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
