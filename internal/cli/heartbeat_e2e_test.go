package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/astra-gitops/astra/internal/gittest"
)

// TestHeartbeatPings runs `astra run-due` against a real HTTP monitor
// (Healthchecks.io's URL scheme): each tick pings <url>/start, then <url>
// when it exited 0 and <url>/fail when it did not, a configuration error
// included. Dry runs ping nothing. A monitor that is down is a warning,
// never the run's failure, and the URL, a credential, reaches neither the
// output nor the ledger.
func TestHeartbeatPings(t *testing.T) {
	var mu sync.Mutex
	var pings []string
	monitor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		pings = append(pings, r.URL.Path)
		mu.Unlock()
	}))
	defer monitor.Close()
	took := func() string {
		mu.Lock()
		defer mu.Unlock()
		s := strings.Join(pings, " ")
		pings = nil
		return s
	}

	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"schedules/s.yaml": `- {id: ok, name: ok, cron: "0 9 * * *", target_tool: ok}
- {id: bad, name: bad, cron: "0 10 * * *", target_tool: bad, retry: {max_attempts: 1}}
`,
		"policies/p.yaml": `tools:
  ok: {kind: exec, command: [sh, -c, "exit 0"], tier: 0}
  bad: {kind: exec, command: [sh, -c, "exit 1"], tier: 0}
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3}
`,
		".astra.yaml": "heartbeat:\n  url_env: HC_PING_URL\n",
	})
	gittest.Must(t, dir, "init", "-q")
	gittest.Must(t, dir, "add", ".")
	gittest.Must(t, dir, "commit", "-qm", "init")

	url := monitor.URL + "/hc/5f6e-secret-uuid"
	env := map[string]string{"HC_PING_URL": url}
	astra := func(args ...string) (string, int) {
		t.Helper()
		var out bytes.Buffer
		var environ []string
		for k, v := range env {
			environ = append(environ, k+"="+v)
		}
		code := Execute(context.Background(), append([]string{"--repo", dir, "--no-push", "--test-clock"}, args...), strings.NewReader(""), &out, &out, environ)
		return out.String(), code
	}

	astra("run-due", "--now", "2026-11-22T08:00:00Z")
	took()
	if out, code := astra("run-due", "--now", "2026-11-22T09:00:10Z"); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if got := took(); got != "/hc/5f6e-secret-uuid/start /hc/5f6e-secret-uuid" {
		t.Fatalf("a tick that succeeded pinged %q", got)
	}
	if out, code := astra("run-due", "--now", "2026-11-22T10:00:10Z"); code != 1 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if got := took(); got != "/hc/5f6e-secret-uuid/start /hc/5f6e-secret-uuid/fail" {
		t.Fatalf("a tick that failed pinged %q", got)
	}
	if _, code := astra("run-due", "--dry-run", "--now", "2026-11-22T11:00:10Z"); code != 0 || took() != "" {
		t.Fatal("a dry run pinged")
	}
	// A configuration that does not load: the tick failed.
	writeTree(t, dir, map[string]string{"schedules/broken.yaml": "- {id: [\n"})
	if _, code := astra("run-due", "--now", "2026-11-22T12:00:10Z"); code != 2 {
		t.Fatalf("exit %d for a broken configuration", code)
	}
	if got := took(); got != "/hc/5f6e-secret-uuid/start /hc/5f6e-secret-uuid/fail" {
		t.Fatalf("a tick that could not load its configuration pinged %q", got)
	}
	writeTree(t, dir, map[string]string{"schedules/broken.yaml": "[]\n"})

	// The monitor is down: the run goes on, and says so without the URL.
	monitor.Close()
	out, code := astra("run-due", "--now", "2026-11-23T09:00:10Z")
	if code != 0 || !strings.Contains(out, "warning: heartbeat start ping: ") || !strings.Contains(out, "warning: heartbeat success ping: ") {
		t.Fatalf("exit %d with the monitor down\n%s", code, out)
	}
	led, _ := astra("ledger", "cat")
	if strings.Contains(out, "secret-uuid") || strings.Contains(led, "secret-uuid") {
		t.Fatalf("the heartbeat URL leaked:\n%s\n%s", out, led)
	}
	// Not a URL: a warning, no pings.
	env["HC_PING_URL"] = "hc-ping.com/secret-uuid"
	if out, code := astra("run-due", "--now", "2026-11-23T09:30:00Z"); code != 0 || !strings.Contains(out, "the heartbeat URL is not an http(s) URL (in $HC_PING_URL); no pings sent") || strings.Contains(out, "secret-uuid") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}
