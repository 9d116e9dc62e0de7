package cli

import (
	"fmt"

	"github.com/astra-gitops/astra/internal/heartbeat"
)

// heartbeatURL is the dead-man switch's ping URL: the value of the
// variable heartbeat.url_env names, "" for none. It is a credential: it is
// redacted like one and never recorded.
func (a *app) heartbeatURL() string {
	if name := a.v.GetString("heartbeat.url_env"); name != "" {
		return a.getenv(name)
	}
	return ""
}

// heartbeat is the pinger of run-due's ticks, nil when none is
// configured or its URL is unusable (said as a warning: a monitor's
// trouble never stops a tick).
func (a *app) heartbeat() *heartbeat.Pinger {
	raw := a.heartbeatURL()
	if raw == "" {
		return nil
	}
	p, err := heartbeat.New(raw, nil, a.v.GetDuration("heartbeat.timeout"))
	if err != nil {
		a.heartbeatWarning(fmt.Errorf("%w (in $%s); no pings sent", err, a.v.GetString("heartbeat.url_env")))
		return nil
	}
	return p
}

// heartbeatWarning says that a ping failed, as a warning.
func (a *app) heartbeatWarning(err error) {
	if err == nil {
		return
	}
	msg := a.redactor().String(err.Error())
	if a.inGitHubActions() && !a.json() { // an annotation would break --json on stdout
		fmt.Fprintf(a.stdout, "::warning title=astra heartbeat::%s\n", msg)
	}
	fmt.Fprintf(a.stderr, "astra: warning: %s; the run goes on\n", msg)
}
